package broker

import (
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/broker/metadata"
	"github.com/openrmq/rocketmq-operator/broker/retry"
	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/pkg/metrics"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// What a scrape reads, beside the counters of metrics.go. The per-topic and per-group
// families are metrics.Families (written straight as text, bounded by
// metricsSeriesLimit); the rest are const metrics of scrapeCollector.

// lagRow is one group's backlog in one topic.
type lagRow struct {
	topic, group  string
	retry, system bool
	lag           int64 // messages stored past the group's offsets, all queues together
	oldest        int64 // store time (ms) of the oldest of them; 0 when lag is 0
}

type lagState struct {
	// the topics (with their queue counts) and groups that exist, and the committed
	// offsets, as of this scrape; reused between scrapes
	topics  map[string]int32
	groups  map[string]bool
	offsets []metadata.QueueOffset
	rows    []lagRow
	folded  int // rows past metricsSeriesLimit
	at      int64
	// storeTimes remembers, per queue, the store time of the message at the offset a
	// group stood at in the last scrape: a group that did not move (the one that lags)
	// costs a map lookup instead of a consume-queue and commitlog read. prev is the last
	// scrape's, so queues no longer looked at are forgotten.
	storeTimes, prevTimes map[queueAt]int64
}

type queueAt struct {
	topic string
	qid   int32
	off   int64
}

// storeTime is the store time of the message at off in the queue, from the last scrape
// when it was looked up then.
func (st *lagState) storeTime(s *store.Store, topic string, qid int32, off int64) int64 {
	k := queueAt{topic, qid, off}
	if ts, ok := st.storeTimes[k]; ok {
		return ts
	}
	ts, ok := st.prevTimes[k]
	if !ok {
		ts = max(s.MessageStoreTime(topic, qid, off), 0)
	}
	if ts > 0 {
		st.storeTimes[k] = ts
	}
	return ts
}

// beforeScrape promotes new table keys, forgets those of deleted topics and groups, and
// computes the lag once for both lag families.
func (m *brokerMetrics) beforeScrape() {
	b, st := m.b, &m.lag
	if st.topics == nil {
		st.topics, st.groups = map[string]int32{}, map[string]bool{}
	}
	b.topics.QueueCounts(st.topics)
	b.groups.NameSet(st.groups)
	topicExists := func(t string) bool { _, ok := st.topics[t]; return ok }
	m.in.promote(topicExists)
	m.out.promote(func(k topicGroup) bool { return topicExists(k.topic) && st.groups[k.group] })
	m.dlq.promote(func(k topicGroup) bool { return st.groups[k.group] })
	m.computeLag()
}

// computeLag is Java's ConsumerLagCalculator over the committed offsets: for every group
// and topic that exist and the group has offsets in, the messages stored past its offset
// in each queue of the topic (from the queue's first message for a queue it has no
// offset in), and the store time of the oldest of them.
func (m *brokerMetrics) computeLag() {
	b, st := m.b, &m.lag
	st.offsets = b.offsets.AppendAll(st.offsets[:0])
	st.rows = st.rows[:0]
	st.folded = 0
	st.at = time.Now().UnixMilli()
	st.prevTimes, st.storeTimes = st.storeTimes, st.prevTimes
	if st.storeTimes == nil {
		st.storeTimes = map[queueAt]int64{}
	}
	clear(st.storeTimes)
	limit := b.cfg.Get().MetricsSeriesLimit
	for i := 0; i < len(st.offsets); {
		j := i + 1
		for j < len(st.offsets) && !st.offsets[j].First {
			j++
		}
		run := st.offsets[i:j]
		i = j
		topic, group := run[0].Topic, run[0].Group
		queues, ok := st.topics[topic]
		if !ok || !st.groups[group] {
			continue
		}
		if limit > 0 && len(st.rows) >= limit {
			st.folded++
			continue
		}
		row := lagRow{topic: topic, group: group, retry: isRetryTopic(topic), system: b.isSystemTopic(topic) || isSystemGroup(group)}
		for q := range queues {
			maxOff := b.store.MaxOffsetInQueue(topic, q)
			off := int64(-1)
			for _, c := range run { // a handful of queues: a scan beats a map
				if c.QueueID == q {
					off = c.Offset
					break
				}
			}
			if off < 0 {
				off = b.store.MinOffsetInQueue(topic, q)
			}
			if maxOff <= off {
				continue
			}
			ts := st.storeTime(b.store, topic, q, off)
			if ts <= 0 {
				// Gone to retention: what is left starts at the queue's first message.
				if minOff := b.store.MinOffsetInQueue(topic, q); minOff > off {
					off = minOff
					ts = st.storeTime(b.store, topic, q, off)
				}
			}
			row.lag += max(maxOff-off, 0)
			if ts > 0 && (row.oldest == 0 || ts < row.oldest) {
				row.oldest = ts
			}
		}
		st.rows = append(st.rows, row)
	}
}

func boolLabel(v bool) string { return strconv.FormatBool(v) }

// families are the per-topic and per-group metric families.
func (m *brokerMetrics) families() []*metrics.Family {
	inLabels := []string{"topic", "message_type", "is_system"}
	outLabels := []string{"topic", "consumer_group", "is_retry", "is_system"}
	in := func(bytes bool) func(e *metrics.Emitter) {
		return func(e *metrics.Emitter) {
			e.Dropped(m.in.each(func(topic string, v *topicIn, ok bool) {
				if !ok {
					topic = overflowLabel
				}
				for t := range numMessageTypes {
					c := &v.msgs[t]
					if bytes {
						c = &v.bytes[t]
					}
					if n := c.Load(); n > 0 || t == msgNormal {
						e.Emit(float64(n), topic, messageTypeNames[t], boolLabel(v.system))
					}
				}
			}))
		}
	}
	out := func(bytes bool) func(e *metrics.Emitter) {
		return func(e *metrics.Emitter) {
			e.Dropped(m.out.each(func(k topicGroup, v *trafficOut, ok bool) {
				if !ok {
					k = topicGroup{overflowLabel, overflowLabel}
				}
				n := v.msgs.Load()
				if bytes {
					n = v.bytes.Load()
				}
				e.Emit(float64(n), k.topic, k.group, boolLabel(v.retry), boolLabel(v.system))
			}))
		}
	}
	lag := func(latency bool) func(e *metrics.Emitter) {
		return func(e *metrics.Emitter) {
			st := &m.lag
			for _, r := range st.rows {
				v := float64(r.lag)
				if latency {
					v = 0
					if r.oldest > 0 {
						v = float64(max(st.at-r.oldest, 0))
					}
				}
				e.Emit(v, r.topic, r.group, boolLabel(r.retry), boolLabel(r.system))
			}
			e.Dropped(st.folded)
		}
	}
	fs := []*metrics.Family{
		{Name: "rocketmq_messages_in_total", Type: metrics.Counter, Labels: inLabels, Collect: in(false),
			Help: "Messages stored by sends, by the topic the producer named and message type."},
		{Name: "rocketmq_throughput_in_total", Type: metrics.Counter, Labels: inLabels, Collect: in(true),
			Help: "Bytes stored by sends (whole records), by the topic the producer named and message type."},
		{Name: "rocketmq_messages_out_total", Type: metrics.Counter, Labels: outLabels, Collect: out(false),
			Help: "Messages handed to consumers by pulls, by topic and consumer group."},
		{Name: "rocketmq_throughput_out_total", Type: metrics.Counter, Labels: outLabels, Collect: out(true),
			Help: "Bytes handed to consumers by pulls (whole records), by topic and consumer group."},
		{Name: "rocketmq_consumer_lag_messages", Type: metrics.Gauge, Labels: outLabels, Collect: lag(false),
			Help: "Messages stored past the consumer group's committed offsets, all queues of the topic together."},
		{Name: "rocketmq_consumer_lag_latency", Type: metrics.Gauge, Labels: outLabels, Collect: lag(true),
			Help: "Age in milliseconds of the oldest message the consumer group has not consumed in the topic (0 without lag)."},
		{Name: "rocketmq_send_to_dlq_messages_total", Type: metrics.Counter, Labels: []string{"topic", "consumer_group"},
			Help: "Messages moved to a consumer group's dead letter queue (%DLQ%<group>), by their original topic.",
			Collect: func(e *metrics.Emitter) {
				e.Dropped(m.dlq.each(func(k topicGroup, v *atomic.Int64, ok bool) {
					if !ok {
						k = topicGroup{overflowLabel, overflowLabel}
					}
					e.Emit(float64(v.Load()), k.topic, k.group)
				}))
			}},
		{Name: "rocketmq_consumer_dlq_messages", Type: metrics.Gauge, Labels: []string{"consumer_group"}, Collect: m.dlqDepth,
			Help: "Messages stored in the consumer group's dead letter queue %DLQ%<group>."},
	}
	// Topic and group names are checked (pkg/names: letters, digits, %, |, _, -) before
	// they get here; the other values are booleans and fixed words. Not the DLQ
	// counter's topic: it comes from a message's RETRY_TOPIC property.
	for _, f := range fs {
		f.PlainValues = f.Name != "rocketmq_send_to_dlq_messages_total"
	}
	return fs
}

// dlqDepth emits, for every group with a DLQ topic, the messages it holds.
func (m *brokerMetrics) dlqDepth(e *metrics.Emitter) {
	b := m.b
	for _, g := range b.groups.Names() {
		topic := retry.DLQTopic(g)
		tc, ok := b.topics.Get(topic)
		if !ok {
			continue
		}
		var n int64
		for q := range int32(max(tc.ReadQueueNums, tc.WriteQueueNums)) {
			n += max(b.store.MaxOffsetInQueue(topic, q)-b.store.MinOffsetInQueue(topic, q), 0)
		}
		e.Emit(float64(n), g)
	}
}

// scrapeCollector reports the broker's bounded gauges and counters at scrape time.
type scrapeCollector struct{ m *brokerMetrics }

type gaugeDesc struct {
	d *prometheus.Desc
	t prometheus.ValueType
}

func desc(name, help string, t prometheus.ValueType, labels ...string) gaugeDesc {
	return gaugeDesc{prometheus.NewDesc(name, help, labels, nil), t}
}

var (
	descStorageSize      = desc("rocketmq_storage_size", "Bytes used on the file system that holds the store (RocketMQ 5: total - free space).", prometheus.GaugeValue)
	descCommitLogSize    = desc("rocketmq_storage_commitlog_size_bytes", "Bytes of the commitlog segment files on disk.", prometheus.GaugeValue)
	descCommitLogMin     = desc("rocketmq_storage_commitlog_min_offset", "First commitlog offset still stored (bytes).", prometheus.GaugeValue)
	descCommitLogMax     = desc("rocketmq_storage_commitlog_max_offset", "Commitlog write position (bytes): the next append's offset.", prometheus.GaugeValue)
	descDiskRatio        = desc("rocketmq_storage_disk_used_ratio", "Used share (0..1) of the file system holding the commitlog, the figure retention compares with diskMaxUsedSpaceRatio.", prometheus.GaugeValue)
	descDiskMaxRatio     = desc("rocketmq_storage_disk_max_used_ratio", "diskMaxUsedSpaceRatio as a share (0..1): above it retention deletes the oldest segments whatever their age.", prometheus.GaugeValue)
	descFlushBehind      = desc("rocketmq_storage_flush_behind_bytes", "Commitlog bytes appended but not yet flushed to disk.", prometheus.GaugeValue)
	descDispatchBehind   = desc("rocketmq_storage_dispatch_behind_bytes", "Commitlog bytes not yet in consume queues and the index.", prometheus.GaugeValue)
	descReserveTime      = desc("rocketmq_storage_message_reserve_time", "Age in milliseconds of the oldest message still in the commitlog.", prometheus.GaugeValue)
	descConsumeQueues    = desc("rocketmq_storage_consume_queues", "Consume queues (topic and queue id pairs) in the store.", prometheus.GaugeValue)
	descIndexFiles       = desc("rocketmq_storage_index_files", "Index files in the store.", prometheus.GaugeValue)
	descIndexEntries     = desc("rocketmq_storage_index_entries", "Keys indexed in all index files.", prometheus.GaugeValue)
	descPullsHeld        = desc("rocketmq_pull_requests_held", "Long-polling pull requests waiting for messages.", prometheus.GaugeValue)
	descPullsResumed     = desc("rocketmq_pull_requests_resumed_total", "Held pull requests answered, by why: a message arrived (woken), the periodic re-check found one (rechecked), or the suspend time ran out (expired).", prometheus.CounterValue, "reason")
	descProducerConns    = desc("rocketmq_producer_connections", "Connections registered by producer heartbeats (one per producer group and client connection).", prometheus.GaugeValue)
	descConsumerConns    = desc("rocketmq_consumer_connections", "Connections registered by consumer heartbeats (one per consumer group and client connection).", prometheus.GaugeValue)
	descConns            = desc("rocketmq_remoting_connections", "Open client connections, by role: producer or consumer (registered by heartbeat as such, either counting once) or other (admin tools, not yet registered clients, slaves copying metadata).", prometheus.GaugeValue, "role")
	descConnEvents       = desc("rocketmq_remoting_connection_errors_total", "Connections closed or refused for what the peer did, by event: malformed and oversized frames, frame and idle timeouts, replies not read (unread), connection limits (refused).", prometheus.CounterValue, "event")
	descWatermark        = desc("rocketmq_processor_watermark", "Requests waiting in a worker pool's queue (SYSTEM_BUSY once it is full), by pool.", prometheus.GaugeValue, "processor")
	descPermission       = desc("rocketmq_broker_permission", "brokerPermission: READ 4, WRITE 2, INHERIT 1.", prometheus.GaugeValue)
	descTopicNumber      = desc("rocketmq_topic_number", "Topics in the broker's topic table.", prometheus.GaugeValue)
	descGroupNumber      = desc("rocketmq_consumer_group_number", "Subscription groups in the broker's group table.", prometheus.GaugeValue)
	descRegistered       = desc("rocketmq_broker_namesrv_registered", "1 when the broker's last registration with the name server succeeded, else 0.", prometheus.GaugeValue, "namesrv_addr")
	descSlavesConnected  = desc("rocketmq_ha_slaves_connected", "Slaves connected to this master's HA port.", prometheus.GaugeValue)
	descSlaveLag         = desc("rocketmq_ha_slave_lag_bytes", "Commitlog bytes a connected slave has not acknowledged, by the slave's address (master side).", prometheus.GaugeValue, "slave_addr")
	descMasterConnected  = desc("rocketmq_ha_master_connected", "1 while this slave's HA connection to its master is up, else 0, with the master's HA address (slave side).", prometheus.GaugeValue, "master_addr")
	descSlaveReported    = desc("rocketmq_ha_slave_reported_offset", "Commitlog offset this slave last reported to its master (slave side; the master reports the lag).", prometheus.GaugeValue)
	scrapeCollectorDescs = []gaugeDesc{descStorageSize, descCommitLogSize, descCommitLogMin, descCommitLogMax, descDiskRatio, descDiskMaxRatio, descFlushBehind, descDispatchBehind, descReserveTime, descConsumeQueues, descIndexFiles, descIndexEntries, descPullsHeld, descPullsResumed, descProducerConns, descConsumerConns, descConns, descConnEvents, descWatermark, descPermission, descTopicNumber, descGroupNumber, descRegistered, descSlavesConnected, descSlaveLag, descMasterConnected, descSlaveReported}
)

// fsUsedBytes is the used space of the file system holding path.
func fsUsedBytes(path string) (int64, error) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(path, &fs); err != nil {
		return 0, err
	}
	return int64(fs.Blocks-fs.Bfree) * int64(fs.Bsize), nil
}

func (c scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range scrapeCollectorDescs {
		ch <- d.d
	}
}

func (c scrapeCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	b := m.b
	emit := func(d gaugeDesc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d.d, d.t, v, labels...)
	}
	cfg := b.cfg.Get()

	s := b.store
	st := s.Stats()
	emit(descCommitLogSize, float64(int64(st.CommitLogSegments)*int64(cfg.MappedFileSizeCommitLog)))
	emit(descCommitLogMin, float64(st.CommitLogMinOffset))
	emit(descCommitLogMax, float64(st.CommitLogMaxOffset))
	emit(descFlushBehind, float64(max(st.CommitLogMaxOffset-st.FlushedOffset, 0)))
	emit(descDispatchBehind, float64(max(st.CommitLogMaxOffset-st.DispatchedOffset, 0)))
	emit(descConsumeQueues, float64(st.ConsumeQueues))
	emit(descIndexFiles, float64(st.IndexFiles))
	emit(descIndexEntries, float64(st.IndexEntries))
	if ratio, err := s.DiskUsedRatio(); err == nil {
		emit(descDiskRatio, ratio)
	}
	if used, err := fsUsedBytes(cfg.StorePathRootDir); err == nil {
		emit(descStorageSize, float64(used))
	}
	if ts := s.EarliestStoreTime(); ts > 0 {
		emit(descReserveTime, float64(max(time.Now().UnixMilli()-ts, 0)))
	}
	emit(descDiskMaxRatio, float64(cfg.DiskMaxUsedSpaceRatio)/100)

	emit(descPullsHeld, float64(b.holder.Len()))
	hs := b.holder.Stats()
	emit(descPullsResumed, float64(hs.Woken), "woken")
	emit(descPullsResumed, float64(hs.Rechecked), "rechecked")
	emit(descPullsResumed, float64(hs.Expired), "expired")

	ss := b.server.Stats()
	producers, consumers := b.clients.Counts()
	emit(descProducerConns, float64(producers))
	emit(descConsumerConns, float64(consumers))
	roles := b.clients.ConnRoles()
	emit(descConns, float64(roles.Producer), "producer")
	emit(descConns, float64(roles.Consumer), "consumer")
	emit(descConns, float64(max(ss.Conns-roles.Producer-roles.Consumer, 0)), "other")
	for _, ev := range remoting.ConnEvents() {
		emit(descConnEvents, float64(ss.Events[ev]), ev.Name())
	}
	for name, n := range ss.Pools {
		emit(descWatermark, float64(n), name)
	}

	emit(descPermission, float64(cfg.BrokerPermission))
	emit(descTopicNumber, float64(b.topics.Len()))
	emit(descGroupNumber, float64(b.groups.Len()))
	m.registeredMu.Lock()
	for _, addr := range config.NamesrvList(cfg.NamesrvAddr) {
		v := 0.0
		if m.registered[addr] {
			v = 1
		}
		emit(descRegistered, v, addr)
	}
	m.registeredMu.Unlock()

	if hs := b.haServer; hs != nil {
		slaves := hs.Slaves()
		emit(descSlavesConnected, float64(len(slaves)))
		tail := b.store.CommitLogMaxOffset()
		for _, sl := range slaves {
			lag := tail
			if sl.AckOffset >= 0 {
				lag = max(tail-sl.AckOffset, 0)
			}
			emit(descSlaveLag, float64(lag), sl.Addr)
		}
	}
	if hc := b.haClient; hc != nil {
		v := 0.0
		if hc.Connected() {
			v = 1
		}
		emit(descMasterConnected, v, hc.MasterAddr())
		emit(descSlaveReported, float64(hc.ReportedOffset()))
	}
}
