package main

import (
	"context"

	"github.com/openrmq/rocketmq-operator/controllers"
	"github.com/openrmq/rocketmq-operator/pkg/admin"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// brokerAdmin adapts pkg/admin's client to the controllers' BrokerAdmin edge: the
// controllers keep their own small types so their tests need no protocol package.
type brokerAdmin struct{ c *admin.Client }

var _ controllers.BrokerAdmin = brokerAdmin{}

func newAdmin(rc *remoting.Client) controllers.BrokerAdmin {
	return brokerAdmin{c: admin.New(rc)}
}

func (a brokerAdmin) UpdateBrokerConfig(ctx context.Context, addr string, props map[string]string) error {
	return a.c.UpdateBrokerConfig(ctx, addr, props)
}

func (a brokerAdmin) CreateOrUpdateSubscriptionGroup(ctx context.Context, addr string, g controllers.SubscriptionGroup) error {
	cfg := protocol.NewSubscriptionGroupConfig(g.GroupName)
	cfg.ConsumeEnable = g.ConsumeEnable
	cfg.ConsumeFromMinEnable = g.ConsumeFromMinEnable
	cfg.ConsumeBroadcastEnable = g.ConsumeBroadcastEnable
	cfg.RetryQueueNums = int(g.RetryQueueNums)
	cfg.RetryMaxTimes = int(g.RetryMaxTimes)
	cfg.BrokerID = g.BrokerID
	cfg.WhichBrokerWhenConsumeSlowly = g.WhichBrokerWhenConsumeSlowly
	return a.c.CreateOrUpdateSubscriptionGroup(ctx, addr, cfg)
}

func (a brokerAdmin) DeleteSubscriptionGroup(ctx context.Context, addr, group string) error {
	return a.c.DeleteSubscriptionGroup(ctx, addr, group)
}

// ResetOffset always forces: a reset by id is an explicit request to move, also forward.
func (a brokerAdmin) ResetOffset(ctx context.Context, addr, topic, group string, ts int64) ([]controllers.QueueOffset, error) {
	resets, err := a.c.ResetOffset(ctx, addr, topic, group, ts, true)
	if err != nil {
		return nil, err
	}
	out := make([]controllers.QueueOffset, 0, len(resets))
	for _, r := range resets {
		out = append(out, controllers.QueueOffset{Topic: r.Queue.Topic, BrokerName: r.Queue.BrokerName,
			QueueID: r.Queue.QueueID, ConsumerOffset: r.After})
	}
	return out, nil
}

// CloneGroupOffset clones as for an online group (offline=false), like mqadmin's default.
func (a brokerAdmin) CloneGroupOffset(ctx context.Context, addr, src, dst, topic string) error {
	return a.c.CloneGroupOffset(ctx, addr, src, dst, topic, false)
}

func (a brokerAdmin) ConsumeStats(ctx context.Context, addr, group, topic string) ([]controllers.QueueOffset, error) {
	stats, err := a.c.ConsumeStats(ctx, addr, group, topic)
	if err != nil {
		return nil, err
	}
	out := make([]controllers.QueueOffset, 0, len(stats.OffsetTable))
	for mq, o := range stats.OffsetTable {
		out = append(out, controllers.QueueOffset{Topic: mq.Topic, BrokerName: mq.BrokerName,
			QueueID: mq.QueueID, BrokerOffset: o.BrokerOffset, ConsumerOffset: o.ConsumerOffset})
	}
	return out, nil
}
