package namesrv

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openrmq/rocketmq-operator/pkg/metrics"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// The name server's metrics (metricsExporterType=PROM, the broker's keys; RocketMQ 5's
// name server exports none, so the names are ours, in RocketMQ 5's style). Counters move
// on registrations, removals and route lookups, none of them hot; the rest is read from
// the route table and the KV store at scrape time. docs/metrics.md lists them.
type nsMetrics struct {
	n   *NameServer
	exp *metrics.Exposition
	srv *metrics.Server

	rpc           *prometheus.HistogramVec
	registrations *prometheus.CounterVec
	removals      *prometheus.CounterVec
	lookups       *prometheus.CounterVec
}

// Registration results and removal reasons (label values).
const (
	regSuccess = "success"
	regRefused = "refused" // maxBrokersPerConnection
	regError   = "error"   // undecodable header or body, crc mismatch

	removedExpired      = "expired"
	removedConnClosed   = "connection_closed"
	removedUnregistered = "unregistered"
)

func newNSMetrics(n *NameServer, c Config) (*nsMetrics, error) {
	constant, err := metrics.ParseLabels(c.MetricsLabel)
	if err != nil {
		return nil, err
	}
	constant["node_type"] = "nameserver"
	constant["node_id"] = c.nodeID()
	m := &nsMetrics{n: n, exp: metrics.New(constant, "")}
	m.rpc = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rocketmq_rpc_latency",
		Help:    "Time in milliseconds from a request's arrival to its response being queued on the connection, by request and response code.",
		Buckets: metrics.LatencyBuckets,
	}, []string{"protocol_type", "request_code", "response_code", "is_long_polling", "result"})
	m.registrations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rocketmq_namesrv_registrations_total",
		Help: "REGISTER_BROKER requests, by result: success, refused (maxBrokersPerConnection) or error (undecodable, crc mismatch).",
	}, []string{"result"})
	m.removals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rocketmq_namesrv_broker_removals_total",
		Help: "Broker addresses removed from the route table, by why: expired (no registration within brokerChannelExpiredTime), connection_closed, unregistered.",
	}, []string{"reason"})
	m.lookups = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rocketmq_namesrv_route_lookups_total",
		Help: "GET_ROUTEINFO_BY_TOPIC requests, by result: found or not_found (TOPIC_NOT_EXIST).",
	}, []string{"result"})
	for _, r := range []string{regSuccess, regRefused, regError} {
		m.registrations.WithLabelValues(r)
	}
	for _, r := range []string{removedExpired, removedConnClosed, removedUnregistered} {
		m.removals.WithLabelValues(r)
	}
	for _, r := range []string{"found", "not_found"} {
		m.lookups.WithLabelValues(r)
	}
	if err := m.exp.Register(m.rpc, m.registrations, m.removals, m.lookups, nsCollector{m}); err != nil {
		return nil, err
	}
	return m, nil
}

// MetricNames lists every metric family a name server can export.
func MetricNames() []string {
	m, err := newNSMetrics(&NameServer{}, DefaultConfig())
	if err != nil {
		panic(err)
	}
	return m.exp.Names()
}

// nodeID is node_id: the listen address.
func (c Config) nodeID() string {
	host := c.BindAddress
	if host == "" {
		host = "0.0.0.0"
	}
	return host + ":" + strconv.Itoa(c.ListenPort)
}

func (m *nsMetrics) start(c Config) error {
	if m == nil {
		return nil
	}
	addr := c.MetricsPromExporterHost + ":" + strconv.Itoa(c.MetricsPromExporterPort)
	srv, err := metrics.Serve(addr, m.exp, m.n.log)
	if err != nil {
		return fmt.Errorf("namesrv: metrics endpoint (metricsPromExporterPort): %w", err)
	}
	m.srv = srv
	m.n.log.Info("metrics served", "addr", "http://"+srv.Addr()+"/metrics")
	return nil
}

func (m *nsMetrics) close() {
	if m != nil && m.srv != nil {
		m.srv.Close()
	}
}

func (m *nsMetrics) onReply(req, resp *remoting.Command, elapsed time.Duration, err error) {
	result := "success"
	switch {
	case req.IsOneway():
		result = "oneway"
	case err != nil:
		result = "write_channel_failed"
	}
	m.rpc.WithLabelValues("remoting", remoting.RequestCodeName(req.Code), remoting.ResponseCodeName(resp.Code),
		"false", result).Observe(float64(elapsed.Nanoseconds()) / 1e6)
}

func (m *nsMetrics) registration(result string) {
	if m != nil {
		m.registrations.WithLabelValues(result).Inc()
	}
}

func (m *nsMetrics) removed(reason string, n int) {
	if m != nil && n > 0 {
		m.removals.WithLabelValues(reason).Add(float64(n))
	}
}

func (m *nsMetrics) lookup(found bool) {
	if m == nil {
		return
	}
	if found {
		m.lookups.WithLabelValues("found").Inc()
	} else {
		m.lookups.WithLabelValues("not_found").Inc()
	}
}

// MetricsAddr is the address /metrics is served on, "" without metrics.
func (n *NameServer) MetricsAddr() string {
	if n.metrics == nil || n.metrics.srv == nil {
		return ""
	}
	return n.metrics.srv.Addr()
}

type nsCollector struct{ m *nsMetrics }

var (
	descBrokers    = prometheus.NewDesc("rocketmq_namesrv_brokers", "Broker addresses registered, by cluster, broker name (group) and role (master: brokerId 0, slave).", []string{"cluster", "broker_name", "role"}, nil)
	descTopics     = prometheus.NewDesc("rocketmq_namesrv_topics", "Topics with a route.", nil, nil)
	descKVEntries  = prometheus.NewDesc("rocketmq_namesrv_kv_entries", "KV config entries, by namespace.", []string{"namespace"}, nil)
	descNSConns    = prometheus.NewDesc("rocketmq_remoting_connections", "Open connections (brokers, clients, admin tools), by role: all are other here.", []string{"role"}, nil)
	descNSConnErrs = prometheus.NewDesc("rocketmq_remoting_connection_errors_total", "Connections closed or refused for what the peer did, by event: malformed and oversized frames, frame and idle timeouts, replies not read (unread), connection limits (refused).", []string{"event"}, nil)
)

func (c nsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBrokers, descTopics, descKVEntries, descNSConns, descNSConnErrs} {
		ch <- d
	}
}

func (c nsCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.m.n
	for k, count := range n.routes.brokerCounts() {
		ch <- prometheus.MustNewConstMetric(descBrokers, prometheus.GaugeValue, float64(count), k.cluster, k.name, k.role)
	}
	ch <- prometheus.MustNewConstMetric(descTopics, prometheus.GaugeValue, float64(n.routes.topicCount()))
	for ns, count := range n.kv.counts() {
		ch <- prometheus.MustNewConstMetric(descKVEntries, prometheus.GaugeValue, float64(count), ns)
	}
	st := n.srv.Stats()
	ch <- prometheus.MustNewConstMetric(descNSConns, prometheus.GaugeValue, float64(st.Conns), "other")
	for _, ev := range remoting.ConnEvents() {
		ch <- prometheus.MustNewConstMetric(descNSConnErrs, prometheus.CounterValue, float64(st.Events[ev]), ev.Name())
	}
}

type brokerKey struct{ cluster, name, role string }

// brokerCounts counts the registered addresses by cluster, broker name and role.
func (t *routeTable) brokerCounts() map[brokerKey]int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := map[brokerKey]int{}
	for name, g := range t.groups {
		for id := range g.data.BrokerAddrs {
			role := "slave"
			if id == 0 {
				role = "master"
			}
			out[brokerKey{g.data.Cluster, name, role}]++
		}
	}
	return out
}

func (t *routeTable) topicCount() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.topicQueues)
}

// counts returns the entries of each namespace.
func (s *kvStore) counts() map[string]int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]int, len(s.table))
	for ns, m := range s.table {
		out[ns] = len(m)
	}
	return out
}
