package lock

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func mq(q int32) MessageQueue { return MessageQueue{Topic: "T", BrokerName: "b", QueueID: q} }

func newTest() (*Manager, *fakeClock) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	return NewManager(WithClock(c.Now), WithMaxLiveTime(60*time.Second)), c
}

func TestLockBatchOwnerAndExpiry(t *testing.T) {
	m, clk := newTest()
	got := m.LockBatch("g", []MessageQueue{mq(0), mq(1)}, "c1")
	if want := []MessageQueue{mq(0), mq(1)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("c1 lock = %v, want %v", got, want)
	}
	// c2 gets only the free queue.
	got = m.LockBatch("g", []MessageQueue{mq(1), mq(2)}, "c2")
	if want := []MessageQueue{mq(2)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("c2 lock = %v, want %v", got, want)
	}
	// Another group is independent.
	if got := m.LockBatch("g2", []MessageQueue{mq(1)}, "c2"); len(got) != 1 {
		t.Fatalf("other group lock = %v", got)
	}
	// Renewal at 50 s keeps c1's lock alive past the original 60 s.
	clk.Advance(50 * time.Second)
	m.LockBatch("g", []MessageQueue{mq(0)}, "c1")
	clk.Advance(20 * time.Second) // q0 renewed 20 s ago; q1 70 s ago
	if got := m.LockBatch("g", []MessageQueue{mq(0), mq(1)}, "c2"); !reflect.DeepEqual(got, []MessageQueue{mq(1)}) {
		t.Fatalf("c2 after expiry of q1 = %v, want [q1]", got)
	}
	if !m.IsLocked("g", mq(0), "c1") || m.IsLocked("g", mq(1), "c1") || !m.IsLocked("g", mq(1), "c2") {
		t.Fatal("IsLocked disagrees")
	}
	// Exactly at the limit the lock is still live (Java: expired when > max).
	clk.Advance(40 * time.Second) // q0 renewed 60 s ago
	if owner, ok := m.Owner("g", mq(0)); !ok || owner != "c1" {
		t.Fatalf("owner at exactly 60 s = %q %v", owner, ok)
	}
	clk.Advance(time.Millisecond)
	if _, ok := m.Owner("g", mq(0)); ok {
		t.Fatal("lock alive after 60 s")
	}
}

func TestUnlockBatchOnlyOwn(t *testing.T) {
	m, _ := newTest()
	m.LockBatch("g", []MessageQueue{mq(0)}, "c1")
	m.UnlockBatch("g", []MessageQueue{mq(0)}, "c2") // not the owner: no effect
	if !m.IsLocked("g", mq(0), "c1") {
		t.Fatal("c2 unlocked c1's queue")
	}
	m.UnlockBatch("g", []MessageQueue{mq(0), mq(5)}, "c1")
	if got := m.LockBatch("g", []MessageQueue{mq(0)}, "c2"); len(got) != 1 {
		t.Fatalf("after unlock c2 got %v", got)
	}
}

func TestUnlockClient(t *testing.T) {
	m, _ := newTest()
	m.LockBatch("g1", []MessageQueue{mq(0), mq(1)}, "c1")
	m.LockBatch("g2", []MessageQueue{mq(0)}, "c1")
	m.LockBatch("g2", []MessageQueue{mq(1)}, "c2")
	if n := m.UnlockClient("c1"); n != 3 {
		t.Fatalf("UnlockClient dropped %d, want 3", n)
	}
	if got := m.LockBatch("g1", []MessageQueue{mq(0), mq(1)}, "c3"); len(got) != 2 {
		t.Fatalf("c3 got %v", got)
	}
	if !m.IsLocked("g2", mq(1), "c2") {
		t.Fatal("c2's lock dropped")
	}
	if n := m.UnlockGroupClient("g2", "c2"); n != 1 {
		t.Fatalf("UnlockGroupClient = %d", n)
	}
}

func TestSweep(t *testing.T) {
	m, clk := newTest()
	m.LockBatch("g", []MessageQueue{mq(0)}, "c1")
	clk.Advance(30 * time.Second)
	m.LockBatch("g", []MessageQueue{mq(1)}, "c1")
	clk.Advance(31 * time.Second)
	if n := m.Sweep(); n != 1 {
		t.Fatalf("Sweep = %d, want 1", n)
	}
}

func TestConcurrentSingleOwner(t *testing.T) {
	m, _ := newTest()
	var wg sync.WaitGroup
	wins := make([]int, 8)
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				got := m.LockBatch("g", []MessageQueue{mq(int32(i % 4))}, fmt.Sprintf("c%d", c))
				wins[c] += len(got)
				if i%3 == 0 {
					m.UnlockBatch("g", []MessageQueue{mq(int32(i % 4))}, fmt.Sprintf("c%d", c))
				}
			}
		}(c)
	}
	wg.Wait()
	for q := int32(0); q < 4; q++ {
		owners := 0
		for c := 0; c < 8; c++ {
			if m.IsLocked("g", mq(q), fmt.Sprintf("c%d", c)) {
				owners++
			}
		}
		if owners > 1 {
			t.Fatalf("queue %d has %d owners", q, owners)
		}
	}
}

// The bodies as the Go client (internal/model.go) and Java send them.
func TestBodiesJSON(t *testing.T) {
	goClient := `{"consumerGroup":"g","clientId":"10.0.0.1@123","mqSet":[{"topic":"T","brokerName":"b","queueId":3}]}`
	var req LockBatchRequestBody
	if err := protocol.Decode([]byte(goClient), &req); err != nil {
		t.Fatal(err)
	}
	if req.ConsumerGroup != "g" || req.ClientID != "10.0.0.1@123" || len(req.MQSet) != 1 || req.MQSet[0] != (MessageQueue{BrokerName: "b", QueueID: 3, Topic: "T"}) {
		t.Fatalf("decoded %+v", req)
	}
	java := `{"clientId":"c","consumerGroup":"g","mqSet":[{"brokerName":"b","queueId":0,"topic":"T"}],"onlyThisBroker":true}`
	var ureq UnlockBatchRequestBody
	if err := protocol.Decode([]byte(java), &ureq); err != nil || !ureq.OnlyThisBroker || len(ureq.MQSet) != 1 {
		t.Fatalf("decoded %+v, %v", ureq, err)
	}
	b, _ := json.Marshal(LockBatchResponseBody{LockOKMQSet: []MessageQueue{mq(1)}})
	if want := `{"lockOKMQSet":[{"brokerName":"b","queueId":1,"topic":"T"}]}`; string(b) != want {
		t.Fatalf("response %s, want %s", b, want)
	}
	// An empty result must still be a JSON array: the Go client ranges over it.
	b, _ = json.Marshal(LockBatchResponseBody{LockOKMQSet: NewManager().LockBatch("g", nil, "c")})
	if want := `{"lockOKMQSet":[]}`; string(b) != want {
		t.Fatalf("empty response %s", b)
	}
}
