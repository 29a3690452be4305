package controllers

import (
	"context"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/pkg/acl"
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

	// SubscriptionGroups sends GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201): the names of the
	// consumer groups the broker knows, its own system groups included.
	SubscriptionGroups(ctx context.Context, addr string) ([]string, error)

	// CommitLogMaxOffset reads commitLogMaxOffset from GET_BROKER_RUNTIME_INFO (28): where
	// the broker's commitlog ends.
	CommitLogMaxOffset(ctx context.Context, addr string) (int64, error)

	// RuntimeInfo is GET_BROKER_RUNTIME_INFO's table (28): for failovers, brokerRole,
	// masterEpoch and lastEpochCut (broker/epoch.go).
	RuntimeInfo(ctx context.Context, addr string) (map[string]string, error)

	// RegisteredMembers sends GET_BROKER_CLUSTER_INFO (106) to a name server: the
	// brokerIds of brokerName it holds a registration of, with their addresses.
	RegisteredMembers(ctx context.Context, namesrvAddr, brokerName string) (map[int64]string, error)

	// CreateOrUpdateTopic sends UPDATE_AND_CREATE_TOPIC (17). The broker registers the new
	// version of its topic table with its name servers, also when nothing changed.
	CreateOrUpdateTopic(ctx context.Context, addr string, t TopicConfig) error

	// DeleteTopic sends DELETE_TOPIC_IN_BROKER (215); a topic the broker does not have is
	// not an error.
	DeleteTopic(ctx context.Context, addr, topic string) error

	// TopicConfigs sends GET_ALL_TOPIC_CONFIG (21): the broker's topic table by name.
	TopicConfigs(ctx context.Context, addr string) (map[string]TopicConfig, error)

	// TopicStats sends GET_TOPIC_STATS_INFO (202): each write queue's max offset as
	// BrokerOffset. A topic the broker does not have is an error.
	TopicStats(ctx context.Context, addr, topic string) ([]QueueOffset, error)

	// TopicRoute sends GET_ROUTEINFO_BY_TOPIC (105) to a name server: each broker group's
	// share of the route by brokerName, empty when the name server routes none.
	TopicRoute(ctx context.Context, namesrvAddr, topic string) (map[string]v1alpha1.TopicQueues, error)

	// DeleteTopicRoute sends DELETE_TOPIC_IN_NAMESRV (216) to a name server, for the
	// brokers of cluster (a 4.x Java name server drops the whole route).
	DeleteTopicRoute(ctx context.Context, namesrvAddr, topic, cluster string) error

	// KV reads a key of a name server's KV store (GET_KV_CONFIG 101); found is false when
	// it has none.
	KV(ctx context.Context, namesrvAddr, namespace, key string) (value string, found bool, err error)

	// PutKV sends PUT_KV_CONFIG (100) to a name server.
	PutKV(ctx context.Context, namesrvAddr, namespace, key, value string) error

	// DeleteKV sends DELETE_KV_CONFIG (102) to a name server.
	DeleteKV(ctx context.Context, namesrvAddr, namespace, key string) error

	// WipeWritePerm sends WIPE_WRITE_PERM_OF_BROKER (205) to a name server: brokerName's
	// topics become read-only in its routes. It returns the topics changed.
	WipeWritePerm(ctx context.Context, namesrvAddr, brokerName string) (int, error)

	// AddWritePerm sends ADD_WRITE_PERM_OF_BROKER (327) to a name server: brokerName's
	// topics become read-write again. It returns the topics changed.
	AddWritePerm(ctx context.Context, namesrvAddr, brokerName string) (int, error)
}

// AccountProber tells whether a broker accepts a request signed as an account: its
// loaded plain_acl.yml has the account with that secret key. The error of a refusal
// carries the broker's remark.
type AccountProber interface {
	ProbeAccount(ctx context.Context, addr string, creds acl.Credentials) error
}

// NamespaceOrderTopicConfig is the name servers' KV namespace of ordered topics' queues.
const NamespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// TopicConfig is a topic's config on one broker (RocketMQ's TopicConfig; the filter type
// is always SINGLE_TAG and the system flag 0, as mqadmin updateTopic sends them).
type TopicConfig struct {
	Name           string
	ReadQueueNums  int32
	WriteQueueNums int32
	Perm           int32
	Order          bool
}

// MemberResolver finds every broker pod of a Broker, masters and slaves, by address.
type MemberResolver interface {
	Members(ctx context.Context, broker *v1alpha1.Broker) ([]string, error)
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

// Members implements MemberResolver: every member's stable DNS address in
// Broker.status.groups, masters first.
func (StatusResolver) Members(_ context.Context, b *v1alpha1.Broker) ([]string, error) {
	var out []string
	for _, g := range b.Status.Groups {
		if g.Master != nil {
			out = append(out, g.Master.Address)
		}
	}
	for _, g := range b.Status.Groups {
		for _, s := range g.Slaves {
			out = append(out, s.Address)
		}
	}
	return out, nil
}
