package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// BrokerStatsItem is one window of a broker counter (Java's BrokerStatsItem): the count
// in the window, its rate per second and the average count per increment.
type BrokerStatsItem struct {
	Sum   int64   `json:"sum"`
	Tps   float64 `json:"tps"`
	Avgpt float64 `json:"avgpt"`
}

// MarshalJSON writes the fields in fastjson's (alphabetical) order, doubles as doubles.
func (it BrokerStatsItem) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, `{"avgpt":%s,"sum":%d,"tps":%s}`, javaDouble(it.Avgpt), it.Sum, javaDouble(it.Tps)), nil
}

// BrokerStatsData is VIEW_BROKER_STATS_DATA's body: a counter over the last minute, hour
// and day. Fields are in fastjson's order.
type BrokerStatsData struct {
	StatsDay    BrokerStatsItem `json:"statsDay"`
	StatsHour   BrokerStatsItem `json:"statsHour"`
	StatsMinute BrokerStatsItem `json:"statsMinute"`
}

// Encode writes d as a Java broker does.
func (d BrokerStatsData) Encode() []byte { return MustEncode(d) }

// DecodeBrokerStatsData parses VIEW_BROKER_STATS_DATA's body.
func DecodeBrokerStatsData(data []byte) (BrokerStatsData, error) {
	var d BrokerStatsData
	err := Decode(data, &d)
	return d, err
}

// TotalDiff is Java's ConsumeStats.computeTotalDiff: messages not consumed yet.
func (s ConsumeStats) TotalDiff() int64 {
	var n int64
	for _, w := range s.OffsetTable {
		n += w.BrokerOffset - w.ConsumerOffset
	}
	return n
}

// ConsumeStatsList is GET_BROKER_CONSUME_STATS's body: for each subscription group a
// one-entry map from the group to its ConsumeStats, one per topic.
type ConsumeStatsList struct {
	BrokerAddr       string
	ConsumeStatsList []map[string][]ConsumeStats
	TotalDiff        int64
}

// Encode writes l as a Java broker does; the ConsumeStats hold message-queue tables,
// which is why this is not plain encoding/json.
func (l ConsumeStatsList) Encode() ([]byte, error) {
	var b bytes.Buffer
	addr, _ := json.Marshal(l.BrokerAddr)
	fmt.Fprintf(&b, `{"brokerAddr":%s,"consumeStatsList":[`, addr)
	for i, m := range l.ConsumeStatsList {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		groups := make([]string, 0, len(m))
		for g := range m {
			groups = append(groups, g)
		}
		slices.Sort(groups)
		for j, g := range groups {
			if j > 0 {
				b.WriteByte(',')
			}
			key, _ := json.Marshal(g)
			b.Write(key)
			b.WriteString(":[")
			for k, s := range m[g] {
				if k > 0 {
					b.WriteByte(',')
				}
				enc, err := s.Encode()
				if err != nil {
					return nil, err
				}
				b.Write(enc)
			}
			b.WriteByte(']')
		}
		b.WriteByte('}')
	}
	fmt.Fprintf(&b, `],"totalDiff":%d}`, l.TotalDiff)
	return b.Bytes(), nil
}

// DecodeConsumeStatsList parses GET_BROKER_CONSUME_STATS's body.
func DecodeConsumeStatsList(data []byte) (ConsumeStatsList, error) {
	var l ConsumeStatsList
	pairs, err := splitObject(data)
	if err != nil {
		return l, err
	}
	for _, p := range pairs {
		switch string(p.key) {
		case `"brokerAddr"`:
			err = json.Unmarshal(p.value, &l.BrokerAddr)
		case `"totalDiff"`:
			l.TotalDiff, err = strconv.ParseInt(string(p.value), 10, 64)
		case `"consumeStatsList"`:
			l.ConsumeStatsList, err = decodeGroupStatsList(p.value)
		}
		if err != nil {
			return l, fmt.Errorf("%w: %s: %v", errMQTable, p.key, err)
		}
	}
	return l, nil
}

func decodeGroupStatsList(data []byte) ([]map[string][]ConsumeStats, error) {
	maps, err := splitArray(data)
	if err != nil {
		return nil, err
	}
	out := make([]map[string][]ConsumeStats, 0, len(maps))
	for _, raw := range maps {
		pairs, err := splitObject(raw)
		if err != nil {
			return nil, err
		}
		m := make(map[string][]ConsumeStats, len(pairs))
		for _, p := range pairs {
			var group string
			if err := json.Unmarshal(p.key, &group); err != nil {
				return nil, err
			}
			items, err := splitArray(p.value)
			if err != nil {
				return nil, err
			}
			list := make([]ConsumeStats, 0, len(items))
			for _, it := range items {
				s, err := DecodeConsumeStats(it)
				if err != nil {
					return nil, err
				}
				list = append(list, s)
			}
			m[group] = list
		}
		out = append(out, m)
	}
	return out, nil
}

// splitArray splits [v,...] into raw values, which may hold message-queue tables.
func splitArray(data []byte) ([][]byte, error) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return nil, fmt.Errorf("%w: want an array", errMQTable)
	}
	var out [][]byte
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return out, nil
	}
	for {
		end, err := valueEnd(data, i)
		if err != nil {
			return nil, err
		}
		out = append(out, data[i:end])
		i = skipSpace(data, end)
		if i >= len(data) {
			return nil, fmt.Errorf("%w: unterminated array", errMQTable)
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			return out, nil
		default:
			return nil, fmt.Errorf("%w: want ',' or ']' at %d", errMQTable, i)
		}
	}
}

// javaDouble formats f as fastjson writes a double: always with a fraction, null for
// what JSON cannot hold.
func javaDouble(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !bytes.ContainsAny([]byte(s), ".eE") {
		s += ".0"
	}
	return s
}
