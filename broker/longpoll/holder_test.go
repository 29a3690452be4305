package longpoll

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestNotifyWakesMatchingWaiters(t *testing.T) {
	var max atomic.Int64
	h := New(time.Hour, func(string, int32) int64 { return max.Load() })
	defer h.Close()
	woken := make(chan string, 4)
	hold := func(name string, match func(int64) bool) {
		h.Hold(&Request{Topic: "t", QueueID: 0, Offset: 0, Deadline: time.Now().Add(time.Hour),
			Match: match, Resume: func() { woken <- name }})
	}
	hold("any", nil)
	hold("tag7", func(c int64) bool { return c == 7 })
	max.Store(1)
	h.Notify("t", 0, 1, 3) // tag 3: only the unfiltered waiter
	if got := <-woken; got != "any" {
		t.Fatalf("woken %s", got)
	}
	// Notify decides under the lock before it returns: the filtered waiter
	// is still held, and only one pull was answered.
	if n, st := h.Len(), h.Stats(); n != 1 || st.Woken != 1 {
		t.Fatalf("after a non-matching tag: %d held, %+v", n, st)
	}
	h.Notify("t", 0, 2, 7)
	if got := <-woken; got != "tag7" {
		t.Fatalf("woken %s", got)
	}
	if n, st := h.Len(), h.Stats(); n != 0 || st != (Stats{Woken: 2}) {
		t.Fatalf("%d still held, %+v", n, st)
	}
}

func TestDeadlineAndClose(t *testing.T) {
	h := New(time.Hour, func(string, int32) int64 { return 0 })
	woken := make(chan string, 2)
	h.Hold(&Request{Topic: "t", Deadline: time.Now().Add(30 * time.Millisecond), Resume: func() { woken <- "deadline" }})
	h.Hold(&Request{Topic: "t", Deadline: time.Now().Add(time.Hour), Resume: func() { woken <- "close" }})
	select {
	case got := <-woken:
		if got != "deadline" {
			t.Fatalf("woken %s", got)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("deadline did not fire")
	}
	h.Close()
	if got := <-woken; got != "close" {
		t.Fatalf("woken %s", got)
	}
	// After Close, a new hold is answered at once.
	h.Hold(&Request{Topic: "t", Deadline: time.Now().Add(time.Hour), Resume: func() { woken <- "late" }})
	if got := <-woken; got != "late" {
		t.Fatalf("woken %s", got)
	}
}

// A message that arrived between the pull's read and Hold is not missed.
func TestHoldSeesEarlierArrival(t *testing.T) {
	h := New(time.Hour, func(string, int32) int64 { return 5 })
	defer h.Close()
	woken := make(chan struct{}, 1)
	h.Hold(&Request{Topic: "t", Offset: 4, Deadline: time.Now().Add(time.Hour), Resume: func() { woken <- struct{}{} }})
	select {
	case <-woken:
	case <-time.After(2 * time.Second):
		t.Fatal("held despite data below max")
	}
}
