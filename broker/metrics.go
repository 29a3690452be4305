package broker

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/metrics"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// Metrics (metricsExporterType=PROM): RocketMQ 5's names and labels where the meaning is
// the same, so that its dashboards and alerts carry over; docs/metrics.md lists them all.
//
// What the request path does per message is kept to lock-free map reads and atomic adds:
// the per-topic and per-topic-and-group counters live in tables (metricsTable) whose
// entries are resolved once per key, the RPC histograms likewise per (request code,
// response code, long-poll, result). Everything else is read at scrape time from the
// state that exists anyway (store positions, offsets, the client registry, the HA
// server), by the collectors in metrics_scrape.go. A broker without metrics has a nil
// *brokerMetrics, and every method below is a nil check.

// messageType is RocketMQ 5's message_type label (TopicMessageType.getMetricsValue).
type messageType int

const (
	msgNormal messageType = iota
	msgFIFO
	msgDelay
	msgTransaction
	numMessageTypes
)

var messageTypeNames = [numMessageTypes]string{"normal", "fifo", "delay", "transaction"}

// overflowLabel is the topic and consumer_group value of the series that counts what
// metricsSeriesLimit kept out of series of its own.
const overflowLabel = "_overflow"

type brokerMetrics struct {
	b   *Broker
	exp *metrics.Exposition
	srv *metrics.Server

	in  *metricsTable[string, topicIn]
	out *metricsTable[topicGroup, trafficOut]
	dlq *metricsTable[topicGroup, atomic.Int64]
	rpc *metricsTable[rpcKey, rpcSeries]

	rpcVec      *prometheus.HistogramVec
	msgSize     [numMessageTypes]prometheus.Observer
	putLatency  prometheus.Histogram
	groupCommit prometheus.Histogram
	aclRefused  *prometheus.CounterVec

	registeredMu sync.Mutex
	registered   map[string]bool // name server -> the last registration succeeded

	lag lagState // computed once per scrape, read by the lag families
}

type topicIn struct {
	system      bool
	msgs, bytes [numMessageTypes]atomic.Int64
}

type topicGroup struct{ topic, group string }

type trafficOut struct {
	retry, system bool
	msgs, bytes   atomic.Int64
}

type rpcKey struct {
	req, resp int16
	held      bool
	result    rpcResult
}

type rpcResult int8

const (
	rpcSuccess rpcResult = iota
	rpcOneway
	rpcWriteFailed
)

var rpcResultNames = [...]string{"success", "oneway", "write_channel_failed"}

type rpcSeries struct{ o prometheus.Observer }

// newBrokerMetrics builds the broker's metrics; they are served once startMetrics runs.
func newBrokerMetrics(b *Broker, c *config.Config) (*brokerMetrics, error) {
	constant := prometheus.Labels{}
	extra, err := metrics.ParseLabels(c.MetricsLabel)
	if err != nil {
		return nil, fmt.Errorf("metricsLabel: %w", err)
	}
	for k, v := range extra {
		constant[k] = v
	}
	// RocketMQ 5 labels every series with the cluster, node type and node id (the broker
	// name); broker_id tells a group's master (0) from its slaves.
	constant["cluster"] = c.BrokerClusterName
	constant["node_type"] = "broker"
	constant["node_id"] = c.BrokerName
	constant["broker_id"] = fmt.Sprint(c.BrokerID)
	m := &brokerMetrics{
		b:          b,
		exp:        metrics.New(constant, "rocketmq_metrics_series_dropped"),
		registered: map[string]bool{},
	}
	limit := c.MetricsSeriesLimit
	m.in = newMetricsTable(limit, func(topic string) *topicIn { return &topicIn{system: b.isSystemTopic(topic)} })
	m.out = newMetricsTable(limit, func(k topicGroup) *trafficOut {
		return &trafficOut{retry: isRetryTopic(k.topic), system: b.isSystemTopic(k.topic) || isSystemGroup(k.group)}
	})
	m.dlq = newMetricsTable(limit, func(topicGroup) *atomic.Int64 { return new(atomic.Int64) })

	m.rpcVec = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rocketmq_rpc_latency",
		Help:    "Time in milliseconds from a request's arrival to its response being queued on the connection (pool queue and long-poll hold included), by request and response code.",
		Buckets: metrics.LatencyBuckets,
	}, []string{"protocol_type", "request_code", "response_code", "is_long_polling", "result"})
	m.rpc = newMetricsTable(0, func(k rpcKey) *rpcSeries {
		return &rpcSeries{m.rpcVec.WithLabelValues("remoting", remoting.RequestCodeName(k.req),
			remoting.ResponseCodeName(k.resp), fmt.Sprint(k.held), rpcResultNames[k.result])}
	})
	sizeVec := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "rocketmq_message_size",
		Help: "Size in bytes of the messages stored by sends (the stored record), by message type.",
		// RocketMQ 5's: 1 KiB, 4 KiB, 512 KiB, 1, 2, 4 MiB.
		Buckets: []float64{1 << 10, 4 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20},
	}, []string{"message_type"})
	for t := range numMessageTypes {
		m.msgSize[t] = sizeVec.WithLabelValues(messageTypeNames[t])
	}
	m.putLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "rocketmq_storage_put_latency",
		Help:    "Time in milliseconds a send spends in the store: the commitlog append, plus the group commit's fdatasync under SYNC_FLUSH.",
		Buckets: metrics.LatencyBuckets,
	})
	m.groupCommit = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "rocketmq_storage_group_commit_batch_size",
		Help:    "Appends (sends) acknowledged by one SYNC_FLUSH group commit's fdatasync.",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
	})
	m.aclRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rocketmq_acl_refused_total",
		Help: "Requests the plain ACL refused, by request code.",
	}, []string{"request_code"})
	if err := m.exp.Register(m.rpcVec, sizeVec, m.putLatency, m.groupCommit, m.aclRefused, scrapeCollector{m}); err != nil {
		return nil, err
	}
	m.exp.OnScrape(m.beforeScrape)
	m.exp.Add(m.families()...)
	return m, nil
}

// MetricNames lists every metric family a broker can export (dashboards and alerts are
// checked against it).
func MetricNames() []string {
	c := config.Default()
	m, err := newBrokerMetrics(&Broker{}, c)
	if err != nil {
		panic(err)
	}
	return m.exp.Names()
}

// start serves /metrics on metricsPromExporterHost:metricsPromExporterPort.
func (m *brokerMetrics) start(c config.Config) error {
	if m == nil {
		return nil
	}
	srv, err := metrics.Serve(c.MetricsAddr(), m.exp, m.b.log)
	if err != nil {
		return fmt.Errorf("broker: metrics endpoint (metricsPromExporterPort): %w", err)
	}
	m.srv = srv
	m.b.log.Info("metrics served", "addr", "http://"+srv.Addr()+"/metrics")
	return nil
}

func (m *brokerMetrics) close() {
	if m != nil && m.srv != nil {
		m.srv.Close()
	}
}

// MetricsAddr is the address /metrics is served on, "" without metrics.
func (b *Broker) MetricsAddr() string {
	if b.metrics == nil || b.metrics.srv == nil {
		return ""
	}
	return b.metrics.srv.Addr()
}

// sent counts a stored send of msgs messages, bytes in all, to topic (the topic the
// producer named, before any redirection to the schedule, half or DLQ topic).
func (m *brokerMetrics) sent(topic string, t messageType, msgs, bytes int) {
	if m == nil {
		return
	}
	e := m.in.get(topic)
	e.msgs[t].Add(int64(msgs))
	e.bytes[t].Add(int64(bytes))
	m.msgSize[t].Observe(float64(bytes / max(msgs, 1)))
}

// metricsEpoch anchors monoNow.
var metricsEpoch = time.Now()

// monoNow reads the monotonic clock only (nanoseconds since the process started): half
// what time.Now costs, which reads the wall clock too.
func monoNow() int64 { return int64(time.Since(metricsEpoch)) }

// putStart is when a send's store work begins (0 without metrics).
func (m *brokerMetrics) putStart() int64 {
	if m == nil {
		return 0
	}
	return monoNow()
}

// stored records how long a send spent in the store (append, and flush when waited
// for) since start, a putStart.
func (m *brokerMetrics) stored(start int64) {
	if m == nil {
		return
	}
	m.putLatency.Observe(float64(monoNow()-start) / 1e6)
}

// pulled counts a pull that found msgs messages of bytes in all.
func (m *brokerMetrics) pulled(topic, group string, msgs, bytes int) {
	if m == nil {
		return
	}
	e := m.out.get(topicGroup{topic, group})
	e.msgs.Add(int64(msgs))
	e.bytes.Add(int64(bytes))
}

// toDLQ counts a message of group's that went to its dead letter queue; topic is the
// topic it was first sent to (its RETRY_TOPIC property, when set).
func (m *brokerMetrics) toDLQ(group string, msg *message.Message, fallbackTopic string) {
	if m == nil {
		return
	}
	topic := fallbackTopic
	if v, ok := message.LookupProperty(msg.Properties, message.PropertyRetryTopic); ok && len(v) > 0 {
		topic = v
	}
	m.dlq.get(topicGroup{topic, group}).Add(1)
}

// onReply is the remoting server's OnReply hook: rocketmq_rpc_latency.
func (m *brokerMetrics) onReply(req, resp *remoting.Command, elapsed time.Duration, err error) {
	k := rpcKey{req: req.Code, resp: resp.Code, held: req.Suspended}
	switch {
	case req.IsOneway():
		k.result = rpcOneway
	case err != nil:
		k.result = rpcWriteFailed
	}
	m.rpc.get(k).o.Observe(float64(elapsed.Nanoseconds()) / 1e6)
}

func (m *brokerMetrics) aclRefusal(code int16) {
	if m != nil {
		m.aclRefused.WithLabelValues(remoting.RequestCodeName(code)).Inc()
	}
}

func (m *brokerMetrics) registration(namesrv string, ok bool) {
	if m == nil {
		return
	}
	m.registeredMu.Lock()
	m.registered[namesrv] = ok
	m.registeredMu.Unlock()
}

func (m *brokerMetrics) onGroupCommit(n int) { m.groupCommit.Observe(float64(n)) }

// sendMessageType is the message_type of a send: the redirections the broker applied
// tell delay (SCHEDULE_TOPIC_XXXX) and transaction (the half topic) messages; 4.x
// clients do not mark ordered messages, so fifo is never seen.
func sendMessageType(requested string, stored *message.Message) messageType {
	switch stored.Topic {
	case requested:
		return msgNormal
	case protocol.ScheduleTopic:
		return msgDelay
	case protocol.TransHalfTopic:
		return msgTransaction
	}
	return msgNormal
}

// isSystemTopic is Java's TopicValidator.isSystemTopic: the broker's built-in topics and
// those named rmq_sys_*.
func (b *Broker) isSystemTopic(topic string) bool {
	return strings.HasPrefix(topic, "rmq_sys_") || b.topics.IsSystem(topic)
}

func isRetryTopic(topic string) bool { return strings.HasPrefix(topic, protocol.RetryGroupTopicPrefix) }

// isSystemGroup is Java's MixAll.isSysConsumerGroup.
func isSystemGroup(group string) bool { return strings.HasPrefix(group, "CID_RMQ_SYS_") }

// metricsTable maps keys (topics, topic and group pairs) to the counters the request
// path updates. Reads are lock-free for every key present at the last scrape; a new key
// takes the mutex until the next scrape promotes it. Past limit keys, new keys share one
// overflow entry (counted in folded), so that sums stay right while the series stay
// bounded.
type metricsTable[K comparable, V any] struct {
	read atomic.Pointer[map[K]*V]
	newV func(K) *V

	mu       sync.Mutex
	dirty    map[K]*V // keys not in read yet
	limit    int      // 0: none
	overflow *V
	folded   int // keys mapped to overflow
}

func newMetricsTable[K comparable, V any](limit int, newV func(K) *V) *metricsTable[K, V] {
	t := &metricsTable[K, V]{newV: newV, dirty: map[K]*V{}, limit: limit, overflow: new(V)}
	t.read.Store(&map[K]*V{})
	return t
}

func (t *metricsTable[K, V]) get(k K) *V {
	if v, ok := (*t.read.Load())[k]; ok {
		return v
	}
	return t.getSlow(k)
}

func (t *metricsTable[K, V]) getSlow(k K) *V {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := (*t.read.Load())[k]; ok {
		return v
	}
	if v, ok := t.dirty[k]; ok {
		return v
	}
	read := *t.read.Load()
	v := t.overflow
	if t.limit == 0 || len(read)+len(t.dirty)-t.folded < t.limit {
		v = t.newV(k)
	} else {
		t.folded++
	}
	t.dirty[k] = v
	// Make the new keys lock-free before the next scrape once they are an eighth of the
	// table: each key is copied a bounded number of times on average.
	if len(t.dirty)*8 >= len(read) {
		next := make(map[K]*V, len(read)+len(t.dirty))
		for k, v := range read {
			next[k] = v
		}
		for k, v := range t.dirty {
			next[k] = v
		}
		t.read.Store(&next)
		t.dirty = map[K]*V{}
	}
	return v
}

// promote makes every key lock-free to read and forgets those keep refuses (a deleted
// topic or group). Scrapes call it, one at a time.
func (t *metricsTable[K, V]) promote(keep func(K) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := *t.read.Load()
	if len(t.dirty) == 0 {
		gone := false
		for k := range old {
			if keep != nil && !keep(k) {
				gone = true
				break
			}
		}
		if !gone {
			return // nothing new, nothing deleted: the read map stays
		}
	}
	next := make(map[K]*V, len(old)+len(t.dirty))
	folded := 0
	for _, src := range []map[K]*V{old, t.dirty} {
		for k, v := range src {
			if keep != nil && !keep(k) {
				continue
			}
			next[k] = v
			if v == t.overflow {
				folded++
			}
		}
	}
	t.read.Store(&next)
	t.dirty = map[K]*V{}
	t.folded = folded
}

// each calls f for every key with its own entry, then once for the overflow entry when
// keys were folded into it (ok false). Call it after promote.
func (t *metricsTable[K, V]) each(f func(k K, v *V, ok bool)) (folded int) {
	for k, v := range *t.read.Load() {
		if v != t.overflow {
			f(k, v, true)
		}
	}
	t.mu.Lock()
	folded = t.folded
	t.mu.Unlock()
	if folded > 0 {
		var zero K
		f(zero, t.overflow, false)
	}
	return folded
}
