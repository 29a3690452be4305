package broker

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// TestNonReadingPullersCannotHoldSends: 50 connections ask for large pulls and never
// read the answers. The bytes queued for them stay within the process cap, each is
// closed once its own cap is reached, and a healthy producer on its own connection has
// every send accepted meanwhile (no "send pool full", no SYSTEM_BUSY).
func TestNonReadingPullersCannotHoldSends(t *testing.T) {
	const perConn, total = 1 << 20, 8 << 20
	tb := startBroker(t, "", func(c *config.Config) {
		c.ServerMaxQueuedBytesPerConnection, c.ServerMaxQueuedBytesTotal = perConn, total
	})
	tb.createTopic("Big", 1)
	tb.createTopic("Healthy", 1)
	body := strings.Repeat("b", 16<<10)
	for range 64 {
		if resp := tb.sendV2("Big", 0, "", body); resp.Code != remoting.Success {
			t.Fatalf("fill: %v", resp)
		}
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("Big", 0) == 64 })
	pull, err := remoting.Encode(remoting.NewRequest(remoting.PullMessage, pullFields("flood", "Big", 0, 0, pullSubscription, "*"), nil))
	if err != nil {
		t.Fatal(err)
	}

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the process's queued bytes, sampled while the flood runs
		defer close(sampled)
		for {
			peak.Store(max(peak.Load(), remoting.QueuedBytes()))
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var closed atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		nc, err := net.Dial("tcp", tb.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		wg.Add(1)
		go func() { // writes pulls until the broker closes the connection; reads nothing
			defer wg.Done()
			deadline := time.Now().Add(60 * time.Second)
			nc.SetWriteDeadline(deadline)
			// Bounded by the deadline: the broker closes the connection long before
			// (refused pulls are answered too, and those answers queue as well).
			for i := 0; i < 10_000_000 && time.Now().Before(deadline); i++ {
				if _, err := nc.Write(pull); err != nil {
					closed.Add(1)
					return
				}
			}
		}()
	}

	refused := 0
	for i := range 250 {
		if resp := tb.sendV2("Healthy", 0, "", "healthy"); resp.Code != remoting.Success {
			refused++
			t.Errorf("healthy send %d: %d %s", i, resp.Code, resp.Remark)
		}
	}
	wg.Wait()
	close(stop)
	<-sampled
	t.Logf("healthy sends refused: %d of 250; flooders closed: %d of 50; peak queued %d bytes (cap %d)", refused, closed.Load(), peak.Load(), total)
	if closed.Load() != 50 {
		t.Errorf("%d of 50 non-reading connections closed", closed.Load())
	}
	if p := peak.Load(); p > total+perConn {
		t.Errorf("queued up to %d bytes, cap %d", p, total)
	}
}
