package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape GETs a /metrics endpoint and parses it.
func scrape(t *testing.T, addr string) (map[string]*dto.MetricFamily, []byte) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %d %v", addr, resp.StatusCode, err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse the scrape of %s: %v", addr, err)
	}
	return mfs, body
}

// sumMetric adds up the series of name whose labels include want: counter and gauge
// values, a histogram's sample count.
func sumMetric(mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var total float64
	for _, m := range mfs[name].GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && have[k] == v
		}
		if !match {
			continue
		}
		total += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
	}
	return total
}

// TestMetricsCountOfficialClientTraffic: the official Go client sends N messages and a
// push consumer consumes the first M of them; the broker's /metrics then says N in, M
// out, a lag of N-M, and its RPC and put latency histograms counted the N sends. The
// output lints clean (promlint, as promtool check metrics).
func TestMetricsCountOfficialClientTraffic(t *testing.T) {
	const n, m = 30, 12
	metricsAddr := "127.0.0.1:" + strconv.Itoa(freePort(0))
	b := startTestBroker(t, "broker-metrics", map[string]string{
		"metricsExporterType": "PROM", "metricsPromExporterHost": "127.0.0.1",
		"metricsPromExporterPort": metricsAddr[len("127.0.0.1:"):],
	})
	if err := waitListening(metricsAddr, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	topic, group := runName(t, "E2EMetrics"), runName(t, "E2EMetricsG")
	createTopic(t, b, topic, 4)
	p := newProducer(t, runName(t, "E2EMetricsP"))
	for i := range m {
		sendSync(t, p, msg(topic, fmt.Sprintf("first-%d", i), "T"))
	}

	c, col := startPush(t, group, topic, pushOpts{from: consumer.ConsumeFromFirstOffset})
	eventually(t, 60*time.Second, fmt.Sprintf("%d messages consumed", m), func() bool { return col.distinct() == m })
	eventually(t, 30*time.Second, "the consumed offsets committed", func() bool {
		var done int64
		for _, off := range committed(t, b, group, topic, 4) {
			done += max(off, 0)
		}
		return done == m
	})
	c.Shutdown()
	// Its held pulls are gone (the connection closed, or their suspend time ran out)
	// before the rest is sent: none may take the new messages.
	eventually(t, 60*time.Second, "no pull held after the consumer's shutdown", func() bool {
		mfs, _ := scrape(t, metricsAddr)
		return sumMetric(mfs, "rocketmq_pull_requests_held", nil) == 0
	})
	for i := range n - m {
		sendSync(t, p, msg(topic, fmt.Sprintf("rest-%d", i), "T"))
	}

	var mfs map[string]*dto.MetricFamily
	var text []byte
	lagOf := map[string]string{"topic": topic, "consumer_group": group, "is_retry": "false"}
	eventually(t, 20*time.Second, "the lag to cover every message sent", func() bool {
		mfs, text = scrape(t, metricsAddr)
		return sumMetric(mfs, "rocketmq_consumer_lag_messages", lagOf) == n-m
	})
	in := map[string]string{"topic": topic, "cluster": "E2ECluster", "node_type": "broker", "node_id": "broker-metrics"}
	if got := sumMetric(mfs, "rocketmq_messages_in_total", in); got != n {
		t.Errorf("rocketmq_messages_in_total %v, want %d", got, n)
	}
	if got := sumMetric(mfs, "rocketmq_messages_out_total", map[string]string{"topic": topic, "consumer_group": group}); got != m {
		t.Errorf("rocketmq_messages_out_total %v, want %d", got, m)
	}
	if got := sumMetric(mfs, "rocketmq_throughput_in_total", in); got < n*float64(len("first-0")) {
		t.Errorf("rocketmq_throughput_in_total %v", got)
	}
	if got := sumMetric(mfs, "rocketmq_consumer_lag_latency", lagOf); got < 0 {
		t.Errorf("rocketmq_consumer_lag_latency %v", got)
	}
	sends := sumMetric(mfs, "rocketmq_rpc_latency", map[string]string{"request_code": "send_message", "response_code": "success"}) +
		sumMetric(mfs, "rocketmq_rpc_latency", map[string]string{"request_code": "send_message_v2", "response_code": "success"})
	if sends != n {
		t.Errorf("rocketmq_rpc_latency counted %v successful sends, want %d", sends, n)
	}
	if got := sumMetric(mfs, "rocketmq_storage_put_latency", nil); got != n {
		t.Errorf("rocketmq_storage_put_latency counted %v, want %d", got, n)
	}
	if got := sumMetric(mfs, "rocketmq_broker_namesrv_registered", map[string]string{"namesrv_addr": namesrvAddr}); got != 1 {
		t.Errorf("rocketmq_broker_namesrv_registered{namesrv_addr=%q} = %v, want 1", namesrvAddr, got)
	}
	problems, err := promlint.New(bytes.NewReader(text)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}
