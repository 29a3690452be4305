package controllers

import (
	"context"
	"crypto/tls"
	"io"

	"github.com/openrmq/rocketmq-operator/pkg/acl"
	rmqadmin "github.com/openrmq/rocketmq-operator/pkg/admin"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// RemotingAdmin adapts pkg/admin's client to the BrokerAdmin edge: the controllers keep
// their own small types, so the fake-based tests need no protocol package. It is the
// production admin (cmd/manager) and the one the loopback-broker specs use.
type RemotingAdmin struct{ C *rmqadmin.Client }

var _ CredentialedAdmin = RemotingAdmin{}

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
