package namesrv

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

func scrapeNS(t *testing.T, ns *NameServer) (map[string]*dto.MetricFamily, []byte) {
	t.Helper()
	resp, err := http.Get("http://" + ns.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, body)
	}
	return mfs, body
}

func nsValue(mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var v float64
	for _, m := range mfs[name].GetMetric() {
		match := true
		for k, w := range want {
			found := false
			for _, l := range m.GetLabel() {
				found = found || l.GetName() == k && l.GetValue() == w
			}
			match = match && found
		}
		if match {
			v += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return v
}

// Registrations, route lookups and removals move their counters; the broker gauge
// follows the route table; the output lints clean.
func TestMetricsRegistrationsLookupsRemovals(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MetricsExporterType, cfg.MetricsPromExporterHost, cfg.MetricsPromExporterPort = "PROM", "127.0.0.1", 0
	ns := startNameServer(t, cfg)
	cl := newClient(t)
	master := fakeBroker{cluster: "C1", name: "broker-a", addr: "10.0.0.1:10911", topics: topics("TopicA")}
	slave := fakeBroker{cluster: "C1", name: "broker-a", addr: "10.0.0.2:10911", id: 1, topics: topics("TopicA")}
	master.register(t, cl, ns.Addr(), false)
	slave.register(t, cl, ns.Addr(), false)
	getRoute(t, cl, ns.Addr(), "TopicA")
	getRoute(t, cl, ns.Addr(), "Nope")
	getRoute(t, cl, ns.Addr(), "Nope")

	// The server observes an answer's latency after queueing it (ServerConfig.OnReply),
	// so the second registration's answer can be read before it is counted: scrape until
	// it is, for at most 5 s; the checks below then hold every figure to its value.
	registerLatency := map[string]string{"request_code": "register_broker", "node_type": "nameserver"}
	mfs, text := scrapeNS(t, ns)
	for deadline := time.Now().Add(5 * time.Second); nsValue(mfs, "rocketmq_rpc_latency", registerLatency) < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		mfs, text = scrapeNS(t, ns)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"rocketmq_namesrv_brokers", map[string]string{"cluster": "C1", "broker_name": "broker-a", "role": "master"}, 1},
		{"rocketmq_namesrv_brokers", map[string]string{"cluster": "C1", "broker_name": "broker-a", "role": "slave"}, 1},
		{"rocketmq_namesrv_registrations_total", map[string]string{"result": "success"}, 2},
		{"rocketmq_namesrv_route_lookups_total", map[string]string{"result": "found"}, 1},
		{"rocketmq_namesrv_route_lookups_total", map[string]string{"result": "not_found"}, 2},
		{"rocketmq_namesrv_topics", nil, 1},
		{"rocketmq_rpc_latency", registerLatency, 2},
	} {
		if got := nsValue(mfs, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	problems, err := promlint.New(bytes.NewReader(text)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}

	mustSucceed(t, invoke(t, cl, ns.Addr(), remoting.UnregisterBroker, &protocol.UnregisterBrokerRequestHeader{
		BrokerName: slave.name, BrokerAddr: slave.addr, ClusterName: slave.cluster, BrokerID: 1}, nil))
	mfs, _ = scrapeNS(t, ns)
	if got := nsValue(mfs, "rocketmq_namesrv_brokers", map[string]string{"role": "slave"}); got != 0 {
		t.Errorf("slaves after unregister: %v", got)
	}
	if got := nsValue(mfs, "rocketmq_namesrv_broker_removals_total", map[string]string{"reason": "unregistered"}); got != 1 {
		t.Errorf("unregistered removals: %v", got)
	}
}
