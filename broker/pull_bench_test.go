package broker

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// benchBroker runs a broker holding a topic PB of one queue with n messages of 1 KiB, with
// checkCRCOnRead set to crc.
func benchBroker(b *testing.B, n int, crc bool) (*Broker, *remoting.Client, string) {
	b.Helper()
	return benchBrokerWith(b, n, func(c *config.Config) { c.CheckCRCOnRead = crc })
}

// benchBrokerWith is benchBroker with mutate applied to the config first.
func benchBrokerWith(b *testing.B, n int, mutate func(*config.Config)) (*Broker, *remoting.Client, string) {
	b.Helper()
	br, cl, addr := startBenchBroker(b, mutate, nil)
	body := make([]byte, 1024)
	msgs := make([]*message.Message, 0, 32)
	for i := 0; i < n; i += len(msgs) {
		msgs = msgs[:0]
		for j := i; j < min(n, i+32); j++ {
			msgs = append(msgs, &message.Message{Topic: "PB", Body: body, BornTimestamp: time.Now().UnixMilli(),
				BornHost: netip.MustParseAddrPort("127.0.0.1:1")})
		}
		if _, err := br.store.PutMessages(msgs); err != nil {
			b.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for br.store.MaxOffsetInQueue("PB", 0) < int64(n) {
		if time.Now().After(deadline) {
			b.Fatal("messages not dispatched")
		}
		time.Sleep(time.Millisecond)
	}
	tc := protocol.NewTopicConfig("PB")
	tc.ReadQueueNums, tc.WriteQueueNums = 1, 1
	if err := br.topics.Put(*tc); err != nil {
		b.Fatal(err)
	}
	return br, cl, addr
}

// startBenchBroker starts a broker on a free loopback port with a 64 MiB-segment store
// in a temp dir, and a client for it; mutate adjusts the config, beforeStart (when set)
// runs between New and Start. The cleanup stops both.
func startBenchBroker(b *testing.B, mutate func(*config.Config), beforeStart func(*Broker)) (*Broker, *remoting.Client, string) {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	c := config.Default()
	c.BrokerName, c.BrokerIP1, c.ListenPort = "bench", "127.0.0.1", port
	c.StorePathRootDir = b.TempDir()
	c.MappedFileSizeCommitLog = 64 << 20
	if mutate != nil {
		mutate(c)
	}
	br, err := New(c, Options{NoFastChannel: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	if beforeStart != nil {
		beforeStart(br)
	}
	if err := br.Start(); err != nil {
		b.Fatal(err)
	}
	cl := remoting.NewClient(remoting.ClientConfig{})
	b.Cleanup(func() {
		cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		br.Shutdown(ctx)
	})
	return br, cl, c.BrokerAddr()
}

func pullBenchFields(offset int64) map[string]string {
	return map[string]string{
		"consumerGroup": "bench", "topic": "PB", "queueId": "0", "queueOffset": strconv.FormatInt(offset, 10),
		"maxMsgNums": "32", "sysFlag": strconv.Itoa(pullSubscription), "commitOffset": "0",
		"suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG",
	}
}

// BenchmarkPullHandler runs the pull handler for batches of 32 records of 1 KiB, without
// the network: what a pull costs the broker up to the response it hands its connection.
// The sub-benchmarks compare checkCRCOnRead on (the default: every record's body CRC is
// checked before it is sent) and off.
func BenchmarkPullHandler(b *testing.B) {
	for _, crc := range []bool{true, false} {
		b.Run("checkCRCOnRead="+strconv.FormatBool(crc), func(b *testing.B) { benchPullHandler(b, crc) })
	}
}

func benchPullHandler(b *testing.B, crc bool) {
	const n = 32 * 64
	br, _, _ := benchBroker(b, n, crc)
	b.ReportAllocs()
	b.SetBytes(32 * 1024)
	off := int64(0)
	defer reportCPU(b)()
	for b.Loop() {
		req := remoting.NewRequest(remoting.PullMessage, pullBenchFields(off), nil)
		resp, err := br.pull(nil, req, false)
		if err != nil || resp.Code != remoting.Success || resp.BodyLen() < 32*1024 {
			b.Fatalf("pull: %v, %v", resp, err)
		}
		resp.Discard()
		if off += 32; off >= n {
			off = 0
		}
	}
}

// BenchmarkPullRoundTrip pulls batches of 32 records of 1 KiB over loopback TCP, client
// included, as 8 pullers draining a topic do, with checkCRCOnRead on and off.
func BenchmarkPullRoundTrip(b *testing.B) {
	for _, crc := range []bool{true, false} {
		b.Run("checkCRCOnRead="+strconv.FormatBool(crc), func(b *testing.B) { benchPullRoundTrip(b, crc) })
	}
}

func benchPullRoundTrip(b *testing.B, crc bool) {
	const n = 32 * 64
	_, cl, addr := benchBroker(b, n, crc)
	b.ReportAllocs()
	b.SetBytes(32 * 1024)
	ctx := context.Background()
	b.SetParallelism(4) // 8 pullers on 2 CPUs
	defer reportCPU(b)()
	b.RunParallel(func(pb *testing.PB) {
		off := int64(0)
		for pb.Next() {
			resp, err := cl.Invoke(ctx, addr, remoting.NewRequest(remoting.PullMessage, pullBenchFields(off), nil))
			if err != nil || resp.Code != remoting.Success {
				b.Fatalf("pull: %v, %v", resp, err)
			}
			if off += 32; off >= n {
				off = 0
			}
		}
	})
}

// reportCPU reports the process's CPU time (user + system, every goroutine) per
// iteration as cpu-ns/op when the returned func runs: on a machine shared with other
// work, a steadier measure of what an iteration costs than the wall time.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
