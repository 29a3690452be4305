// Package metrics serves Prometheus metrics for the broker and the name server: a
// client_golang registry for the metrics of bounded cardinality (histograms, store
// gauges, the Go runtime), plus Families, metric families with a series per topic or
// per topic and group, written straight in the text exposition format.
//
// Why two kinds: client_golang's registry builds a protobuf message per series, sorts
// and checks them on every scrape, which costs microseconds per series; a broker with
// 10,000 topics and their groups has tens of thousands of such series, and a scrape must
// stay well under Prometheus' scrape timeout without taking the CPUs from the traffic.
// A Family writes a series in about a tenth of that. Gather gives the same families as
// client_golang's data model too, for tests and for linting (promlint).
package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// Config keys shared by the broker and the name server: RocketMQ 5's metricsExporterType,
// metricsPromExporterPort and metricsPromExporterHost.
const (
	ExporterDisable = "DISABLE"
	ExporterProm    = "PROM"
	// DefaultPort is RocketMQ 5's metricsPromExporterPort default.
	DefaultPort = 5557
	// DefaultSeriesLimit is metricsSeriesLimit's default: the most series one family
	// keeps (see Family.Limit).
	DefaultSeriesLimit = 50000
)

// CheckExporterType refuses what this project cannot export: RocketMQ 5 also knows
// OTLP_GRPC and LOG, which need an OpenTelemetry collector or a log pipeline.
func CheckExporterType(v string) error {
	switch v {
	case ExporterDisable, ExporterProm, "":
		return nil
	case "OTLP_GRPC", "LOG":
		return fmt.Errorf("%s is not supported here: only PROM (a /metrics endpoint) or DISABLE", v)
	}
	return fmt.Errorf("must be PROM or DISABLE")
}

// ParseLabels parses RocketMQ 5's metricsLabel, "k1:v1,k2:v2": constant labels added to
// every series. Names must be Prometheus label names.
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, ":")
		k = strings.TrimSpace(k)
		if !ok || !labelName.MatchString(k) || strings.HasPrefix(k, "__") {
			return nil, fmt.Errorf("%q is not name:value with a Prometheus label name", kv)
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, nil
}

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// LatencyBuckets are the bounds, in milliseconds, of the latency histograms: RocketMQ 5's
// rocketmq_rpc_latency buckets (1, 3, 5, 7, 10, 100 ms, 1, 2, 3 s) with three more
// below a millisecond, where most of this broker's requests finish.
var LatencyBuckets = []float64{0.1, 0.25, 0.5, 1, 3, 5, 7, 10, 100, 1000, 2000, 3000}

// Type is a Family's metric type.
type Type int

const (
	Counter Type = iota
	Gauge
)

func (t Type) String() string {
	if t == Counter {
		return "counter"
	}
	return "gauge"
}

// Family is a metric family whose series a function lists at scrape time.
type Family struct {
	Name   string
	Help   string
	Type   Type
	Labels []string // names of the values Collect emits, in that order
	// Limit is the most series written per scrape (0: no limit); the rest are dropped
	// and counted in the exposition's series-dropped gauge.
	Limit int
	// PlainValues says no label value ever needs escaping (no backslash, newline or
	// double quote: topic and group names, which the broker validates, booleans, fixed
	// words), so the writer copies them as they are.
	PlainValues bool
	// Collect emits every series: e.Emit(value, labelValues...) with one value per
	// label in Labels.
	Collect func(e *Emitter)
}

// Emitter receives a Family's series.
type Emitter struct {
	f       *Family
	n       int // series emitted
	dropped int
	// exactly one of these is set
	text *textWriter
	mf   *dto.MetricFamily
}

// Emit adds one series. It panics if the number of label values is wrong (a programming
// error, as in client_golang).
func (e *Emitter) Emit(v float64, labelValues ...string) {
	if len(labelValues) != len(e.f.Labels) {
		panic(fmt.Sprintf("metrics: %s: %d label values for %d labels", e.f.Name, len(labelValues), len(e.f.Labels)))
	}
	if e.f.Limit > 0 && e.n >= e.f.Limit {
		e.dropped++
		return
	}
	e.n++
	if e.text != nil {
		e.text.series(e.f, v, labelValues)
		return
	}
	m := &dto.Metric{Label: make([]*dto.LabelPair, 0, len(labelValues))}
	for i, name := range e.f.Labels {
		m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(name), Value: proto.String(labelValues[i])})
	}
	if e.f.Type == Counter {
		m.Counter = &dto.Counter{Value: proto.Float64(v)}
	} else {
		m.Gauge = &dto.Gauge{Value: proto.Float64(v)}
	}
	e.mf.Metric = append(e.mf.Metric, m)
}

// Dropped counts n series the family left out or folded together by a limit of its own
// (reported like those Limit drops).
func (e *Emitter) Dropped(n int) { e.dropped += n }

// Exposition is everything one process exports: a registry and families, with the same
// constant labels on every series (RocketMQ 5's cluster, node_type, node_id).
type Exposition struct {
	reg         *prometheus.Registry
	constant    prometheus.Labels
	prefix      []byte // the constant labels, rendered: `cluster="c",node_type="broker"`
	droppedName string // the gauge of series Family limits dropped ("" for none)

	mu         sync.Mutex // serialises scrapes: families may keep state between them
	families   []*Family
	collectors []prometheus.Collector // registered through Register
	onScrape   []func()
	lastSize   atomic.Int64 // the last scrape's size, to size the next one's buffer
}

// New returns an exposition whose series all carry constant. The registry has the Go
// runtime and process collectors. droppedName is the name of the gauge that tells how
// many series Family limits left out, by family (label "metric").
func New(constant prometheus.Labels, droppedName string) *Exposition {
	e := &Exposition{reg: prometheus.NewRegistry(), constant: constant, droppedName: droppedName}
	names := make([]string, 0, len(constant))
	for k := range constant {
		names = append(names, k)
	}
	sort.Strings(names)
	for i, k := range names {
		if i > 0 {
			e.prefix = append(e.prefix, ',')
		}
		e.prefix = appendLabel(e.prefix, k, constant[k])
	}
	e.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return e
}

// Register registers collectors whose series get the constant labels.
func (e *Exposition) Register(cs ...prometheus.Collector) error {
	reg := prometheus.WrapRegistererWith(e.constant, e.reg)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	e.mu.Lock()
	e.collectors = append(e.collectors, cs...)
	e.mu.Unlock()
	return nil
}

// Names lists every metric family the exposition can export, registered collectors and
// Families (not the Go runtime's and process collectors'): what dashboards and alerts may
// refer to, whether or not a series exists yet.
func (e *Exposition) Names() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range e.collectors {
			c.Describe(ch)
		}
		close(ch)
	}()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			seen[m[1]] = true
		}
	}
	for _, f := range e.families {
		seen[f.Name] = true
	}
	if e.droppedName != "" {
		seen[e.droppedName] = true
	}
	return sortedKeys(seen)
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// OnScrape adds a function run at the start of every scrape, before the families, one
// scrape at a time: the place to compute what several families share.
func (e *Exposition) OnScrape(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.onScrape = append(e.onScrape, f)
}

// Add adds families; their names must differ from each other and from the registry's.
func (e *Exposition) Add(fs ...*Family) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.families = append(e.families, fs...)
}

// WriteTo writes the text exposition format (version 0.0.4): the registry's families,
// then the Families, then the series-dropped gauge.
func (e *Exposition) WriteTo(w io.Writer) (int64, error) {
	mfs, err := e.reg.Gather()
	if err != nil {
		return 0, err
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	buf.Grow(int(e.lastSize.Load())) // one allocation instead of a doubling series
	enc := expfmt.NewEncoder(buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return 0, err
		}
	}
	tw := &textWriter{buf: buf, prefix: e.prefix}
	e.mu.Lock()
	for _, f := range e.onScrape {
		f()
	}
	drops := map[string]int{}
	for _, f := range e.families {
		em := &Emitter{f: f, text: tw}
		tw.pending = f
		f.Collect(em)
		drops[f.Name] = em.dropped
	}
	e.mu.Unlock()
	if e.droppedName != "" {
		e.writeDropped(tw, drops)
	}
	e.lastSize.Store(int64(buf.Len() + buf.Len()/8))
	n, err := w.Write(buf.Bytes())
	return int64(n), err
}

func (e *Exposition) droppedFamily(drops map[string]int) *Family {
	return &Family{
		Name: e.droppedName, Type: Gauge, Labels: []string{"metric"},
		Help: "Series left out of the last scrape by metricsSeriesLimit, by metric family.",
		Collect: func(em *Emitter) {
			for _, name := range sortedKeys(drops) {
				em.Emit(float64(drops[name]), name)
			}
		},
	}
}

func (e *Exposition) writeDropped(tw *textWriter, drops map[string]int) {
	f := e.droppedFamily(drops)
	tw.pending = f
	f.Collect(&Emitter{f: f, text: tw})
}

// Gather returns the registry's and the families' metrics in client_golang's data model
// (a prometheus.Gatherer), for tests and linting. It runs the families' Collect like a
// scrape does.
func (e *Exposition) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := e.reg.Gather()
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	for _, f := range e.onScrape {
		f()
	}
	drops := map[string]int{}
	for _, f := range e.families {
		mf, dropped := e.gatherFamily(f)
		if len(mf.Metric) > 0 {
			mfs = append(mfs, mf)
		}
		drops[f.Name] = dropped
	}
	e.mu.Unlock()
	if e.droppedName != "" {
		if mf, _ := e.gatherFamily(e.droppedFamily(drops)); len(mf.Metric) > 0 {
			mfs = append(mfs, mf)
		}
	}
	return mfs, nil
}

func (e *Exposition) gatherFamily(f *Family) (*dto.MetricFamily, int) {
	t := dto.MetricType_COUNTER
	if f.Type == Gauge {
		t = dto.MetricType_GAUGE
	}
	mf := &dto.MetricFamily{Name: proto.String(f.Name), Help: proto.String(f.Help), Type: &t}
	em := &Emitter{f: f, mf: mf}
	f.Collect(em)
	for _, m := range mf.Metric {
		for k, v := range e.constant {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(k), Value: proto.String(v)})
		}
		sort.Slice(m.Label, func(i, j int) bool { return m.Label[i].GetName() < m.Label[j].GetName() })
	}
	return mf, em.dropped
}

// ServeHTTP serves /metrics in the text format.
func (e *Exposition) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	if _, err := e.WriteTo(w); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Server is a running /metrics endpoint.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Serve listens on addr and serves e at /metrics until Close.
func Serve(addr string, e *Exposition, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", e)
	s := &Server{ln: ln, srv: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics: serving stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops serving and waits (up to 5 s) for scrapes under way, which read the
// process's state: the caller closes that state after Close.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	return nil
}

// textWriter renders series in the text format.
type textWriter struct {
	buf     *bytes.Buffer
	prefix  []byte
	line    []byte
	pending *Family // its HELP and TYPE go out with its first series
}

func (t *textWriter) header(f *Family) {
	b := t.line[:0]
	b = append(b, "# HELP "...)
	b = append(b, f.Name...)
	b = append(b, ' ')
	b = appendEscaped(b, f.Help, false)
	b = append(b, "\n# TYPE "...)
	b = append(b, f.Name...)
	b = append(b, ' ')
	b = append(b, f.Type.String()...)
	b = append(b, '\n')
	t.buf.Write(b)
	t.line = b
}

func (t *textWriter) series(f *Family, v float64, values []string) {
	if t.pending == f {
		t.header(f)
		t.pending = nil
	}
	b := t.line[:0]
	b = append(b, f.Name...)
	b = append(b, '{')
	b = append(b, t.prefix...)
	for i, name := range f.Labels {
		if i > 0 || len(t.prefix) > 0 {
			b = append(b, ',')
		}
		if f.PlainValues {
			b = append(b, name...)
			b = append(b, `="`...)
			b = append(b, values[i]...)
			b = append(b, '"')
			continue
		}
		b = appendLabel(b, name, values[i])
	}
	b = append(b, "} "...)
	b = appendFloat(b, v)
	b = append(b, '\n')
	t.buf.Write(b)
	t.line = b
}

func appendLabel(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, `="`...)
	b = appendEscaped(b, value, true)
	return append(b, '"')
}

// appendEscaped escapes as the text format requires: backslash and newline, and in label
// values the double quote.
func appendEscaped(b []byte, s string, quote bool) []byte {
	if !needsEscape(s) {
		return append(b, s...) // topic and group names never need it
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\\' || c == '\n' || c == '"' {
			return true
		}
	}
	return false
}

func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.AppendInt(b, int64(v), 10)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
