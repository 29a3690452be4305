package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A broker rejoining as a slave cuts what it wrote in a term the new master never had:
// the commitlog, the consume queues and the index end at the cut, the next append takes
// the first cut queue offset again, and the request is gone once applied.
func TestRequestedCut(t *testing.T) {
	for _, clean := range []bool{true, false} {
		name := map[bool]string{true: "after Close", false: "after a crash"}[clean]
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t)
			s := mustOpen(t, cfg)
			const n, keep = 700, 450 // crosses a 64 KiB segment after the cut point
			var cutAt int64
			for i := range n {
				r := mustPut(t, s, newMsg("T", 0, body(i)+strings.Repeat("x", 50), map[string]string{"KEYS": "k" + body(i)}))
				if i == keep {
					cutAt = r.PhysicalOffset
				}
			}
			waitDispatched(t, s)
			end := s.CommitLogMaxOffset()
			if clean {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				s.crash()
			}
			if err := RequestCut(cfg.StorePathRootDir, cutAt); err != nil {
				t.Fatal(err)
			}
			s = mustOpen(t, cfg)
			defer s.Close()
			if got := s.CommitLogMaxOffset(); got != cutAt {
				t.Fatalf("commitlog ends at %d, want the cut %d", got, cutAt)
			}
			if s.LastCut != (Cut{From: cutAt, To: end}) {
				t.Fatalf("LastCut = %+v, want {%d %d}", s.LastCut, cutAt, end)
			}
			if got := s.MaxOffsetInQueue("T", 0); got != keep {
				t.Fatalf("queue max offset %d, want %d", got, keep)
			}
			if got := len(readAll(t, s, "T", 0)); got != keep {
				t.Fatalf("%d messages readable, want %d", got, keep)
			}
			if hits := s.QueryMessage("T", "k"+body(keep+1), 10, 0, 1<<62); len(hits) != 0 {
				t.Fatalf("the index still finds a cut message at %v", hits)
			}
			if _, err := os.Stat(filepath.Join(cfg.StorePathRootDir, CutRequestFile)); !os.IsNotExist(err) {
				t.Fatalf("cut request still there: %v", err)
			}
			if len(s.Damaged()) != 0 {
				t.Fatalf("a requested cut reported damage: %v", s.Damaged())
			}
			r := mustPut(t, s, newMsg("T", 0, "after the cut", nil))
			if r.QueueOffset != keep || r.PhysicalOffset != cutAt {
				t.Fatalf("append after the cut: queue offset %d at %d, want %d at %d", r.QueueOffset, r.PhysicalOffset, keep, cutAt)
			}
		})
	}
}

func TestCutRequestErrors(t *testing.T) {
	cfg := testConfig(t)
	s := mustOpen(t, cfg)
	mustPut(t, s, newMsg("T", 0, "one", nil))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := RequestCut(cfg.StorePathRootDir, -1); err == nil {
		t.Fatal("a negative cut was accepted")
	}
	// A request at or past the end is moot: removed, nothing cut.
	if err := RequestCut(cfg.StorePathRootDir, 1<<40); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, cfg)
	if s.LastCut != (Cut{}) || s.CommitLogMaxOffset() == 0 {
		t.Fatalf("moot request cut: %+v", s.LastCut)
	}
	s.Close()
	if err := os.WriteFile(filepath.Join(cfg.StorePathRootDir, CutRequestFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), CutRequestFile) {
		t.Fatalf("Open with a garbage request: %v, want an error naming the file", err)
	}
}
