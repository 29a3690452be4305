package broker

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

func withMetrics(c *config.Config) {
	c.MetricsExporterType = "PROM"
	c.MetricsPromExporterHost = "127.0.0.1"
	c.MetricsPromExporterPort = 0
}

// scrapeText GETs addr's /metrics.
func scrapeText(t testing.TB, addr string) []byte {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %d %v\n%s", resp.StatusCode, err, body)
	}
	return body
}

func parseMetrics(t testing.TB, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	return mfs
}

// metricValue sums the series of name whose labels include want (counter, gauge, or a
// histogram's count).
func metricValue(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf, ok := mfs[name]
	if !ok {
		return 0, false
	}
	var sum float64
	found := false
next:
	for _, m := range mf.Metric {
		for k, v := range want {
			match := false
			for _, l := range m.Label {
				if l.GetName() == k && l.GetValue() == v {
					match = true
				}
			}
			if !match {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum, found
}

func wantMetric(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels map[string]string, want float64) {
	t.Helper()
	got, ok := metricValue(mfs, name, labels)
	if !ok || got != want {
		t.Errorf("%s%v = %v (found %v), want %v", name, labels, got, ok, want)
	}
}

func commitOffset(tb *testBroker, group, topic string, qid int, off int64) {
	tb.t.Helper()
	resp := tb.invoke(remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(qid), "commitOffset": strconv.FormatInt(off, 10),
	}, nil)
	if resp.Code != remoting.Success {
		tb.t.Fatalf("commit offset: %v", resp)
	}
}

// Sends and pulls move the counters by what they carried; lag is what was stored past
// the committed offset; the output parses, lints clean, and says the same as Gather.
func TestMetricsCountSendsPullsAndLag(t *testing.T) {
	tb := startBroker(t, "", withMetrics)
	tb.createTopic("MT", 2)
	const sends = 5
	for i := range sends {
		if resp := tb.sendV2("MT", i%2, "a", "body-"+strconv.Itoa(i)); resp.Code != remoting.Success {
			t.Fatalf("send: %v", resp)
		}
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("MT", 0)+tb.store.MaxOffsetInQueue("MT", 1) == sends })
	resp := tb.invoke(remoting.PullMessage, pullFields("mg", "MT", 0, 0, pullSubscription, "*"), nil)
	if resp.Code != remoting.Success {
		t.Fatalf("pull: %v", resp)
	}
	pulled := len(decodeAll(t, resp.Body))
	commitOffset(tb, "mg", "MT", 0, int64(pulled))
	commitOffset(tb, "mg", "MT", 1, 0)

	// The server observes a send's latency after queueing its answer (ServerConfig.OnReply),
	// which the client can read first: scrape until the last send is counted; the checks
	// below then hold every figure to its value.
	sendLatency := map[string]string{"request_code": "send_message_v2", "response_code": "success", "result": "success"}
	var text []byte
	var mfs map[string]*dto.MetricFamily
	waitFor(t, func() bool {
		text = scrapeText(t, tb.MetricsAddr())
		mfs = parseMetrics(t, text)
		n, _ := metricValue(mfs, "rocketmq_rpc_latency", sendLatency)
		return n >= sends
	})
	topic := map[string]string{"topic": "MT", "cluster": "DefaultCluster", "node_type": "broker", "node_id": "broker-test"}
	wantMetric(t, mfs, "rocketmq_messages_in_total", topic, sends)
	wantMetric(t, mfs, "rocketmq_messages_in_total", map[string]string{"topic": "MT", "message_type": "normal", "is_system": "false"}, sends)
	wantMetric(t, mfs, "rocketmq_messages_out_total", map[string]string{"topic": "MT", "consumer_group": "mg", "is_retry": "false"}, float64(pulled))
	wantMetric(t, mfs, "rocketmq_consumer_lag_messages", map[string]string{"topic": "MT", "consumer_group": "mg"}, float64(sends-pulled))
	wantMetric(t, mfs, "rocketmq_rpc_latency", sendLatency, sends)
	wantMetric(t, mfs, "rocketmq_storage_put_latency", nil, sends)
	wantMetric(t, mfs, "rocketmq_message_size", map[string]string{"message_type": "normal"}, sends)
	if in, _ := metricValue(mfs, "rocketmq_throughput_in_total", topic); in < sends*float64(len("body-0")) {
		t.Errorf("throughput in %v", in)
	}
	if lat, ok := metricValue(mfs, "rocketmq_consumer_lag_latency", map[string]string{"topic": "MT", "consumer_group": "mg"}); !ok || lat < 0 {
		t.Errorf("lag latency %v %v", lat, ok)
	}
	if maxOff, _ := metricValue(mfs, "rocketmq_storage_commitlog_max_offset", nil); maxOff != float64(tb.store.CommitLogMaxOffset()) {
		t.Errorf("commitlog max offset %v, store %d", maxOff, tb.store.CommitLogMaxOffset())
	}
	for _, name := range []string{"rocketmq_storage_disk_used_ratio", "rocketmq_storage_flush_behind_bytes", "rocketmq_storage_dispatch_behind_bytes",
		"rocketmq_storage_consume_queues", "rocketmq_storage_index_entries", "rocketmq_pull_requests_held", "rocketmq_remoting_connections",
		"rocketmq_remoting_connection_errors_total", "rocketmq_processor_watermark", "rocketmq_topic_number", "go_goroutines"} {
		if _, ok := mfs[name]; !ok {
			t.Errorf("%s missing", name)
		}
	}

	problems, err := promlint.New(bytes.NewReader(text)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}

	// The fast text path and Gather agree, family by family.
	gathered, err := tb.metrics.exp.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range gathered {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	viaGather := parseMetrics(t, buf.Bytes())
	for _, name := range []string{"rocketmq_messages_in_total", "rocketmq_messages_out_total", "rocketmq_consumer_lag_messages"} {
		if a, b := mfs[name].String(), viaGather[name].String(); a != b && len(mfs[name].Metric) != len(viaGather[name].Metric) {
			t.Errorf("%s differs:\ntext:   %s\ngather: %s", name, a, b)
		}
	}
}

// A deleted topic's series go at the next scrape: series exist only for topics (and
// groups) that do.
func TestMetricsForgetDeletedTopics(t *testing.T) {
	tb := startBroker(t, "", withMetrics)
	tb.createTopic("Gone", 1)
	tb.sendV2("Gone", 0, "a", "x")
	mfs := parseMetrics(t, scrapeText(t, tb.MetricsAddr()))
	wantMetric(t, mfs, "rocketmq_messages_in_total", map[string]string{"topic": "Gone"}, 1)
	if resp := tb.invoke(remoting.DeleteTopicInBroker, map[string]string{"topic": "Gone"}, nil); resp.Code != remoting.Success {
		t.Fatalf("delete topic: %v", resp)
	}
	mfs = parseMetrics(t, scrapeText(t, tb.MetricsAddr()))
	if v, ok := metricValue(mfs, "rocketmq_messages_in_total", map[string]string{"topic": "Gone"}); ok {
		t.Errorf("deleted topic still exported: %v", v)
	}
}

// Past metricsSeriesLimit topics, sends count in one overflow series and the dropped
// gauge says how many topics were folded into it.
func TestMetricsSeriesLimit(t *testing.T) {
	tb := startBroker(t, "", func(c *config.Config) { withMetrics(c); c.MetricsSeriesLimit = 2 })
	for _, topic := range []string{"L1", "L2", "L3", "L4"} {
		tb.createTopic(topic, 1)
		if resp := tb.sendV2(topic, 0, "a", "x"); resp.Code != remoting.Success {
			t.Fatalf("send: %v", resp)
		}
	}
	mfs := parseMetrics(t, scrapeText(t, tb.MetricsAddr()))
	if n := len(mfs["rocketmq_messages_in_total"].Metric); n != 3 {
		t.Errorf("%d series, want 2 topics and the overflow", n)
	}
	wantMetric(t, mfs, "rocketmq_messages_in_total", nil, 4)
	wantMetric(t, mfs, "rocketmq_messages_in_total", map[string]string{"topic": overflowLabel}, 2)
	wantMetric(t, mfs, "rocketmq_metrics_series_dropped", map[string]string{"metric": "rocketmq_messages_in_total"}, 2)
}

func TestMetricsOffByDefault(t *testing.T) {
	tb := startBroker(t, "", nil)
	if tb.metrics != nil || tb.MetricsAddr() != "" {
		t.Fatal("metrics on without metricsExporterType=PROM")
	}
	if !strings.Contains(config.Default().MetricsExporterType, "DISABLE") {
		t.Fatal("default exporter type")
	}
}

// A master reports its connected slave and the slave's lag; the slave reports its master.
// The lag reaches 0 once the slave has acknowledged everything.
func TestMetricsHA(t *testing.T) {
	m := startBroker(t, "", withMetrics)
	m.createTopic("MHA", 1)
	m.sendV2("MHA", 0, "t", "x")
	s := startSlave(t, m, withMetrics)
	waitFor(t, func() bool {
		mfs := parseMetrics(t, scrapeText(t, m.MetricsAddr()))
		connected, _ := metricValue(mfs, "rocketmq_ha_slaves_connected", nil)
		lag, ok := metricValue(mfs, "rocketmq_ha_slave_lag_bytes", nil)
		return connected == 1 && ok && lag == 0
	})
	mfs := parseMetrics(t, scrapeText(t, s.MetricsAddr()))
	wantMetric(t, mfs, "rocketmq_ha_master_connected", map[string]string{"master_addr": m.HAAddr(), "broker_id": "1"}, 1)
	if off, _ := metricValue(mfs, "rocketmq_ha_slave_reported_offset", nil); off != float64(m.store.CommitLogMaxOffset()) {
		t.Errorf("slave reported %v, master at %d", off, m.store.CommitLogMaxOffset())
	}
}

// What a send does for metrics allocates nothing once its topic and RPC series exist.
func TestMetricsPerSendAllocatesNothing(t *testing.T) {
	tb := startBroker(t, "", withMetrics)
	m := tb.metrics
	req := remoting.NewRequest(remoting.SendMessageV2, nil, nil)
	resp := req.NewResponse(remoting.Success, "")
	m.sent("A", msgNormal, 1, 100)
	m.onReply(req, resp, time.Millisecond, nil)
	allocs := testing.AllocsPerRun(1000, func() {
		start := m.putStart()
		m.sent("A", msgNormal, 1, 100)
		m.stored(start)
		m.onReply(req, resp, time.Millisecond, nil)
		m.pulled("A", "g", 1, 100)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per send", allocs)
	}
}

// A frame longer than the maximum closes its connection and counts as oversized.
func TestMetricsCountFrameErrors(t *testing.T) {
	tb := startBroker(t, "", withMetrics)
	nc, err := net.Dial("tcp", tb.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write([]byte{0x7f, 0xff, 0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection stayed open after an oversized frame")
	}
	mfs := parseMetrics(t, scrapeText(t, tb.MetricsAddr()))
	wantMetric(t, mfs, "rocketmq_remoting_connection_errors_total", map[string]string{"event": "oversized"}, 1)
	wantMetric(t, mfs, "rocketmq_remoting_connection_errors_total", map[string]string{"event": "malformed"}, 0)
}

// Requests the ACL refuses are counted by request code.
func TestMetricsCountACLRefusals(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(file, []byte(testACL), 0o644); err != nil {
		t.Fatal(err)
	}
	tb := startBroker(t, "", func(c *config.Config) { withMetrics(c); c.AclEnable, c.AclPlainFile = true, file })
	wantRefused(t, tb.invoke(remoting.GetAllTopicConfig, nil, nil), "No accessKey is configured")
	wantRefused(t, tb.sendV2("AclTopic", 0, "", "unsigned"), "No accessKey is configured")
	wantRefused(t, tb.sendV2("AclTopic", 0, "", "unsigned"), "No accessKey is configured")
	mfs := parseMetrics(t, scrapeText(t, tb.MetricsAddr()))
	wantMetric(t, mfs, "rocketmq_acl_refused_total", map[string]string{"request_code": "get_all_topic_config"}, 1)
	wantMetric(t, mfs, "rocketmq_acl_refused_total", map[string]string{"request_code": "send_message_v2"}, 2)
}
