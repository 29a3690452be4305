package broker

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/broker/metadata"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// BenchmarkMetricsScrape scrapes /metrics over HTTP on a broker with 10,000 topics (1
// queue each, for the file descriptor limit of 20,000; a stored message in each) and 100 consumer groups, each with
// committed offsets in 100 of the topics (10,000 group and topic pairs, every one
// lagging, so that the lag latency looks up a store time in every queue), traffic
// counted on every topic and pair: 60,000 per-topic and per-group series. docs/metrics.md
// gives the figure; the budget is 100 ms.
func BenchmarkMetricsScrape(b *testing.B) {
	const topics, groups, topicsPerGroup, queues = 10000, 100, 100, 1
	br, _, _ := benchBrokerWith(b, 0, func(c *config.Config) {
		c.MetricsExporterType, c.MetricsPromExporterHost, c.MetricsPromExporterPort = "PROM", "127.0.0.1", 0
		c.MappedFileSizeConsumeQueue = 20 * 64 // small consume-queue files: 10,000 of them
		// The topics are in topics.json before the broker starts (one Put each would
		// rewrite the whole file 10,000 times).
		table := map[string]*protocol.TopicConfig{}
		for i := range topics {
			tc := protocol.NewTopicConfig(fmt.Sprintf("ScrapeTopic%05d", i))
			tc.ReadQueueNums, tc.WriteQueueNums = queues, queues
			table[tc.TopicName] = tc
		}
		dir := metadata.ConfigDir(c.StorePathRootDir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		w := protocol.TopicConfigSerializeWrapper{TopicConfigTable: table}
		if err := os.WriteFile(filepath.Join(dir, metadata.TopicsFile), protocol.MustEncode(w), 0o644); err != nil {
			b.Fatal(err)
		}
	})
	born := netip.MustParseAddrPort("127.0.0.1:1")
	body := make([]byte, 100)
	for i := range topics {
		name := fmt.Sprintf("ScrapeTopic%05d", i)
		for q := range int32(queues) {
			if _, err := br.store.PutMessages([]*message.Message{{Topic: name, QueueID: q, Body: body,
				BornTimestamp: time.Now().UnixMilli(), BornHost: born}}); err != nil {
				b.Fatal(err)
			}
		}
		br.metrics.sent(name, msgNormal, 2, 2*180)
	}
	for g := range groups {
		group := fmt.Sprintf("ScrapeGroup%03d", g)
		if _, _, err := br.groups.GetOrCreate(group, true); err != nil {
			b.Fatal(err)
		}
		for j := range topicsPerGroup {
			name := fmt.Sprintf("ScrapeTopic%05d", g*topicsPerGroup+j)
			for q := range int32(queues) {
				br.offsets.Commit(group, name, q, 0)
			}
			br.metrics.pulled(name, group, 1, 180)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for br.store.DispatchBehind() > 0 {
		if time.Now().After(deadline) {
			b.Fatal("not dispatched")
		}
		time.Sleep(10 * time.Millisecond)
	}
	url := "http://" + br.MetricsAddr() + "/metrics"
	scrape := func() int {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("scrape: %d %v", resp.StatusCode, err)
		}
		return int(n)
	}
	size := scrape() // the first scrape promotes every key
	mfs := parseMetrics(b, scrapeText(b, br.MetricsAddr()))
	if n := len(mfs["rocketmq_consumer_lag_messages"].GetMetric()); n != groups*topicsPerGroup {
		b.Fatalf("%d lag series", n)
	}
	// http: a GET over loopback, client reading included; write: the exposition alone.
	b.Run("http", func(b *testing.B) {
		for b.Loop() {
			scrape()
		}
		b.ReportMetric(float64(size), "bytes/scrape")
	})
	// thread-cpu-ns/op is the CPU the scraping thread spent: on a shared machine the wall
	// time also counts the waits for a CPU.
	b.Run("write", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		start := threadCPU()
		for b.Loop() {
			if _, err := br.metrics.exp.WriteTo(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(threadCPU()-start)/float64(b.N), "thread-cpu-ns/op")
	})
}

// threadCPU is the calling OS thread's CPU time (user+system).
func threadCPU() time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD, Linux
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkMetricsPerSend is what metrics add to one send on the request path, from 8
// goroutines at once as the send pool runs them: the topic's counters, the message size
// and put latency histograms, and the RPC latency histogram of the reply.
func BenchmarkMetricsPerSend(b *testing.B) {
	br, _, _ := benchBrokerWith(b, 0, func(c *config.Config) {
		c.MetricsExporterType, c.MetricsPromExporterHost, c.MetricsPromExporterPort = "PROM", "127.0.0.1", 0
	})
	m := br.metrics
	req := remoting.NewRequest(remoting.SendMessageV2, nil, nil)
	resp := req.NewResponse(remoting.Success, "")
	topics := make([]string, 64)
	for t := range topics {
		topics[t] = fmt.Sprintf("T%d", t)
		m.sent(topics[t], msgNormal, 1, 1200)
	}
	b.SetParallelism(4)
	defer reportCPU(b)()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			arrived := monoNow() // the remoting server's arrival stamp (remoting's monoNow)
			start := m.putStart()
			m.sent(topics[i%len(topics)], msgNormal, 1, 1200)
			m.stored(start)
			m.onReply(req, resp, time.Duration(monoNow()-arrived), nil)
			i++
		}
	})
}
