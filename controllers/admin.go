package controllers

import (
	"context"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// The admin edge. The controllers only talk to brokers through these interfaces; the
// remoting implementation lives in pkg/admin, and the envtest suites use recording fakes.
// Every addr is "host:port" of one broker's remoting port.

// Reset targets passed to BrokerAdmin.ResetOffset as the timestamp (milliseconds). They are
// the Java broker's own conventions in Broker2Client.resetOffset: -1 means each queue's
// max offset; 0 searches by time from the epoch and so lands on each queue's min offset.
const (
	ResetTimestampEarliest int64 = 0
	ResetTimestampLatest   int64 = -1
)

// BrokerAdmin calls admin requests on one broker.
type BrokerAdmin interface {
	// UpdateBrokerConfig sends UPDATE_BROKER_CONFIG (25); props become the Java properties
	// text body ("key=value\n" lines). Used to push namesrvAddr to a running broker.
	UpdateBrokerConfig(ctx context.Context, addr string, props map[string]string) error

	// CreateOrUpdateSubscriptionGroup sends UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200).
	CreateOrUpdateSubscriptionGroup(ctx context.Context, addr string, cfg SubscriptionGroup) error

	// DeleteSubscriptionGroup sends DELETE_SUBSCRIPTIONGROUP (207). A group the broker does
	// not know is not an error.
	DeleteSubscriptionGroup(ctx context.Context, addr, group string) error

	// ResetOffset sends INVOKE_BROKER_TO_RESET_OFFSET (222) with isForce=true for one topic
	// and returns the new consumer offset of each of that broker's queues. It must also
	// work for a group with no online consumer: the Java broker then answers
	// CONSUMER_NOT_ONLINE (206), and the implementation falls back, as mqadmin does, to
	// searching each queue's offset (SEARCH_OFFSET_BY_TIMESTAMP 29, or GET_MAX_OFFSET 30 for
	// -1) and writing it with UPDATE_CONSUMER_OFFSET (15).
	ResetOffset(ctx context.Context, addr, topic, group string, timestampMillis int64) ([]QueueOffset, error)

	// CloneGroupOffset sends CLONE_GROUP_OFFSET (314); topic "" clones every topic srcGroup
	// has offsets for.
	CloneGroupOffset(ctx context.Context, addr, srcGroup, destGroup, topic string) error

	// ConsumeStats sends GET_CONSUME_STATS (208); topic "" returns every topic the group has
	// offsets for on that broker.
	ConsumeStats(ctx context.Context, addr, group, topic string) ([]QueueOffset, error)
}

// BrokerResolver finds the masters of a Broker's cluster: brokerName -> master address.
type BrokerResolver interface {
	Masters(ctx context.Context, broker *v1alpha1.Broker) (map[string]string, error)
}

// ResolverFunc adapts a function to BrokerResolver, e.g. to point tests at loopback brokers.
type ResolverFunc func(ctx context.Context, broker *v1alpha1.Broker) (map[string]string, error)

// Masters implements BrokerResolver.
func (f ResolverFunc) Masters(ctx context.Context, b *v1alpha1.Broker) (map[string]string, error) {
	return f(ctx, b)
}

// SubscriptionGroup is the body of UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (RocketMQ's
// SubscriptionGroupConfig; fields not listed keep the broker's defaults).
type SubscriptionGroup struct {
	GroupName              string
	ConsumeEnable          bool
	ConsumeFromMinEnable   bool
	ConsumeBroadcastEnable bool
	RetryQueueNums         int32
	RetryMaxTimes          int32
	// BrokerID clients should read from (0 = master).
	BrokerID int64
	// WhichBrokerWhenConsumeSlowly is the slave to read from when the consumer lags.
	WhichBrokerWhenConsumeSlowly int64
}

// QueueOffset is one message queue's offsets on a broker.
type QueueOffset struct {
	Topic      string
	BrokerName string
	QueueID    int32
	// BrokerOffset is the queue's max offset (0 when unknown, e.g. after a reset).
	BrokerOffset int64
	// ConsumerOffset is the group's committed offset.
	ConsumerOffset int64
}

// StatusResolver reads the masters from Broker.status.groups: the stable DNS address of
// each group's ordinal-0 pod. It is the production resolver; it needs no network call.
type StatusResolver struct{}

// Masters implements BrokerResolver.
func (StatusResolver) Masters(_ context.Context, b *v1alpha1.Broker) (map[string]string, error) {
	out := map[string]string{}
	for _, g := range b.Status.Groups {
		if g.Master != nil {
			out[g.BrokerName] = g.Master.Address
		}
	}
	return out, nil
}
