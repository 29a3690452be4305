package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker"
	brokerconfig "github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/namesrv"
)

// startCluster runs a name server and one master broker (autoCreateTopicEnable) in-process
// on loopback and returns the name server's address.
func startCluster(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	nc := namesrv.DefaultConfig()
	nc.BindAddress, nc.ListenPort, nc.Logger = "127.0.0.1", 0, quiet
	nc.KVConfigPath = filepath.Join(dir, "namesrv", "kvConfig.json")
	ns, err := namesrv.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(context.Background()) })

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	bc := brokerconfig.Default()
	bc.BrokerName, bc.BrokerIP1, bc.ListenPort = "broker-a", "127.0.0.1", port
	bc.NamesrvAddr = ns.Addr()
	bc.AutoCreateTopicEnable = true
	bc.StorePathRootDir = filepath.Join(dir, "broker")
	bc.MappedFileSizeCommitLog = 32 << 20
	b, err := broker.New(bc, broker.Options{NoFastChannel: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.Shutdown(ctx)
	})
	return ns.Addr()
}

// TestProduceThenConsume runs the producer for about a second (sync on a topic created
// with -c, async on one the broker auto-creates), then the consumer from the first
// offset, which must read back exactly what was sent.
func TestProduceThenConsume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the producer for two seconds")
	}
	ns := startCluster(t)
	ctx := context.Background()
	// Wait for the broker's first registration, which brings TBW102.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var out bytes.Buffer
		_, err := runProducer(ctx, producerOptions{namesrv: ns, topic: "Warmup", group: "pg", threads: 1, size: 1,
			inflight: 1, duration: 10 * time.Millisecond, sendTimeout: time.Second}, &out)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster never ready: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	cases := []struct {
		name string
		o    producerOptions
	}{
		{"sync", producerOptions{topic: "BenchSync", threads: 4, size: 1024, keys: true, tags: "TagA", create: true, queues: 4}},
		{"async", producerOptions{topic: "BenchAsync", threads: 2, size: 512, async: true, inflight: 16}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.namesrv, o.group, o.duration, o.interval, o.sendTimeout = ns, "benchmark_producer", time.Second, 300*time.Millisecond, 3*time.Second
			var out bytes.Buffer
			pr, err := runProducer(ctx, o, &out)
			t.Log("\n" + out.String())
			if err != nil {
				t.Fatal(err)
			}
			if pr.sent == 0 || pr.sendFailed != 0 || pr.respFailed != 0 {
				t.Fatalf("producer: %+v", pr)
			}
			if !strings.Contains(out.String(), "Send TPS: ") || !strings.Contains(out.String(), "Producer summary") {
				t.Fatalf("no TPS line or summary:\n%s", out.String())
			}

			out.Reset()
			cr, err := runConsumer(ctx, consumerOptions{namesrv: ns, topic: o.topic, group: "benchmark_consumer",
				duration: 20 * time.Second, interval: 300 * time.Millisecond, fromFirst: true, count: pr.sent,
				batch: 32, suspend: time.Second}, &out)
			t.Log("\n" + out.String())
			if err != nil {
				t.Fatal(err)
			}
			if cr.received != pr.sent {
				t.Fatalf("consumed %d, sent %d", cr.received, pr.sent)
			}
		})
	}
}
