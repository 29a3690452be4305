package store

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// TestConcurrentWriteRead has writers and readers run at once across
// segment rolls; readers must see every message of their queue, in order,
// intact, and never a partial record.
func TestConcurrentWriteRead(t *testing.T) {
	cfg := testConfig(t)
	s := mustOpen(t, cfg)
	defer s.Close()
	const writers, per = 4, 400
	arrived := make(chan struct{}, 1)
	s.OnArrival(func(*Arrival) {
		select {
		case arrived <- struct{}{}:
		default:
		}
	})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range per {
				if _, err := s.PutMessage(newMsg("CW", int32(w), fmt.Sprintf("w%d-%d-%s", w, i, strings.Repeat("p", i%300)), nil)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(10 * time.Second)
			for off := int64(0); off < per; {
				if time.Now().After(deadline) {
					t.Errorf("reader %d stuck at %d", w, off)
					return
				}
				r := s.GetMessage("CW", int32(w), off, 32, 0, nil)
				for _, b := range r.Messages {
					m, err := message.DecodeRecord(b, true)
					if err != nil || m.QueueOffset != off || !strings.HasPrefix(string(m.Body), fmt.Sprintf("w%d-%d-", w, off)) {
						t.Errorf("reader %d at %d: %v %q", w, off, err, m.Body)
						r.Release()
						return
					}
					off++
				}
				r.Release()
				if r.Status != Found {
					select { // long-poll style wait
					case <-arrived:
					case <-time.After(5 * time.Millisecond):
					}
				}
			}
		}()
	}
	wg.Wait()
}
