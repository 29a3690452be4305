package metrics

import (
	"bytes"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func testExposition(t *testing.T) *Exposition {
	e := New(prometheus.Labels{"cluster": `c"1`, "node_type": "broker"}, "test_series_dropped")
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_plain_total", Help: "A registry counter."})
	c.Add(3)
	if err := e.Register(c); err != nil {
		t.Fatal(err)
	}
	e.Add(&Family{Name: "test_topic_messages_total", Help: "Per topic.\nSecond line \\ done.", Type: Counter,
		Labels: []string{"topic"}, Limit: 2,
		Collect: func(em *Emitter) {
			em.Emit(1, "a")
			em.Emit(2.5, `we"ird\`)
			em.Emit(7, "dropped by the limit")
		}},
		&Family{Name: "test_empty", Help: "No series.", Type: Gauge, Collect: func(*Emitter) {}},
	)
	return e
}

// The text path writes what Gather says, escaped as the format wants, with HELP and TYPE
// only for families with series, limits applied and reported.
func TestWriteToMatchesGather(t *testing.T) {
	e := testExposition(t)
	var buf bytes.Buffer
	if _, err := e.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	if strings.Contains(text, "# HELP test_empty") {
		t.Errorf("a family without series is written:\n%s", text)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	gathered, err := e.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range gathered {
		if !strings.HasPrefix(mf.GetName(), "test_") {
			continue
		}
		got, ok := parsed[mf.GetName()]
		if !ok {
			t.Errorf("%s gathered, not written", mf.GetName())
			continue
		}
		if len(got.Metric) != len(mf.Metric) || got.GetHelp() != mf.GetHelp() || got.GetType() != mf.GetType() {
			t.Errorf("%s: written %v\ngathered %v", mf.GetName(), got, mf)
		}
	}
	if n := len(parsed["test_topic_messages_total"].Metric); n != 2 {
		t.Errorf("%d series past a limit of 2", n)
	}
	if err := testutil.GatherAndCompare(e, strings.NewReader(`
# HELP test_series_dropped Series left out of the last scrape by metricsSeriesLimit, by metric family.
# TYPE test_series_dropped gauge
test_series_dropped{cluster="c\"1",metric="test_empty",node_type="broker"} 0
test_series_dropped{cluster="c\"1",metric="test_topic_messages_total",node_type="broker"} 1
`), "test_series_dropped"); err != nil {
		t.Error(err)
	}
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range problems {
		t.Errorf("lint %s: %s", pr.Metric, pr.Text)
	}
	if names := e.Names(); strings.Join(names, ",") != "test_empty,test_plain_total,test_series_dropped,test_topic_messages_total" {
		t.Errorf("Names() = %v", names)
	}
}

func TestParseLabelsAndExporterType(t *testing.T) {
	if m, err := ParseLabels(" env:prod , team:mq"); err != nil || m["env"] != "prod" || m["team"] != "mq" {
		t.Errorf("ParseLabels: %v %v", m, err)
	}
	for _, bad := range []string{"novalue", "bad-name:x", "__reserved:x"} {
		if _, err := ParseLabels(bad); err == nil {
			t.Errorf("ParseLabels(%q) accepted", bad)
		}
	}
	for v, ok := range map[string]bool{"PROM": true, "DISABLE": true, "": true, "OTLP_GRPC": false, "prom": false} {
		if err := CheckExporterType(v); (err == nil) != ok {
			t.Errorf("CheckExporterType(%q) = %v", v, err)
		}
	}
}
