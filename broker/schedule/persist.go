package schedule

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"

	"github.com/openrmq/rocketmq-operator/pkg/atomicfile"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// OffsetFile is the name of the delay-offset file under the config folder.
const OffsetFile = "delayOffset.json"

// EncodeOffsets writes table as Java's DelayOffsetSerializeWrapper does:
// {"offsetTable":{1:12,2:0}}, keys ascending.
func EncodeOffsets(table map[int]int64) []byte {
	levels := make([]int, 0, len(table))
	for l := range table {
		levels = append(levels, l)
	}
	sort.Ints(levels)
	var b bytes.Buffer
	b.WriteString(`{"offsetTable":{`)
	for i, l := range levels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(l))
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(table[l], 10))
	}
	b.WriteString("}}")
	return b.Bytes()
}

// DecodeOffsets reads a delayOffset.json body (bare or quoted keys).
func DecodeOffsets(data []byte) (map[int]int64, error) {
	var w struct {
		OffsetTable map[int]int64 `json:"offsetTable"`
	}
	if err := protocol.Decode(data, &w); err != nil {
		return nil, err
	}
	if w.OffsetTable == nil {
		w.OffsetTable = map[int]int64{}
	}
	return w.OffsetTable, nil
}

// loadOffsets reads path, or path.bak when path is missing or unreadable
// (fb says so; the damaged file is kept aside). A missing pair is an empty
// table.
func loadOffsets(path string) (_ map[int]int64, fb *atomicfile.Fallback, _ error) {
	table := map[int]int64{}
	_, fb, err := atomicfile.Load(path, func(data []byte) error {
		t, err := DecodeOffsets(data)
		if err == nil {
			table = t
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("schedule: %w", err)
	}
	return table, fb, nil
}
