package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker"
	brokerconfig "github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/namesrv"
	"github.com/openrmq/rocketmq-operator/pkg/client"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

func loopbackPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestProducerFollowsARestartedBroker: a broker that comes back on another address (a
// pod with a new IP) gets the producer's sends again within seconds. rmqbench once
// resolved routes at start only, and sent to the old address until it stopped.
func TestProducerFollowsARestartedBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the producer for six seconds")
	}
	quiet := slog.New(slog.DiscardHandler)
	dir := t.TempDir()
	nc := namesrv.DefaultConfig()
	nc.BindAddress, nc.ListenPort, nc.Logger = "127.0.0.1", 0, quiet
	nc.KVConfigPath = filepath.Join(dir, "kv.json")
	ns, err := namesrv.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown(context.Background())
	startBroker := func() *broker.Broker {
		bc := brokerconfig.Default()
		bc.BrokerName, bc.BrokerIP1, bc.ListenPort = "broker-a", "127.0.0.1", loopbackPort(t)
		bc.NamesrvAddr, bc.StorePathRootDir = ns.Addr(), filepath.Join(dir, "store")
		bc.MappedFileSizeCommitLog, bc.MappedFileSizeConsumeQueue = 8<<20, 1000*20
		bc.MaxHashSlotNum, bc.MaxIndexNum = 1000, 4000
		b, err := broker.New(bc, broker.Options{NoFastChannel: true, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := startBroker()

	stored := func() int64 { // messages the current broker holds in the topic
		rc := remoting.NewClient(remoting.ClientConfig{})
		defer rc.Close()
		cl := client.New(rc, ns.Addr())
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		route, err := cl.Route(ctx, "Moving")
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, mq := range client.WriteQueues(route, "Moving", 0) {
			off, err := cl.MaxOffset(ctx, mq)
			if err != nil {
				t.Fatal(err)
			}
			n += off
		}
		return n
	}

	done := make(chan *producerResult, 1)
	var out bytes.Buffer
	go func() {
		r, err := runProducer(context.Background(), producerOptions{namesrv: ns.Addr(), topic: "Moving", group: "pg",
			threads: 2, size: 64, create: true, queues: 2, duration: 6 * time.Second, sendTimeout: time.Second}, &out)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	time.Sleep(1500 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	b.Shutdown(ctx)
	cancel()
	b = startBroker() // same store, another port
	defer b.Shutdown(context.Background())
	before := stored()
	r := <-done
	after := stored()
	t.Logf("sent %d (failed %d); the restarted broker stored %d -> %d", r.sent, r.sendFailed, before, after)
	if after-before < 100 {
		t.Errorf("after the broker moved, the producer stored %d messages in 4 s: it did not follow the route\n%s", after-before, out.String())
	}
}
