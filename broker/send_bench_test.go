package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// sendBenchRequest is a SEND_MESSAGE_V2 of a 1 KiB body to topic SB, as the Java
// producer sends it (binary header), with a tag and a key.
func sendBenchRequest(body []byte, props string) *remoting.Command {
	req := remoting.NewRequest(remoting.SendMessageV2, map[string]string{
		"a": "bench_producer", "b": "SB", "c": "TBW102", "d": "8", "e": "-1", "f": "0",
		"g": strconv.FormatInt(time.Now().UnixMilli(), 10), "h": "0", "i": props, "j": "0", "k": "false", "m": "false",
	}, body)
	req.Serialize = remoting.Binary
	return req
}

// BenchmarkSendRoundTrip sends 1 KiB messages over loopback TCP, client included, from
// 8 senders on the 2 CPUs (as rmqbench's producer with -w 8 does): the whole cost of a
// send, remoting and store included, per message; metricsOn with
// metricsExporterType=PROM (docs/benchmarks.md compares the two).
func BenchmarkSendRoundTrip(b *testing.B) {
	for _, mode := range []struct {
		name   string
		mutate func(*config.Config)
	}{{"metricsOff", nil}, {"metricsOn", func(c *config.Config) {
		c.MetricsExporterType, c.MetricsPromExporterHost, c.MetricsPromExporterPort = "PROM", "127.0.0.1", 0
	}}} {
		b.Run(mode.name, func(b *testing.B) {
			br, cl, addr := benchBrokerWith(b, 0, mode.mutate)
			tc := protocol.NewTopicConfig("SB")
			tc.ReadQueueNums, tc.WriteQueueNums = 8, 8
			if err := br.topics.Put(*tc); err != nil {
				b.Fatal(err)
			}
			body := make([]byte, 1024)
			props, _ := message.EncodeProperties(map[string]string{message.PropertyTags: "t", message.PropertyKeys: "k", "WAIT": "true"})
			ctx := context.Background()
			b.ReportAllocs()
			b.SetBytes(1024)
			b.SetParallelism(4) // 8 senders on 2 CPUs
			defer reportCPU(b)()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := cl.Invoke(ctx, addr, sendBenchRequest(body, props))
					if err != nil || resp.Code != remoting.Success {
						b.Fatalf("send: %v, %v", resp, err)
					}
				}
			})
		})
	}
}

// BenchmarkSendHandler runs the send handler for 1 KiB messages with a tag and a key,
// without the network: what a send costs the broker from the decoded request to the
// response it hands its connection, the commitlog append included (ASYNC_FLUSH, so the
// response is ready at once). One sender; docs/benchmarks.md has the figures.
func BenchmarkSendHandler(b *testing.B) {
	br, conn := sendBenchBroker(b)
	body := make([]byte, 1024)
	props, _ := message.EncodeProperties(map[string]string{message.PropertyTags: "t", message.PropertyKeys: "k", "WAIT": "true"})
	req := sendBenchRequest(body, props)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(1024)
	defer reportCPU(b)()
	for b.Loop() {
		if resp, err := br.handleSend(ctx, conn, req); err != nil || resp == nil || resp.Code != remoting.Success {
			b.Fatalf("send: %v, %v", resp, err)
		}
	}
}

// sendBenchBroker starts a broker with topic SB (8 queues) and returns it with a server
// side connection from a client of it, for handlers called directly.
func sendBenchBroker(b *testing.B) (*Broker, *remoting.Conn) {
	b.Helper()
	const captureCode = 30999 // no RocketMQ request code
	conns := make(chan *remoting.Conn, 1)
	br, cl, addr := startBenchBroker(b, nil, func(br *Broker) {
		br.server.Handle(captureCode, remoting.HandlerFunc(func(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
			select {
			case conns <- conn:
			default:
			}
			return req.NewResponse(remoting.Success, "")
		}), nil)
	})
	tc := protocol.NewTopicConfig("SB")
	tc.ReadQueueNums, tc.WriteQueueNums = 8, 8
	if err := br.topics.Put(*tc); err != nil {
		b.Fatal(err)
	}
	if _, err := cl.Invoke(context.Background(), addr, remoting.NewRequest(captureCode, nil, nil)); err != nil {
		b.Fatal(err)
	}
	return br, <-conns
}

// BenchmarkDecodeSendHeader decodes a SEND_MESSAGE_V2 header as the Java client sends it
// (single-letter names): the part of every send that is reflection.
func BenchmarkDecodeSendHeader(b *testing.B) {
	props, _ := message.EncodeProperties(map[string]string{message.PropertyTags: "t", message.PropertyKeys: "k", "WAIT": "true"})
	req := sendBenchRequest(nil, props)
	b.ReportAllocs()
	for b.Loop() {
		if h, err := decodeSendHeader(req); err != nil || h.Topic != "SB" {
			b.Fatalf("decode: %+v, %v", h, err)
		}
	}
}
