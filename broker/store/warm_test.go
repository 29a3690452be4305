package store

import (
	"testing"
	"time"
)

// TestWarmKeepsTheTailPopulated: after an append, warmLoop populates warmAhead bytes
// past the tail, never past the tail's segment.
func TestWarmKeepsTheTailPopulated(t *testing.T) {
	for _, tc := range []struct {
		name    string
		segSize int
	}{
		{"window inside the segment", 8 << 20},
		{"window cut at the segment's end", 64 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.MappedFileSizeCommitLog = tc.segSize
			s := mustOpen(t, cfg)
			defer s.Close()
			r := mustPut(t, s, newMsg("T", 0, "warm me", nil))
			tail := r.PhysicalOffset + int64(r.Size)
			want := min(tail+warmAhead, int64(tc.segSize))
			deadline := time.Now().Add(10 * time.Second)
			for s.cl.warmed.Load() != want {
				if s.cl.noWarm.Load() {
					t.Skip("this kernel cannot populate (MADV_POPULATE_READ, Linux 5.14)")
				}
				if time.Now().After(deadline) {
					t.Fatalf("warmed %d after 10s, want %d (tail %d, segment %d bytes)", s.cl.warmed.Load(), want, tail, tc.segSize)
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}

// TestNoWarmUnderSyncFlush: under SYNC_FLUSH records go in with pwrite, and pages
// populated into the mapping would make every fdatasync write-protect them again.
func TestNoWarmUnderSyncFlush(t *testing.T) {
	cfg := testConfig(t)
	cfg.FlushDiskType = SyncFlush
	s := mustOpen(t, cfg)
	defer s.Close()
	mustPut(t, s, newMsg("T", 0, "no warming", nil))
	if !s.cl.noWarm.Load() || s.cl.warmed.Load() != 0 {
		t.Fatalf("SYNC_FLUSH store: noWarm %t, warmed %d; want warming off", s.cl.noWarm.Load(), s.cl.warmed.Load())
	}
}
