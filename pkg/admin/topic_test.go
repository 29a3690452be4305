package admin_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	brokerconfig "github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/internal/testcluster"
	"github.com/openrmq/rocketmq-operator/pkg/admin"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// waitFor polls cond until it holds, failing the test with what it last said after a
// deadline generous enough for a loaded machine. Brokers register with their name server
// asynchronously, so a route follows a topic change a moment later.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s", what, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// routeOf returns the queue data a name server publishes for brokerName, or nil.
func routeOf(rd *protocol.TopicRouteData, brokerName string) *protocol.QueueData {
	if rd == nil {
		return nil
	}
	for _, q := range rd.QueueDatas {
		if q.BrokerName == brokerName {
			return q
		}
	}
	return nil
}

// TestTopicLifecycle runs every topic call of the operator against our broker and name
// server on loopback: create, read back, stats, route, the ordered-topic KV, a route
// deleted from the name server and published again by re-creating the topic, growth, and
// deletion from the broker and the name server.
func TestTopicLifecycle(t *testing.T) {
	c := testcluster.Start(t, func(bc *brokerconfig.Config) {
		bc.BrokerClusterName = "topics"
		bc.AutoCreateTopicEnable = false
	})
	rc := remoting.NewClient(remoting.ClientConfig{})
	t.Cleanup(func() { rc.Close() })
	a := admin.New(rc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const topic = "AdminOrders"
	want := protocol.TopicConfig{TopicName: topic, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6,
		TopicFilterType: protocol.TopicFilterTypeSingleTag, Order: true}
	if err := a.CreateOrUpdateTopic(ctx, c.BrokerAddr, want); err != nil {
		t.Fatalf("CreateOrUpdateTopic: %v", err)
	}
	table, err := a.TopicConfigs(ctx, c.BrokerAddr)
	if err != nil {
		t.Fatalf("TopicConfigs: %v", err)
	}
	if got := table.TopicConfigTable[topic]; got == nil || *got != want {
		t.Fatalf("topic as the broker stored it: %+v, want %+v", got, want)
	}
	stats, err := a.TopicStats(ctx, c.BrokerAddr, topic)
	if err != nil || len(stats) != 4 {
		t.Fatalf("TopicStats: %v %v, want 4 queues", stats, err)
	}
	for mq, o := range stats {
		if mq.Topic != topic || mq.BrokerName != c.BrokerName || o.MaxOffset != 0 {
			t.Errorf("stats %s: %+v", mq, o)
		}
	}

	routed := func(read, write int) func() (bool, string) {
		return func() (bool, string) {
			rd, err := a.TopicRoute(ctx, c.NamesrvAddr, topic)
			if err != nil {
				return false, err.Error()
			}
			q := routeOf(rd, c.BrokerName)
			if q == nil || q.ReadQueueNums != read || q.WriteQueueNums != write || q.Perm != 6 {
				return false, string(protocol.MustEncode(rd))
			}
			return true, ""
		}
	}
	waitFor(t, "route after create", routed(4, 4))

	// The ordered topic's queues, as mqadmin updateTopic -o keeps them.
	const orderConf = "broker-a:4"
	if err := a.PutKVConfig(ctx, c.NamesrvAddr, protocol.NamespaceOrderTopicConfig, topic, orderConf); err != nil {
		t.Fatalf("PutKVConfig: %v", err)
	}
	if v, found, err := a.KVConfig(ctx, c.NamesrvAddr, protocol.NamespaceOrderTopicConfig, topic); err != nil || !found || v != orderConf {
		t.Fatalf("KVConfig = %q %v %v, want %q", v, found, err, orderConf)
	}
	if err := a.DeleteKVConfig(ctx, c.NamesrvAddr, protocol.NamespaceOrderTopicConfig, topic); err != nil {
		t.Fatalf("DeleteKVConfig: %v", err)
	}
	if v, found, err := a.KVConfig(ctx, c.NamesrvAddr, protocol.NamespaceOrderTopicConfig, topic); err != nil || found {
		t.Fatalf("KVConfig after delete = %q %v %v, want not found", v, found, err)
	}

	// A route deleted behind the broker's back stays gone until the topic is written
	// again: re-creating it unchanged publishes it.
	if err := a.DeleteTopicInNameServer(ctx, c.NamesrvAddr, topic, c.ClusterName); err != nil {
		t.Fatalf("DeleteTopicInNameServer: %v", err)
	}
	if _, err := a.TopicRoute(ctx, c.NamesrvAddr, topic); !errors.Is(err, admin.ErrNoRoute) {
		t.Fatalf("route after DeleteTopicInNameServer: %v, want ErrNoRoute", err)
	}
	if err := a.CreateOrUpdateTopic(ctx, c.BrokerAddr, want); err != nil {
		t.Fatalf("CreateOrUpdateTopic again: %v", err)
	}
	waitFor(t, "route after re-creating the unchanged topic", routed(4, 4))

	grown := want
	grown.ReadQueueNums, grown.WriteQueueNums = 8, 8
	if err := a.CreateOrUpdateTopic(ctx, c.BrokerAddr, grown); err != nil {
		t.Fatalf("grow: %v", err)
	}
	waitFor(t, "route after growing", routed(8, 8))
	if stats, err := a.TopicStats(ctx, c.BrokerAddr, topic); err != nil || len(stats) != 8 {
		t.Fatalf("TopicStats after growing: %d queues, %v", len(stats), err)
	}

	if err := a.DeleteTopicInBroker(ctx, c.BrokerAddr, topic); err != nil {
		t.Fatalf("DeleteTopicInBroker: %v", err)
	}
	if table, err := a.TopicConfigs(ctx, c.BrokerAddr); err != nil || table.TopicConfigTable[topic] != nil {
		t.Fatalf("topic table after delete: %v %v", table.TopicConfigTable[topic], err)
	}
	var refused *admin.Error
	if _, err := a.TopicStats(ctx, c.BrokerAddr, topic); !errors.As(err, &refused) || refused.Code != remoting.TopicNotExist {
		t.Fatalf("TopicStats after delete: %v, want TOPIC_NOT_EXIST", err)
	}
	if err := a.DeleteTopicInNameServer(ctx, c.NamesrvAddr, topic, ""); err != nil {
		t.Fatalf("DeleteTopicInNameServer: %v", err)
	}
	if _, err := a.TopicRoute(ctx, c.NamesrvAddr, topic); !errors.Is(err, admin.ErrNoRoute) {
		t.Fatalf("route after deleting everywhere: %v, want ErrNoRoute", err)
	}
	// Deleting again is no error on either side.
	if err := a.DeleteTopicInBroker(ctx, c.BrokerAddr, topic); err != nil {
		t.Errorf("DeleteTopicInBroker of a missing topic: %v", err)
	}

	// The broker refuses system topics, with Java's remark.
	err = a.CreateOrUpdateTopic(ctx, c.BrokerAddr, protocol.TopicConfig{TopicName: "SCHEDULE_TOPIC_XXXX", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6})
	if !errors.As(err, &refused) || !strings.Contains(refused.Remark, "conflict with system topic") {
		t.Errorf("creating a system topic: %v", err)
	}

	info, err := a.RuntimeInfo(ctx, c.BrokerAddr)
	if err != nil || info["brokerVersionDesc"] == "" {
		t.Errorf("RuntimeInfo: %v %v", info, err)
	}
}
