package charts_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/openrmq/rocketmq-operator/broker"
	"github.com/openrmq/rocketmq-operator/controllers"
	"github.com/openrmq/rocketmq-operator/namesrv"
)

var monitoringAPIs = []string{"monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule"}

func allMonitoring() map[string]any {
	return map[string]any{"metrics": map[string]any{
		"serviceMonitor":   map[string]any{"enabled": true},
		"prometheusRule":   map[string]any{"enabled": true},
		"grafanaDashboard": map[string]any{"enabled": true},
	}}
}

// The operator's metrics Service and the reader ClusterRole come by default; the
// monitoring objects only when asked for, and the prometheus-operator ones only where
// their CRDs exist.
func TestChartMetricsObjects(t *testing.T) {
	objs := render(t, nil)
	for _, want := range []string{"Service/rmq-rocketmq-operator-metrics", "ClusterRole/rmq-rocketmq-operator-metrics-reader"} {
		if _, ok := objs[want]; !ok {
			t.Errorf("missing %s", want)
		}
	}
	monitoring := []string{"ServiceMonitor/rmq-rocketmq-operator", "ServiceMonitor/rmq-rocketmq-operator-brokers",
		"ServiceMonitor/rmq-rocketmq-operator-nameservers", "PrometheusRule/rmq-rocketmq-operator"}
	for _, name := range append(monitoring, "ConfigMap/rmq-rocketmq-operator-dashboard") {
		if _, ok := objs[name]; ok {
			t.Errorf("%s rendered by default", name)
		}
	}
	noCRDs := render(t, allMonitoring())
	for _, name := range monitoring {
		if _, ok := noCRDs[name]; ok {
			t.Errorf("%s rendered without its CRD", name)
		}
	}
	cm, ok := noCRDs["ConfigMap/rmq-rocketmq-operator-dashboard"]
	if !ok {
		t.Fatal("no dashboard ConfigMap")
	}
	if cm["metadata"].(map[string]any)["labels"].(map[string]any)["grafana_dashboard"] != "1" {
		t.Errorf("dashboard labels %v", cm["metadata"])
	}
	var dash map[string]any
	if err := json.Unmarshal([]byte(cm["data"].(map[string]any)["rocketmq.json"].(string)), &dash); err != nil {
		t.Fatalf("dashboard JSON in the ConfigMap: %v", err)
	}
	withCRDs := renderWith(t, allMonitoring(), monitoringAPIs...)
	for _, name := range monitoring {
		if _, ok := withCRDs[name]; !ok {
			t.Errorf("%s not rendered where its CRD exists", name)
		}
	}
	ep := withCRDs["ServiceMonitor/rmq-rocketmq-operator-brokers"]["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
	if ep["port"] != "metrics" {
		t.Errorf("broker ServiceMonitor endpoint %v", ep)
	}
}

var metricRef = regexp.MustCompile(`\b(rocketmq_[a-z0-9_]+)`)

// known returns the metric families brokers, name servers and the operator export.
func known() map[string]bool {
	out := map[string]bool{}
	for _, list := range [][]string{broker.MetricNames(), namesrv.MetricNames(), controllers.MetricNames()} {
		for _, n := range list {
			out[n] = true
		}
	}
	return out
}

// refs lists the rocketmq_* metrics text refers to that no component exports
// (histogram series _bucket, _sum and _count count as their family).
func unknownRefs(text string, known map[string]bool) []string {
	var bad []string
	for _, m := range metricRef.FindAllStringSubmatch(text, -1) {
		name := m[1]
		base := name
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suf); ok && known[b] {
				base = b
			}
		}
		if !known[base] && !slices.Contains(bad, name) {
			bad = append(bad, name)
		}
	}
	return bad
}

// Every query of the dashboard and every alert refers only to metrics that exist.
func TestDashboardAndAlertsUseExistingMetrics(t *testing.T) {
	k := known()
	for _, must := range []string{"rocketmq_messages_in_total", "rocketmq_consumer_lag_messages", "rocketmq_rpc_latency", "rocketmq_namesrv_brokers"} {
		if !k[must] {
			t.Fatalf("%s not among the known metrics %v", must, k)
		}
	}
	raw, err := os.ReadFile("rocketmq-operator/files/dashboards/rocketmq.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	queries := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queries++
			if bad := unknownRefs(tg.Expr, k); len(bad) > 0 {
				t.Errorf("panel %q queries unknown metrics %v: %s", p.Title, bad, tg.Expr)
			}
		}
	}
	for _, v := range dash.Templating.List {
		if bad := unknownRefs(v.Definition, k); len(bad) > 0 {
			t.Errorf("variable %q queries unknown metrics %v", v.Definition, bad)
		}
	}
	if queries < 20 {
		t.Errorf("only %d queries in the dashboard", queries)
	}
	rule := renderWith(t, allMonitoring(), monitoringAPIs...)["PrometheusRule/rmq-rocketmq-operator"]
	groups := rule["spec"].(map[string]any)["groups"].([]any)
	alerts := 0
	for _, g := range groups {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			r := r.(map[string]any)
			alerts++
			if bad := unknownRefs(r["expr"].(string), k); len(bad) > 0 {
				t.Errorf("alert %v uses unknown metrics %v", r["alert"], bad)
			}
		}
	}
	if alerts < 7 {
		t.Errorf("%d alerts", alerts)
	}
}
