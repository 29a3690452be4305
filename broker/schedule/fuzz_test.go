package schedule

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeOffsets reads arbitrary delayOffset.json bodies: the file at
// start, and a master's GET_ALL_DELAY_OFFSET answer on a slave. What
// decodes must encode in Java's form and decode back to the same table,
// and loadOffsets must read the file as DecodeOffsets reads the bytes.
func FuzzDecodeOffsets(f *testing.F) {
	for _, s := range []string{`{"offsetTable":{1:12,2:0,18:5}}`, `{"offsetTable":{"3":-1}}`, `{}`, `{"offsetTable":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		table, err := DecodeOffsets(data)
		if err != nil {
			return
		}
		if table == nil {
			t.Fatal("nil table without an error")
		}
		enc := EncodeOffsets(table)
		again, err := DecodeOffsets(enc)
		if err != nil || !maps.Equal(again, table) {
			t.Fatalf("%s decodes to %v, which encodes to %s and decodes to %v (%v)", data, table, enc, again, err)
		}
		path := filepath.Join(t.TempDir(), OffsetFile)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if loaded, _, err := loadOffsets(path); err != nil || !maps.Equal(loaded, table) {
			t.Fatalf("loadOffsets = %v, %v; DecodeOffsets = %v", loaded, err, table)
		}
	})
}
