package metadata

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/openrmq/rocketmq-operator/pkg/names"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// Errors of topic operations; illegal names are refused with names.ErrIllegalTopic.
var (
	ErrTopicNotExist = errors.New("metadata: topic does not exist")
	ErrSystemTopic   = errors.New("metadata: system topic")
)

// legalOnly returns table without the entries whose names check refuses, logging each:
// a name from a file becomes a path, and one bad entry costs only itself.
func legalOnly[V any](path string, table map[string]V, check func(string) error) map[string]V {
	for name := range table {
		if err := check(name); err != nil {
			slog.Warn("metadata: entry with an illegal name ignored", "file", path, "name", name, "reason", err.Error())
			delete(table, name)
		}
	}
	return table
}

// ReplyTopic is the request-reply topic of a cluster.
func ReplyTopic(cluster string) string { return cluster + "_REPLY_TOPIC" }

// TopicOptions are the broker settings that shape the system topics.
type TopicOptions struct {
	ClusterName           string
	BrokerName            string
	AutoCreateTopicEnable bool
	DefaultTopicQueueNums int
	ClusterTopicEnable    bool
	BrokerTopicEnable     bool
	TraceTopicEnable      bool
	TraceTopicName        string
	DelayLevels           int // queues of SCHEDULE_TOPIC_XXXX
}

// Topics is the broker's topic table, persisted as topics.json.
type Topics struct {
	path     string
	opts     TopicOptions
	onChange func() // called, without the lock, after a change was persisted

	mu      sync.RWMutex
	table   map[string]*protocol.TopicConfig
	version protocol.DataVersion
	system  map[string]bool
}

// LoadTopics builds the system topics and loads <dir>/topics.json over them.
func LoadTopics(dir string, opts TopicOptions) (*Topics, error) {
	t := &Topics{
		path:    filepath.Join(dir, TopicsFile),
		opts:    opts,
		table:   map[string]*protocol.TopicConfig{},
		version: protocol.NewDataVersion(),
		system:  map[string]bool{},
	}
	t.addSystemTopics()
	var file protocol.TopicConfigSerializeWrapper
	found, err := loadJSON(t.path, &file, func() { file = protocol.TopicConfigSerializeWrapper{} })
	if err != nil {
		return nil, err
	}
	if found {
		copyNonNil(t.table, legalOnly(t.path, file.TopicConfigTable, names.Topic))
		if file.DataVersion.Timestamp != 0 {
			t.version = file.DataVersion
		}
	}
	// TBW102 follows autoCreateTopicEnable, whatever an older file says.
	if !opts.AutoCreateTopicEnable {
		delete(t.table, protocol.DefaultTopic)
	}
	return t, nil
}

func (t *Topics) addSystemTopics() {
	add := func(name string, queues, perm int) {
		tc := protocol.NewTopicConfig(name)
		tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = queues, queues, perm
		t.table[name] = tc
		t.system[name] = true
	}
	rw := protocol.PermRead | protocol.PermWrite
	o := t.opts
	add(protocol.SelfTestTopic, 1, rw)
	if o.AutoCreateTopicEnable {
		add(protocol.DefaultTopic, o.DefaultTopicQueueNums, protocol.DefaultTopicPerm)
	}
	add(protocol.BenchmarkTopic, 1024, rw)
	clusterPerm := protocol.PermInherit
	if o.ClusterTopicEnable {
		clusterPerm |= rw
	}
	add(o.ClusterName, protocol.DefaultQueueNums, clusterPerm)
	brokerPerm := protocol.PermInherit
	if o.BrokerTopicEnable {
		brokerPerm |= rw
	}
	add(o.BrokerName, 1, brokerPerm)
	add(protocol.OffsetMovedEventTopic, 1, rw)
	delay := o.DelayLevels
	if delay <= 0 {
		delay = 18
	}
	add(protocol.ScheduleTopic, delay, rw)
	if o.TraceTopicEnable {
		name := o.TraceTopicName
		if name == "" {
			name = protocol.TraceTopic
		}
		add(name, 1, rw)
	}
	add(ReplyTopic(o.ClusterName), 1, rw)
	add(protocol.TransHalfTopic, 1, rw)
	add(protocol.TransOpHalfTopic, 1, rw)
}

// OnChange sets the function called after every persisted change (the broker
// re-registers with its name servers).
func (t *Topics) OnChange(f func()) { t.onChange = f }

// IsSystem reports whether name is one of the built-in topics.
func (t *Topics) IsSystem(name string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.system[name]
}

// Len is the number of topics.
func (t *Topics) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.table)
}

// QueueCounts fills dst (cleared first) with every topic's queue count, the larger of
// its read and write queue numbers: one read lock for the whole table (metrics).
func (t *Topics) QueueCounts(dst map[string]int32) {
	clear(dst)
	t.mu.RLock()
	defer t.mu.RUnlock()
	for name, tc := range t.table {
		dst[name] = int32(max(tc.ReadQueueNums, tc.WriteQueueNums))
	}
}

// Get returns a copy of the topic's config.
func (t *Topics) Get(name string) (protocol.TopicConfig, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	tc, ok := t.table[name]
	if !ok {
		return protocol.TopicConfig{}, false
	}
	return *tc, true
}

// Snapshot returns a copy of the table with its version.
func (t *Topics) Snapshot() protocol.TopicConfigSerializeWrapper {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.snapshotLocked()
}

func (t *Topics) snapshotLocked() protocol.TopicConfigSerializeWrapper {
	out := protocol.TopicConfigSerializeWrapper{
		TopicConfigTable: make(map[string]*protocol.TopicConfig, len(t.table)),
		DataVersion:      t.version,
	}
	for k, v := range t.table {
		c := *v
		out.TopicConfigTable[k] = &c
	}
	return out
}

// DataVersion returns the table's version.
func (t *Topics) DataVersion() protocol.DataVersion {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.version
}

// Put creates or replaces a topic config, persists the table and notifies.
func (t *Topics) Put(tc protocol.TopicConfig) error {
	if err := names.Topic(tc.TopicName); err != nil {
		return err
	}
	if tc.TopicFilterType == "" {
		tc.TopicFilterType = protocol.TopicFilterTypeSingleTag
	}
	t.mu.Lock()
	if old, ok := t.table[tc.TopicName]; ok && *old == tc {
		t.mu.Unlock()
		return nil
	}
	t.table[tc.TopicName] = &tc
	err := t.commitLocked()
	t.mu.Unlock()
	t.notify()
	return err
}

// Update creates or replaces a topic config like Put, but bumps the version, persists
// and notifies even when the config is unchanged, as Java's updateTopicConfig does for
// UPDATE_AND_CREATE_TOPIC: the broker then registers a new version, which makes the name
// servers take its topics again (so re-creating a topic repairs a route deleted from a
// name server, mqadmin's and the operator's way to restore one).
func (t *Topics) Update(tc protocol.TopicConfig) error {
	if err := names.Topic(tc.TopicName); err != nil {
		return err
	}
	if tc.TopicFilterType == "" {
		tc.TopicFilterType = protocol.TopicFilterTypeSingleTag
	}
	t.mu.Lock()
	t.table[tc.TopicName] = &tc
	err := t.commitLocked()
	t.mu.Unlock()
	t.notify()
	return err
}

// Delete removes a topic; it reports whether it existed.
func (t *Topics) Delete(name string) (bool, error) {
	t.mu.Lock()
	if _, ok := t.table[name]; !ok {
		t.mu.Unlock()
		return false, nil
	}
	delete(t.table, name)
	err := t.commitLocked()
	t.mu.Unlock()
	t.notify()
	return true, err
}

// CreateForSend returns topic's config, creating it from defaultTopic when that topic is
// inheritable (TBW102 with autoCreateTopicEnable), with min(clientQueueNums, the default
// topic's write queues) queues. It reports ErrTopicNotExist when it cannot.
func (t *Topics) CreateForSend(topic, defaultTopic string, clientQueueNums, sysFlag int) (protocol.TopicConfig, bool, error) {
	t.mu.Lock()
	if tc, ok := t.table[topic]; ok {
		t.mu.Unlock()
		return *tc, false, nil
	}
	def, ok := t.table[defaultTopic]
	if !ok || !protocol.IsInherited(def.Perm) || (defaultTopic == protocol.DefaultTopic && !t.opts.AutoCreateTopicEnable) {
		t.mu.Unlock()
		return protocol.TopicConfig{}, false, fmt.Errorf("%w: topic[%s] not exist, apply first please", ErrTopicNotExist, topic)
	}
	if err := names.Topic(topic); err != nil {
		t.mu.Unlock()
		return protocol.TopicConfig{}, false, err
	}
	n := min(clientQueueNums, def.WriteQueueNums)
	if n <= 0 {
		n = def.WriteQueueNums
	}
	tc := &protocol.TopicConfig{
		TopicName: topic, ReadQueueNums: n, WriteQueueNums: n,
		Perm: def.Perm &^ protocol.PermInherit, TopicFilterType: protocol.TopicFilterTypeSingleTag,
		TopicSysFlag: sysFlag,
	}
	t.table[topic] = tc
	err := t.commitLocked()
	out := *tc
	t.mu.Unlock()
	t.notify()
	return out, true, err
}

// Ensure returns name's config, creating it with the given queues and perm when absent
// (retry and DLQ topics).
func (t *Topics) Ensure(name string, queues, perm, sysFlag int) (protocol.TopicConfig, error) {
	if err := names.Topic(name); err != nil { // retry and DLQ topics are named after groups
		return protocol.TopicConfig{}, err
	}
	t.mu.Lock()
	if tc, ok := t.table[name]; ok {
		t.mu.Unlock()
		return *tc, nil
	}
	tc := &protocol.TopicConfig{
		TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: perm,
		TopicFilterType: protocol.TopicFilterTypeSingleTag, TopicSysFlag: sysFlag,
	}
	t.table[name] = tc
	err := t.commitLocked()
	out := *tc
	t.mu.Unlock()
	t.notify()
	return out, err
}

// Persist writes the table.
func (t *Topics) Persist() error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.persistLocked()
}

// commitLocked bumps the version and persists. Lock must be held.
func (t *Topics) commitLocked() error {
	t.version = t.version.Next()
	return t.persistLocked()
}

func (t *Topics) persistLocked() error {
	return WriteFileAtomic(t.path, protocol.MustEncode(t.snapshotLocked()))
}

func (t *Topics) notify() {
	if t.onChange != nil {
		t.onChange()
	}
}
