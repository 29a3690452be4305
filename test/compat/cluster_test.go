//go:build compat

package compat

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/openrmq/rocketmq-operator/test/internal/procs"
)

// TestSecondBrokerBinaryHeaders: a second Java broker, sending its REGISTER_BROKER (103) and
// UNREGISTER_BROKER (104) with binary (ROCKETMQ) remoting headers, joins the cluster; a
// topic on both brokers is routed to both and the Go producer reaches both; once that broker
// shuts down, the name server drops it from the cluster and from the topic's route.
func TestSecondBrokerBinaryHeaders(t *testing.T) {
	f := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), brokerStartTimeout)
	defer cancel()
	b2, err := procs.StartJavaBroker(ctx, f.java.WithJVMArgs("-Drocketmq.serialize.type=ROCKETMQ"),
		filepath.Join(f.work, "java-broker-b"), procs.BrokerOpts{
			Cluster:     f.broker.Cluster,
			Name:        "compat-broker-b",
			NamesrvAddr: f.ns.Addr,
			Conf:        map[string]string{"autoCreateTopicEnable": "false"},
		})
	if err != nil {
		t.Fatalf("starting a second Java broker: %v", err)
	}
	defer b2.Stop(procs.DefaultStopGrace)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- last lines of the second broker (%s) ----\n%s", b2.LogPath, b2.Tail(30))
		}
	})

	err = eventually(registrationTimeout, 500*time.Millisecond, func() error {
		ci, err := getClusterInfo(t, f.ns.Addr)
		if err != nil {
			return err
		}
		if got := ci.BrokerAddrTable[b2.Name].BrokerAddrs["0"]; got != b2.Addr {
			return fmt.Errorf("GET_BROKER_CLUSTER_INFO (106): brokerAddrTable[%s].brokerAddrs[0] = %q, want %s (registered with binary headers): %+v", b2.Name, got, b2.Addr, ci)
		}
		members := ci.ClusterAddrTable[f.broker.Cluster]
		if !slices.Contains(members, f.broker.Name) || !slices.Contains(members, b2.Name) {
			return fmt.Errorf("GET_BROKER_CLUSTER_INFO (106): clusterAddrTable[%s] = %v, want both %s and %s", f.broker.Cluster, members, f.broker.Name, b2.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// One topic with 4 queues on each broker.
	adm := newAdmin(t, f)
	topic := uniq("compat_two_brokers")
	for _, addr := range []string{f.broker.Addr, b2.Addr} {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := adm.CreateTopic(cctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(addr),
			admin.WithReadQueueNums(4), admin.WithWriteQueueNums(4))
		ccancel()
		if err != nil {
			t.Fatalf("admin.CreateTopic(%s) on %s: %v", topic, addr, err)
		}
	}
	err = eventually(routeTimeout, 250*time.Millisecond, func() error {
		r, err := getRoute(t, f.ns.Addr, topic)
		if err != nil {
			return err
		}
		if err := checkRoute(r, f.broker.Name, f.broker.Cluster, f.broker.Addr, 4); err != nil {
			return err
		}
		return checkRoute(r, b2.Name, f.broker.Cluster, b2.Addr, 4)
	})
	if err != nil {
		t.Fatalf("route of %s created on both brokers: %v", topic, err)
	}

	p, err := producer.NewDefaultProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{f.ns.Addr})),
		producer.WithGroupName(uniq("compat_go_producer2")),
		producer.WithInstanceName(uniq("compat_go_producer2")),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(10*time.Second),
	)
	if err != nil {
		t.Fatalf("producer.NewDefaultProducer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("producer.Start: %v", err)
	}
	defer func() { _ = p.Shutdown() }()
	hit := map[string]int{}
	for i := range 16 {
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := p.SendSync(sctx, primitive.NewMessage(topic, fmt.Appendf(nil, "two brokers %d", i)))
		scancel()
		if err != nil {
			t.Fatalf("SendSync #%d to %s: %v", i, topic, err)
		}
		if res.Status != primitive.SendOK {
			t.Fatalf("SendSync #%d: %s", i, res)
		}
		hit[res.MessageQueue.BrokerName]++
	}
	if hit[f.broker.Name] == 0 || hit[b2.Name] == 0 {
		t.Errorf("16 sends over the 8 queues of %s reached brokers %v, want both %s and %s", topic, hit, f.broker.Name, b2.Name)
	}

	// Shut the second broker down: it sends UNREGISTER_BROKER (104) with binary headers.
	b2.Stop(procs.DefaultStopGrace)
	err = eventually(routeTimeout, 500*time.Millisecond, func() error {
		ci, err := getClusterInfo(t, f.ns.Addr)
		if err != nil {
			return err
		}
		if _, ok := ci.BrokerAddrTable[b2.Name]; ok {
			return fmt.Errorf("GET_BROKER_CLUSTER_INFO (106) still lists %s after it unregistered: %+v", b2.Name, ci)
		}
		if slices.Contains(ci.ClusterAddrTable[f.broker.Cluster], b2.Name) {
			return fmt.Errorf("GET_BROKER_CLUSTER_INFO (106): clusterAddrTable[%s] = %v still holds %s", f.broker.Cluster, ci.ClusterAddrTable[f.broker.Cluster], b2.Name)
		}
		r, err := getRoute(t, f.ns.Addr, topic)
		if err != nil {
			return err
		}
		for _, q := range r.QueueDatas {
			if q.BrokerName == b2.Name {
				return fmt.Errorf("route of %s still has queues on %s after it unregistered: %+v", topic, b2.Name, *r)
			}
		}
		for _, b := range r.BrokerDatas {
			if b.BrokerName == b2.Name {
				return fmt.Errorf("route of %s still has brokerData for %s after it unregistered: %+v", topic, b2.Name, *r)
			}
		}
		return checkRoute(r, f.broker.Name, f.broker.Cluster, f.broker.Addr, 4)
	})
	if err != nil {
		t.Fatal(err)
	}
}
