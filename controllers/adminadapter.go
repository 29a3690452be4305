package controllers

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/pkg/acl"
	rmqadmin "github.com/openrmq/rocketmq-operator/pkg/admin"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// RemotingAdmin adapts pkg/admin's client to the BrokerAdmin edge: the controllers keep
// their own small types, so the fake-based tests need no protocol package. It is the
// production admin (cmd/manager) and the one the loopback-broker specs use.
type RemotingAdmin struct{ C *rmqadmin.Client }

var (
	_ CredentialedAdmin = RemotingAdmin{}
	_ AccountProber     = RemotingAdmin{}
)

// WithCredentials returns a RemotingAdmin whose requests are signed with creds, over
// connections of its own (pkg/admin's Client.WithCredentials); the closer releases them.
func (a RemotingAdmin) WithCredentials(creds acl.Credentials) (BrokerAdmin, io.Closer) {
	c := a.C.WithCredentials(creds)
	return RemotingAdmin{C: c}, c
}

var _ TLSAdmin = RemotingAdmin{}

// WithTLS returns a RemotingAdmin whose connections are TLS ones with cfg, of its own
// (pkg/admin's Client.WithTLS); the closer releases them.
func (a RemotingAdmin) WithTLS(cfg *tls.Config) (BrokerAdmin, io.Closer) {
	c := a.C.WithTLS(cfg)
	return RemotingAdmin{C: c}, c
}

// UpdateBrokerConfig implements BrokerAdmin.
func (a RemotingAdmin) UpdateBrokerConfig(ctx context.Context, addr string, props map[string]string) error {
	return a.C.UpdateBrokerConfig(ctx, addr, props)
}

// CreateOrUpdateSubscriptionGroup implements BrokerAdmin.
func (a RemotingAdmin) CreateOrUpdateSubscriptionGroup(ctx context.Context, addr string, g SubscriptionGroup) error {
	cfg := protocol.NewSubscriptionGroupConfig(g.GroupName)
	cfg.ConsumeEnable = g.ConsumeEnable
	cfg.ConsumeFromMinEnable = g.ConsumeFromMinEnable
	cfg.ConsumeBroadcastEnable = g.ConsumeBroadcastEnable
	cfg.RetryQueueNums = int(g.RetryQueueNums)
	cfg.RetryMaxTimes = int(g.RetryMaxTimes)
	cfg.BrokerID = g.BrokerID
	cfg.WhichBrokerWhenConsumeSlowly = g.WhichBrokerWhenConsumeSlowly
	return a.C.CreateOrUpdateSubscriptionGroup(ctx, addr, cfg)
}

// DeleteSubscriptionGroup implements BrokerAdmin.
func (a RemotingAdmin) DeleteSubscriptionGroup(ctx context.Context, addr, group string) error {
	return a.C.DeleteSubscriptionGroup(ctx, addr, group)
}

// ResetOffset always forces: a reset by id is an explicit request to move, also forward.
func (a RemotingAdmin) ResetOffset(ctx context.Context, addr, topic, group string, ts int64) ([]QueueOffset, error) {
	resets, err := a.C.ResetOffset(ctx, addr, topic, group, ts, true)
	if err != nil {
		return nil, err
	}
	out := make([]QueueOffset, 0, len(resets))
	for _, r := range resets {
		out = append(out, QueueOffset{Topic: r.Queue.Topic, BrokerName: r.Queue.BrokerName,
			QueueID: r.Queue.QueueID, ConsumerOffset: r.After})
	}
	return out, nil
}

// CloneGroupOffset clones as for an online group (offline=false), like mqadmin's default.
func (a RemotingAdmin) CloneGroupOffset(ctx context.Context, addr, src, dst, topic string) error {
	return a.C.CloneGroupOffset(ctx, addr, src, dst, topic, false)
}

// ConsumeStats implements BrokerAdmin.
func (a RemotingAdmin) ConsumeStats(ctx context.Context, addr, group, topic string) ([]QueueOffset, error) {
	stats, err := a.C.ConsumeStats(ctx, addr, group, topic)
	if err != nil {
		return nil, err
	}
	out := make([]QueueOffset, 0, len(stats.OffsetTable))
	for mq, o := range stats.OffsetTable {
		out = append(out, QueueOffset{Topic: mq.Topic, BrokerName: mq.BrokerName,
			QueueID: mq.QueueID, BrokerOffset: o.BrokerOffset, ConsumerOffset: o.ConsumerOffset})
	}
	return out, nil
}

// SubscriptionGroups implements BrokerAdmin.
func (a RemotingAdmin) SubscriptionGroups(ctx context.Context, addr string) ([]string, error) {
	table, err := a.C.SubscriptionGroups(ctx, addr)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(table)), nil
}

// CommitLogMaxOffset implements BrokerAdmin.
func (a RemotingAdmin) CommitLogMaxOffset(ctx context.Context, addr string) (int64, error) {
	info, err := a.C.RuntimeInfo(ctx, addr)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(info["commitLogMaxOffset"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("commitLogMaxOffset of %s: %w", addr, err)
	}
	return v, nil
}

// RuntimeInfo implements BrokerAdmin.
func (a RemotingAdmin) RuntimeInfo(ctx context.Context, addr string) (map[string]string, error) {
	return a.C.RuntimeInfo(ctx, addr)
}

// RegisteredMembers implements BrokerAdmin.
func (a RemotingAdmin) RegisteredMembers(ctx context.Context, namesrvAddr, brokerName string) (map[int64]string, error) {
	info, err := a.C.ClusterInfo(ctx, namesrvAddr)
	if err != nil {
		return nil, err
	}
	if bd := info.BrokerAddrTable[brokerName]; bd != nil {
		return maps.Clone(bd.BrokerAddrs), nil
	}
	return map[int64]string{}, nil
}

// CreateOrUpdateTopic implements BrokerAdmin.
func (a RemotingAdmin) CreateOrUpdateTopic(ctx context.Context, addr string, t TopicConfig) error {
	return a.C.CreateOrUpdateTopic(ctx, addr, protocol.TopicConfig{TopicName: t.Name,
		ReadQueueNums: int(t.ReadQueueNums), WriteQueueNums: int(t.WriteQueueNums), Perm: int(t.Perm),
		TopicFilterType: protocol.TopicFilterTypeSingleTag, Order: t.Order})
}

// DeleteTopic implements BrokerAdmin.
func (a RemotingAdmin) DeleteTopic(ctx context.Context, addr, topic string) error {
	return a.C.DeleteTopicInBroker(ctx, addr, topic)
}

// TopicConfigs implements BrokerAdmin.
func (a RemotingAdmin) TopicConfigs(ctx context.Context, addr string) (map[string]TopicConfig, error) {
	w, err := a.C.TopicConfigs(ctx, addr)
	if err != nil {
		return nil, err
	}
	out := make(map[string]TopicConfig, len(w.TopicConfigTable))
	for name, tc := range w.TopicConfigTable {
		if tc != nil {
			out[name] = TopicConfig{Name: name, ReadQueueNums: int32(tc.ReadQueueNums),
				WriteQueueNums: int32(tc.WriteQueueNums), Perm: int32(tc.Perm), Order: tc.Order}
		}
	}
	return out, nil
}

// TopicStats implements BrokerAdmin.
func (a RemotingAdmin) TopicStats(ctx context.Context, addr, topic string) ([]QueueOffset, error) {
	table, err := a.C.TopicStats(ctx, addr, topic)
	if err != nil {
		return nil, err
	}
	out := make([]QueueOffset, 0, len(table))
	for mq, o := range table {
		out = append(out, QueueOffset{Topic: mq.Topic, BrokerName: mq.BrokerName, QueueID: mq.QueueID, BrokerOffset: o.MaxOffset})
	}
	return out, nil
}

// TopicRoute implements BrokerAdmin; the name server's "no route" is an empty answer.
func (a RemotingAdmin) TopicRoute(ctx context.Context, namesrvAddr, topic string) (map[string]v1alpha1.TopicQueues, error) {
	rd, err := a.C.TopicRoute(ctx, namesrvAddr, topic)
	if errors.Is(err, rmqadmin.ErrNoRoute) {
		return map[string]v1alpha1.TopicQueues{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]v1alpha1.TopicQueues, len(rd.QueueDatas))
	for _, q := range rd.QueueDatas {
		if q != nil {
			out[q.BrokerName] = v1alpha1.TopicQueues{ReadQueueNums: int32(q.ReadQueueNums),
				WriteQueueNums: int32(q.WriteQueueNums), Perm: int32(q.Perm)}
		}
	}
	return out, nil
}

// DeleteTopicRoute implements BrokerAdmin.
func (a RemotingAdmin) DeleteTopicRoute(ctx context.Context, namesrvAddr, topic, cluster string) error {
	return a.C.DeleteTopicInNameServer(ctx, namesrvAddr, topic, cluster)
}

// KV implements BrokerAdmin.
func (a RemotingAdmin) KV(ctx context.Context, namesrvAddr, namespace, key string) (string, bool, error) {
	return a.C.KVConfig(ctx, namesrvAddr, namespace, key)
}

// PutKV implements BrokerAdmin.
func (a RemotingAdmin) PutKV(ctx context.Context, namesrvAddr, namespace, key, value string) error {
	return a.C.PutKVConfig(ctx, namesrvAddr, namespace, key, value)
}

// DeleteKV implements BrokerAdmin.
func (a RemotingAdmin) DeleteKV(ctx context.Context, namesrvAddr, namespace, key string) error {
	return a.C.DeleteKVConfig(ctx, namesrvAddr, namespace, key)
}

// WipeWritePerm implements BrokerAdmin.
func (a RemotingAdmin) WipeWritePerm(ctx context.Context, namesrvAddr, brokerName string) (int, error) {
	return a.C.WipeWritePerm(ctx, namesrvAddr, brokerName)
}

// AddWritePerm implements BrokerAdmin.
func (a RemotingAdmin) AddWritePerm(ctx context.Context, namesrvAddr, brokerName string) (int, error) {
	return a.C.AddWritePerm(ctx, namesrvAddr, brokerName)
}

// ProbeAccount implements AccountProber with GET_BROKER_RUNTIME_INFO signed as creds,
// over a connection of its own that it closes.
func (a RemotingAdmin) ProbeAccount(ctx context.Context, addr string, creds acl.Credentials) error {
	c := a.C.WithCredentials(creds)
	defer c.Close()
	_, err := c.RuntimeInfo(ctx, addr)
	return err
}
