package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	brokerconfig "github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/internal/testcluster"
)

// startCluster runs a name server and one master broker (autoCreateTopicEnable) in-process
// on loopback and returns the name server's address.
func startCluster(t *testing.T) string {
	return testcluster.Start(t, func(bc *brokerconfig.Config) {
		bc.AutoCreateTopicEnable = true
		bc.MappedFileSizeCommitLog = 32 << 20
	}).NamesrvAddr
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
			// The line hack/bench-vs-java.sh reads (JavaBench prints the same with client=java).
			want := fmt.Sprintf("RESULT client=go mode=producer series=send messages=%d ", pr.sent)
			if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), " errors=0 ") ||
				!strings.Contains(out.String(), " client_cpu_s=") {
				t.Fatalf("no %q line with errors=0 and client_cpu_s:\n%s", want, out.String())
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
			if want := fmt.Sprintf("RESULT client=go mode=consumer series=S2C messages=%d ", cr.received); !strings.Contains(out.String(), want) {
				t.Fatalf("no %q line:\n%s", want, out.String())
			}
		})
	}
}
