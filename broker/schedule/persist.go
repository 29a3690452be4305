package schedule

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"

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

// loadOffsets reads path, or path.bak when path is missing or unreadable.
// A missing pair is an empty table.
func loadOffsets(path string) (map[int]int64, error) {
	var firstErr error
	for _, p := range []string{path, path + ".bak"} {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		var t map[int]int64
		if err == nil {
			if t, err = DecodeOffsets(data); err == nil {
				return t, nil
			}
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("schedule: %s: %w", p, err)
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return map[int]int64{}, nil
}

// writeAtomically replaces path with data: temp file, fsync, previous
// content kept as .bak, rename, fsync of the folder.
func writeAtomically(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("schedule: write %s: %w", tmp, err)
	}
	if old, err := os.ReadFile(path); err == nil && len(old) > 0 {
		if err := os.WriteFile(path+".bak", old, 0o644); err != nil {
			return fmt.Errorf("schedule: keep %s.bak: %w", path, err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
