package store

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

func TestSyncFlushGroupCommit(t *testing.T) {
	cfg := testConfig(t)
	cfg.FlushDiskType = SyncFlush
	cfg.MappedFileSizeCommitLog = 1 << 20
	s := mustOpen(t, cfg)
	defer s.Close()
	var syncs atomic.Int64
	hook := func() { syncs.Add(1); time.Sleep(2 * time.Millisecond) }
	s.cl.syncHook.Store(&hook)
	const writers, per = 8, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				r := mustPut(t, s, newMsg("G", int32(w), body(i), nil))
				// Acknowledged means durable: flushed covers the record.
				if end := r.PhysicalOffset + int64(r.Size); s.FlushedOffset() < end {
					t.Errorf("acked at %d but flushed only %d", end, s.FlushedOffset())
				}
			}
		}()
	}
	wg.Wait()
	if n := syncs.Load(); n >= writers*per {
		t.Fatalf("%d syncs for %d appends: no group commit", n, writers*per)
	}
	t.Logf("%d fdatasync calls for %d appends", syncs.Load(), writers*per)
}

func TestSyncFlushTimeout(t *testing.T) {
	cfg := testConfig(t)
	cfg.FlushDiskType = SyncFlush
	cfg.SyncFlushTimeout = 50 * time.Millisecond
	s := mustOpen(t, cfg)
	defer s.Close()
	release := make(chan struct{})
	hook := func() { <-release }
	s.cl.syncHook.Store(&hook)
	r, err := s.PutMessage(newMsg("F", 0, "slow", nil))
	if err != nil || r.Status != PutFlushDiskTimeout || r.Status.String() != "FLUSH_DISK_TIMEOUT" {
		t.Fatalf("status %v err %v, want FLUSH_DISK_TIMEOUT", r.Status, err)
	}
	close(release)
	s.cl.syncHook.Store(nil)
	// The message was stored all the same.
	waitDispatched(t, s)
	if msgs := readAll(t, s, "F", 0); len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	// The group commit recovers: a later put is flushed in time again. One fdatasync
	// can itself take more than 50 ms on a loaded disk, so a few may time out first.
	for i := 0; ; i++ {
		r := mustPut(t, s, newMsg("F", 0, "fast", nil))
		if r.Status == PutOK {
			break
		}
		if i == 50 {
			t.Fatalf("after the stall, 50 puts in a row: %v", r.Status)
		}
	}
}

func TestAsyncFlushInBackground(t *testing.T) {
	cfg := testConfig(t)
	cfg.FlushIntervalCommitLog = 20 * time.Millisecond
	cfg.FlushIntervalConsumeQueue = 30 * time.Millisecond
	s := mustOpen(t, cfg)
	defer s.Close()
	r := mustPut(t, s, newMsg("A", 0, "x", nil))
	end := r.PhysicalOffset + int64(r.Size)
	deadline := time.Now().Add(2 * time.Second)
	for {
		ck, ok := readCheckpoint(cfg.checkpointPath())
		if ok && s.FlushedOffset() >= end && ck.commitLog >= end && ck.consumeQueue >= end {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not flushed in background: flushed %d checkpoint %+v", s.FlushedOffset(), ck)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Under SYNC_FLUSH every Notify runs once, after its records are durable, on whichever
// flush covers them; concurrent appenders share flushes.
func TestNotifyAnswersEachAppendOnceDurable(t *testing.T) {
	cfg := testConfig(t)
	cfg.FlushDiskType = SyncFlush
	var rounds atomic.Int64
	cfg.OnGroupCommit = func(int) { rounds.Add(1) }
	s := mustOpen(t, cfg)
	defer s.Close()
	const writers, per = 8, 50
	var answered, early atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				res, durable, err := s.AppendMessages([]*message.Message{newMsg("N", int32(w%2), body(i), nil)})
				if err != nil {
					t.Error(err)
					return
				}
				end := res.PhysicalOffset + int64(res.Size)
				done := make(chan struct{})
				durable.Notify(func(st PutStatus) {
					if st != PutOK || s.FlushedOffset() < end {
						early.Add(1)
					}
					answered.Add(1)
					close(done) // a second call would panic
				})
				<-done
			}
		}()
	}
	wg.Wait()
	if answered.Load() != writers*per || early.Load() != 0 {
		t.Fatalf("answered %d of %d, %d before durable or not PUT_OK", answered.Load(), writers*per, early.Load())
	}
	if rounds.Load() == 0 {
		t.Fatal("no group commit reported")
	}
}
