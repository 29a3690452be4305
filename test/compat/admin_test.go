//go:build compat

package compat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	rmqadmin "github.com/openrmq/rocketmq-operator/pkg/admin"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// TestOurAdminClientAgainstJavaBroker runs every call of pkg/admin (what the operator
// sends) against the Java broker, the reference for the protocol: subscription groups,
// consume stats, offline offset resets by time, offset cloning and live configuration.
func TestOurAdminClientAgainstJavaBroker(t *testing.T) {
	f := env(t)
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	adm := rmqadmin.New(rc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	masters, err := adm.MasterAddrs(ctx, f.ns.Addr, f.broker.Cluster)
	if err != nil || masters[f.broker.Name] != f.broker.Addr {
		t.Fatalf("MasterAddrs(%s) = %v, %v; want %s -> %s", f.broker.Cluster, masters, err, f.broker.Name, f.broker.Addr)
	}

	group := uniq("compat_admin_group")
	cfg := protocol.NewSubscriptionGroupConfig(group)
	cfg.RetryMaxTimes = 3
	cfg.ConsumeBroadcastEnable = false
	if err := adm.CreateOrUpdateSubscriptionGroup(ctx, f.broker.Addr, cfg); err != nil {
		t.Fatalf("CreateOrUpdateSubscriptionGroup: %v", err)
	}
	groups, err := adm.SubscriptionGroups(ctx, f.broker.Addr)
	if err != nil {
		t.Fatalf("SubscriptionGroups: %v", err)
	}
	if got := groups[group]; got.RetryMaxTimes != 3 || got.ConsumeBroadcastEnable || !got.ConsumeEnable {
		t.Errorf("group as the Java broker stored it: %+v", got)
	}

	// Messages in four queues; the group has consumed two of each.
	topic := uniq("compat_admin_topic")
	const queues, perQueue = 4, 5
	createTopic(t, f, newAdmin(t, f), topic, queues)
	beforeSend := time.Now().UnixMilli()
	sendToEveryQueue(t, f, topic, queues, perQueue)
	// The Java broker answers SEND_OK once the commitlog holds a message and builds the
	// consume queues after it (ReputMessageService): wait until every queue counts its five.
	err = eventually(30*time.Second, 50*time.Millisecond, func() error {
		offsets, err := adm.TopicStats(ctx, f.broker.Addr, topic)
		if err != nil {
			return err
		}
		if len(offsets) != queues {
			return fmt.Errorf("stats for %d queues, want %d", len(offsets), queues)
		}
		for mq, o := range offsets {
			if o.MaxOffset != perQueue {
				return fmt.Errorf("%s has max offset %d, want %d", mq, o.MaxOffset, perQueue)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the Java broker's consume queues: %v", err)
	}
	for q := range int32(queues) {
		if err := adm.CommitOffset(ctx, f.broker.Addr, group, protocol.MessageQueue{Topic: topic, BrokerName: f.broker.Name, QueueID: q}, 2); err != nil {
			t.Fatalf("CommitOffset queue %d: %v", q, err)
		}
	}
	stats, err := adm.ConsumeStats(ctx, f.broker.Addr, group, topic)
	if err != nil {
		t.Fatalf("ConsumeStats: %v", err)
	}
	if len(stats.OffsetTable) != queues {
		t.Fatalf("ConsumeStats has %d queues, want %d: %+v", len(stats.OffsetTable), queues, stats)
	}
	for mq, w := range stats.OffsetTable {
		if w.BrokerOffset != perQueue || w.ConsumerOffset != 2 {
			t.Errorf("%s: %+v, want broker offset %d, consumer offset 2", mq, w, perQueue)
		}
	}

	// The group is offline: the Java broker refuses INVOKE_BROKER_TO_RESET_OFFSET and the
	// client commits the offsets itself.
	checkReset := func(name string, ts int64, want int64) {
		t.Helper()
		resets, err := adm.ResetOffset(ctx, f.broker.Addr, topic, group, ts, true)
		if err != nil {
			t.Fatalf("ResetOffset(%s): %v", name, err)
		}
		if len(resets) != queues {
			t.Fatalf("ResetOffset(%s) reset %d queues, want %d: %+v", name, len(resets), queues, resets)
		}
		stats, err := adm.ConsumeStats(ctx, f.broker.Addr, group, topic)
		if err != nil {
			t.Fatalf("ConsumeStats: %v", err)
		}
		for _, r := range resets {
			if r.After != want || stats.OffsetTable[r.Queue].ConsumerOffset != want {
				t.Errorf("ResetOffset(%s) %s: reported %d -> %d, broker now has %d; want %d",
					name, r.Queue, r.Before, r.After, stats.OffsetTable[r.Queue].ConsumerOffset, want)
			}
		}
	}
	checkReset("latest", rmqadmin.Latest, perQueue)
	checkReset("earliest", rmqadmin.Earliest, 0)
	checkReset("a time before the first send", beforeSend-60_000, 0)
	// The reference answers a time after the newest message with that message's offset
	// (its binary search stops at the last entry), not with the queue's max offset.
	checkReset("a time after the last send", time.Now().Add(time.Minute).UnixMilli(), perQueue-1)

	clone := uniq("compat_admin_clone")
	if err := adm.CloneGroupOffset(ctx, f.broker.Addr, group, clone, topic, true); err != nil {
		t.Fatalf("CloneGroupOffset: %v", err)
	}
	cloned, err := adm.ConsumeStats(ctx, f.broker.Addr, clone, topic)
	if err != nil {
		t.Fatalf("ConsumeStats(clone): %v", err)
	}
	if len(cloned.OffsetTable) != queues {
		t.Fatalf("clone has offsets for %d queues, want %d", len(cloned.OffsetTable), queues)
	}
	for mq, w := range cloned.OffsetTable {
		if w.ConsumerOffset != perQueue-1 {
			t.Errorf("cloned %s: consumer offset %d, want %d", mq, w.ConsumerOffset, perQueue-1)
		}
	}

	if err := adm.DeleteSubscriptionGroup(ctx, f.broker.Addr, group); err != nil {
		t.Fatalf("DeleteSubscriptionGroup: %v", err)
	}
	if groups, err := adm.SubscriptionGroups(ctx, f.broker.Addr); err != nil || groups[group].GroupName != "" {
		t.Errorf("after delete, groups[%s] = %+v (err %v)", group, groups[group], err)
	}

	// A harmless key changed live, as the operator changes namesrvAddr.
	if err := adm.UpdateBrokerConfig(ctx, f.broker.Addr, map[string]string{"defaultQueryMaxNum": "77"}); err != nil {
		t.Fatalf("UpdateBrokerConfig: %v", err)
	}
	conf, err := adm.BrokerConfig(ctx, f.broker.Addr)
	if err != nil || conf["defaultQueryMaxNum"] != "77" {
		t.Errorf("BrokerConfig defaultQueryMaxNum = %q (err %v), want 77", conf["defaultQueryMaxNum"], err)
	}
}

// sendToEveryQueue sends perQueue messages to each queue of topic on the Java broker.
func sendToEveryQueue(t *testing.T, f *fixture, topic string, queues, perQueue int) {
	t.Helper()
	p := startQueueProducer(t, f.ns.Addr, uniq("compat_admin_producer"))
	for q := range queues {
		for i := range perQueue {
			msg := primitive.NewMessage(topic, fmt.Appendf(nil, "q%d-%d", q, i))
			msg.Queue = &primitive.MessageQueue{Topic: topic, BrokerName: f.broker.Name, QueueId: q}
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			res, err := p.SendSync(sctx, msg)
			cancel()
			if err != nil || res.Status != primitive.SendOK || res.MessageQueue.QueueId != q {
				t.Fatalf("send to queue %d: %v %v", q, res, err)
			}
		}
	}
}

// startQueueProducer starts a Go producer that sends to the queue each message names
// (msg.Queue); it is shut down when the test ends.
func startQueueProducer(t *testing.T, nsAddr, group string) rocketmq.Producer {
	t.Helper()
	p, err := producer.NewDefaultProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{nsAddr})),
		producer.WithGroupName(group),
		producer.WithInstanceName(group),
		producer.WithQueueSelector(producer.NewManualQueueSelector()),
	)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("producer.Start: %v", err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// TestOurTopicAdminAgainstJavaBroker runs the topic calls of pkg/admin (what the Topic
// controller sends) against the Java broker and the name server under test: create and
// read back, stats, the route, a route deleted from the name server and published again
// by re-creating the unchanged topic (the Java broker bumps its topic table's version on
// every UPDATE_AND_CREATE_TOPIC, as ours now does), growth, the ordered-topic KV, deletion,
// and the runtime info the User controller probes accounts with.
func TestOurTopicAdminAgainstJavaBroker(t *testing.T) {
	f := env(t)
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	adm := rmqadmin.New(rc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	topic := uniq("compat_topic_admin")
	want := protocol.TopicConfig{TopicName: topic, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6,
		TopicFilterType: protocol.TopicFilterTypeSingleTag, Order: true}
	if err := adm.CreateOrUpdateTopic(ctx, f.broker.Addr, want); err != nil {
		t.Fatalf("CreateOrUpdateTopic: %v", err)
	}
	table, err := adm.TopicConfigs(ctx, f.broker.Addr)
	if err != nil {
		t.Fatalf("TopicConfigs: %v", err)
	}
	// The Java broker does not take order from the create call: its topic config gets the
	// flag from the name servers' ORDER_TOPIC_CONFIG when it registers. The Topic
	// controller therefore leaves order out of drift repair and keeps that KV instead.
	stored := want
	stored.Order = false
	if got := table.TopicConfigTable[topic]; got == nil || *got != stored {
		t.Fatalf("topic as the Java broker stored it: %+v, want %+v", got, stored)
	}
	if stats, err := adm.TopicStats(ctx, f.broker.Addr, topic); err != nil || len(stats) != 4 {
		t.Fatalf("TopicStats: %v %v, want 4 queues", stats, err)
	}
	routed := func(queues int) error {
		return eventually(routeTimeout, 250*time.Millisecond, func() error {
			rd, err := adm.TopicRoute(ctx, f.ns.Addr, topic)
			if err != nil {
				return err
			}
			for _, q := range rd.QueueDatas {
				if q.BrokerName == f.broker.Name && q.ReadQueueNums == queues && q.WriteQueueNums == queues {
					return nil
				}
			}
			return fmt.Errorf("route %s", protocol.MustEncode(rd))
		})
	}
	if err := routed(4); err != nil {
		t.Fatalf("route after create: %v", err)
	}

	if err := adm.DeleteTopicInNameServer(ctx, f.ns.Addr, topic, f.broker.Cluster); err != nil {
		t.Fatalf("DeleteTopicInNameServer: %v", err)
	}
	if _, err := adm.TopicRoute(ctx, f.ns.Addr, topic); !errors.Is(err, rmqadmin.ErrNoRoute) {
		t.Fatalf("route after DeleteTopicInNameServer: %v, want ErrNoRoute", err)
	}
	if err := adm.CreateOrUpdateTopic(ctx, f.broker.Addr, want); err != nil {
		t.Fatalf("CreateOrUpdateTopic again: %v", err)
	}
	if err := routed(4); err != nil {
		t.Fatalf("route after re-creating the unchanged topic: %v", err)
	}
	grown := want
	grown.ReadQueueNums, grown.WriteQueueNums = 8, 8
	if err := adm.CreateOrUpdateTopic(ctx, f.broker.Addr, grown); err != nil {
		t.Fatalf("grow: %v", err)
	}
	if err := routed(8); err != nil {
		t.Fatalf("route after growing: %v", err)
	}

	const ns = "ORDER_TOPIC_CONFIG"
	conf := f.broker.Name + ":8"
	if err := adm.PutKVConfig(ctx, f.ns.Addr, ns, topic, conf); err != nil {
		t.Fatalf("PutKVConfig: %v", err)
	}
	if v, found, err := adm.KVConfig(ctx, f.ns.Addr, ns, topic); err != nil || !found || v != conf {
		t.Fatalf("KVConfig = %q %v %v, want %q", v, found, err, conf)
	}
	if err := adm.DeleteKVConfig(ctx, f.ns.Addr, ns, topic); err != nil {
		t.Fatalf("DeleteKVConfig: %v", err)
	}
	if _, found, err := adm.KVConfig(ctx, f.ns.Addr, ns, topic); err != nil || found {
		t.Fatalf("KVConfig after delete: found %v, %v", found, err)
	}

	if err := adm.DeleteTopicInBroker(ctx, f.broker.Addr, topic); err != nil {
		t.Fatalf("DeleteTopicInBroker: %v", err)
	}
	if table, err := adm.TopicConfigs(ctx, f.broker.Addr); err != nil || table.TopicConfigTable[topic] != nil {
		t.Fatalf("after delete: %+v %v", table.TopicConfigTable[topic], err)
	}
	var refused *rmqadmin.Error
	if _, err := adm.TopicStats(ctx, f.broker.Addr, topic); !errors.As(err, &refused) || refused.Code != remoting.TopicNotExist {
		t.Errorf("TopicStats after delete: %v, want TOPIC_NOT_EXIST", err)
	}
	if err := adm.DeleteTopicInNameServer(ctx, f.ns.Addr, topic, f.broker.Cluster); err != nil {
		t.Fatalf("DeleteTopicInNameServer: %v", err)
	}
	err = adm.CreateOrUpdateTopic(ctx, f.broker.Addr, protocol.TopicConfig{TopicName: "SCHEDULE_TOPIC_XXXX", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6})
	if !errors.As(err, &refused) || !strings.Contains(refused.Remark, "conflict with system topic") {
		t.Errorf("creating a system topic on the Java broker: %v", err)
	}
	// A Java 4.9.7 broker answers GET_BROKER_RUNTIME_INFO with SYSTEM_ERROR until its store
	// stats sampler has run once, about a second after start (StoreStatsService.getPutTps
	// reads the last sample of an empty list), so a broker this young is asked again.
	err = eventually(10*time.Second, 200*time.Millisecond, func() error {
		info, err := adm.RuntimeInfo(ctx, f.broker.Addr)
		if err == nil && info["brokerVersionDesc"] == "" {
			return fmt.Errorf("no brokerVersionDesc in %v", info)
		}
		return err
	})
	if err != nil {
		t.Errorf("RuntimeInfo: %v", err)
	}
}
