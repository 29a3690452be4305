package store

import (
	"sync/atomic"
	"testing"
	"time"
)

// AppendHeldFor measures, on the store's clock, how long the append under way has held
// the commitlog: 0 with none under way, the time since it took the lock while one is.
func TestAppendHeldFor(t *testing.T) {
	cfg := testConfig(t)
	var clock atomic.Int64
	clock.Store(time.UnixMilli(1_700_000_000_000).UnixNano())
	cfg.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	inside, release := make(chan struct{}), make(chan struct{})
	var hold atomic.Bool
	cfg.InAppend = func() {
		if hold.Load() {
			close(inside)
			<-release
		}
	}
	s := mustOpen(t, cfg)
	defer s.Close()
	if d := s.AppendHeldFor(); d != 0 {
		t.Fatalf("no append under way, yet held for %v", d)
	}
	hold.Store(true)
	done := make(chan error, 1)
	go func() { _, err := s.PutMessage(newMsg("Busy", 0, "b", nil)); done <- err }()
	<-inside
	clock.Add(int64(1500 * time.Millisecond))
	if d := s.AppendHeldFor(); d != 1500*time.Millisecond {
		t.Errorf("held for %v, want 1.5s", d)
	}
	hold.Store(false)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := s.AppendHeldFor(); d != 0 {
		t.Errorf("append done, yet held for %v", d)
	}
}
