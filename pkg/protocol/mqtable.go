package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// MessageQueue is Java's MessageQueue. Fields are declared in fastjson's (alphabetical)
// order, so a table keyed by it is written byte for byte as a Java broker writes it.
type MessageQueue struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Topic      string `json:"topic"`
}

func (q MessageQueue) String() string {
	return fmt.Sprintf("%s@%s/%d", q.Topic, q.BrokerName, q.QueueID)
}

func (q MessageQueue) less(o MessageQueue) bool {
	if q.Topic != o.Topic {
		return q.Topic < o.Topic
	}
	if q.BrokerName != o.BrokerName {
		return q.BrokerName < o.BrokerName
	}
	return q.QueueID < o.QueueID
}

var errMQTable = errors.New("protocol: malformed message-queue table")

// EncodeMQTable writes a map keyed by MessageQueue the way fastjson does, with object
// keys: {{"brokerName":"b","queueId":0,"topic":"t"}:value,...}. That is not standard
// JSON, but it is what the Java tools and the Go client's hand-written parsers read.
// Entries are sorted so that equal tables give equal bytes.
func EncodeMQTable[V any](m map[MessageQueue]V) ([]byte, error) {
	keys := make([]MessageQueue, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].less(keys[j]) })
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		vb, err := json.Marshal(m[k])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// DecodeMQTable parses a table written by EncodeMQTable or by a Java broker.
func DecodeMQTable[V any](data []byte) (map[MessageQueue]V, error) {
	pairs, err := splitObject(data)
	if err != nil {
		return nil, err
	}
	out := make(map[MessageQueue]V, len(pairs))
	for _, p := range pairs {
		var k MessageQueue
		if err := json.Unmarshal(p.key, &k); err != nil {
			return nil, fmt.Errorf("%w: key %s: %v", errMQTable, p.key, err)
		}
		var v V
		if err := Decode(p.value, &v); err != nil {
			return nil, fmt.Errorf("%w: value for %s: %v", errMQTable, k, err)
		}
		out[k] = v
	}
	return out, nil
}

type rawPair struct{ key, value []byte }

// splitObject splits {k:v,...} into raw keys and values, where keys may themselves be
// objects (fastjson's way with non-string map keys) and values may hold such maps.
func splitObject(data []byte) ([]rawPair, error) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, fmt.Errorf("%w: want an object", errMQTable)
	}
	var pairs []rawPair
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return pairs, nil
	}
	for {
		kEnd, err := valueEnd(data, i)
		if err != nil {
			return nil, err
		}
		key := data[i:kEnd]
		i = skipSpace(data, kEnd)
		if i >= len(data) || data[i] != ':' {
			return nil, fmt.Errorf("%w: want ':' at %d", errMQTable, i)
		}
		i = skipSpace(data, i+1)
		vEnd, err := valueEnd(data, i)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, rawPair{key: key, value: data[i:vEnd]})
		i = skipSpace(data, vEnd)
		if i >= len(data) {
			return nil, fmt.Errorf("%w: unterminated object", errMQTable)
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			if rest := skipSpace(data, i+1); rest != len(data) {
				return nil, fmt.Errorf("%w: trailing data at %d", errMQTable, rest)
			}
			return pairs, nil
		default:
			return nil, fmt.Errorf("%w: want ',' or '}' at %d", errMQTable, i)
		}
	}
}

// valueEnd returns the index just past the value starting at data[i]: a string, an
// object or array (brackets matched, strings skipped), or a scalar.
func valueEnd(data []byte, i int) (int, error) {
	if i >= len(data) {
		return 0, fmt.Errorf("%w: value missing at end", errMQTable)
	}
	switch data[i] {
	case '"':
		end := stringEnd(data, i)
		if end > len(data) || data[end-1] != '"' || end == i+1 {
			return 0, fmt.Errorf("%w: unterminated string at %d", errMQTable, i)
		}
		return end, nil
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				j = stringEnd(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("%w: unbalanced brackets from %d", errMQTable, i)
	}
	j := i
	for j < len(data) && data[j] != ',' && data[j] != '}' && data[j] != ']' && data[j] != ':' && !isSpace(data[j]) {
		j++
	}
	if j == i {
		return 0, fmt.Errorf("%w: value missing at %d", errMQTable, i)
	}
	return j, nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}
