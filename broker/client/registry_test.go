package client

import (
	"testing"
	"time"
)

func TestLocks(t *testing.T) {
	l := NewLocks(time.Minute)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	q := []QueueKey{{Topic: "t", BrokerName: "b", QueueID: 0}, {Topic: "t", BrokerName: "b", QueueID: 1}}
	if got := l.TryLock("g", "c1", q); len(got) != 2 {
		t.Fatalf("c1 locked %v", got)
	}
	if got := l.TryLock("g", "c2", q[:1]); len(got) != 0 {
		t.Fatalf("c2 took a held lock: %v", got)
	}
	if got := l.TryLock("other", "c2", q[:1]); len(got) != 1 {
		t.Fatalf("locks are per group: %v", got)
	}
	now = now.Add(61 * time.Second)
	if got := l.TryLock("g", "c2", q[:1]); len(got) != 1 {
		t.Fatalf("expired lock not taken: %v", got)
	}
	l.Unlock("g", "c1", q) // c1 no longer holds queue 0; queue 1 is released
	if got := l.TryLock("g", "c3", q); len(got) != 1 || got[0].QueueID != 1 {
		t.Fatalf("after unlock: %v", got)
	}
}
