package broker

import (
	"bytes"
	"encoding/json"
	"sort"
)

// messageQueue is Java's MessageQueue. Its fields are declared in fastjson's order
// (alphabetical), because tables keyed by it are written the way fastjson writes them.
type messageQueue struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Topic      string `json:"topic"`
}

// mqTable renders a map keyed by MessageQueue as fastjson does: the keys are JSON
// objects, {{"brokerName":"b","queueId":0,"topic":"t"}:value,...}. This is not standard
// JSON, but the Java tools and the Go client's parsers expect exactly it.
func mqTable(m map[messageQueue]any) []byte {
	keys := make([]messageQueue, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Topic != keys[j].Topic {
			return keys[i].Topic < keys[j].Topic
		}
		return keys[i].QueueID < keys[j].QueueID
	})
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(m[k])
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// withTable renders {"name":<table>, other fields...}.
func withTable(name string, table []byte, other map[string]any) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	keys := make([]string, 0, len(other))
	for k := range other {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(other[k])
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
		b.WriteByte(',')
	}
	nb, _ := json.Marshal(name)
	b.Write(nb)
	b.WriteByte(':')
	b.Write(table)
	b.WriteByte('}')
	return b.Bytes()
}
