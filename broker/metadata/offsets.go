package metadata

import (
	"maps"
	"path/filepath"
	"strings"
	"sync"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// OffsetKeySeparator joins topic and group in consumerOffset.json ("topic@group").
const OffsetKeySeparator = "@"

type offsetsFile struct {
	OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
}

// Offsets holds committed consumer offsets, persisted as consumerOffset.json.
type Offsets struct {
	path string
	wmu  sync.Mutex // serializes Persist so that files are written in order

	mu    sync.Mutex
	table map[string]map[int32]int64 // "topic@group" -> queue id -> offset
	dirty bool
}

// LoadOffsets loads <dir>/consumerOffset.json. Java writes the queue ids as bare
// integer keys; both spellings read.
func LoadOffsets(dir string) (*Offsets, error) {
	o := &Offsets{path: filepath.Join(dir, ConsumerOffsetFile), table: map[string]map[int32]int64{}}
	var file offsetsFile
	found, err := loadJSON(o.path, &file, func() { file = offsetsFile{} })
	if err != nil {
		return nil, err
	}
	if found && file.OffsetTable != nil {
		o.table = file.OffsetTable
	}
	return o, nil
}

func offsetKey(topic, group string) string { return topic + OffsetKeySeparator + group }

// Commit records group's offset in topic's queue.
func (o *Offsets) Commit(group, topic string, queueID int32, offset int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := offsetKey(topic, group)
	m := o.table[k]
	if m == nil {
		m = map[int32]int64{}
		o.table[k] = m
	}
	if old, ok := m[queueID]; !ok || old != offset {
		m[queueID] = offset
		o.dirty = true
	}
}

// Query returns group's committed offset, or -1 when there is none.
func (o *Offsets) Query(group, topic string, queueID int32) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if v, ok := o.table[offsetKey(topic, group)][queueID]; ok {
		return v
	}
	return -1
}

// QueryAll returns group's offsets in topic, by queue.
func (o *Offsets) QueryAll(group, topic string) map[int32]int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.table[offsetKey(topic, group)])
}

// Set replaces group's offsets in topic (reset, clone).
func (o *Offsets) Set(group, topic string, offsets map[int32]int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.table[offsetKey(topic, group)] = maps.Clone(offsets)
	o.dirty = true
}

// TopicsOf returns the topics group has offsets in.
func (o *Offsets) TopicsOf(group string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for k := range o.table {
		if t, g, ok := splitKey(k); ok && g == group {
			out = append(out, t)
		}
	}
	return out
}

// GroupsOf returns the groups with offsets in topic.
func (o *Offsets) GroupsOf(topic string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for k := range o.table {
		if t, g, ok := splitKey(k); ok && t == topic {
			out = append(out, g)
		}
	}
	return out
}

// QueueOffset is one committed offset.
type QueueOffset struct {
	Topic, Group string
	QueueID      int32
	Offset       int64
	First        bool // the first of its topic and group in AppendAll's result
}

// AppendAll appends every committed offset to dst, the offsets of one topic and group
// next to each other, and returns it (metrics: consumer lag). The lock is held only to
// copy.
func (o *Offsets) AppendAll(dst []QueueOffset) []QueueOffset {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, qs := range o.table {
		t, g, ok := splitKey(k)
		if !ok {
			continue
		}
		first := true
		for q, off := range qs {
			dst = append(dst, QueueOffset{Topic: t, Group: g, QueueID: q, Offset: off, First: first})
			first = false
		}
	}
	return dst
}

// RemoveGroup forgets every offset of group.
func (o *Offsets) RemoveGroup(group string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.table {
		if _, g, ok := splitKey(k); ok && g == group {
			delete(o.table, k)
			o.dirty = true
		}
	}
}

// RemoveTopic forgets every offset in topic.
func (o *Offsets) RemoveTopic(topic string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.table {
		if t, _, ok := splitKey(k); ok && t == topic {
			delete(o.table, k)
			o.dirty = true
		}
	}
}

// splitKey splits at the last '@': groups may not contain it, topics may (rarely).
func splitKey(k string) (topic, group string, ok bool) {
	i := strings.LastIndex(k, OffsetKeySeparator)
	if i < 0 {
		return "", "", false
	}
	return k[:i], k[i+1:], true
}

// Encode returns the table as the file holds it.
func (o *Offsets) Encode() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return protocol.MustEncode(offsetsFile{OffsetTable: o.table})
}

// Persist writes the table when it changed since the last write (force writes anyway).
func (o *Offsets) Persist(force bool) error {
	o.wmu.Lock()
	defer o.wmu.Unlock()
	o.mu.Lock()
	if !o.dirty && !force {
		o.mu.Unlock()
		return nil
	}
	data := protocol.MustEncode(offsetsFile{OffsetTable: o.table})
	o.dirty = false
	o.mu.Unlock()
	if err := WriteFileAtomic(o.path, data); err != nil {
		o.mu.Lock()
		o.dirty = true
		o.mu.Unlock()
		return err
	}
	return nil
}
