package broker

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// stalledBroker is a broker whose commitlog appends block, while stall is set, until
// release is closed: a page cache that takes no writes.
type stalledBroker struct {
	*testBroker
	stall   atomic.Bool
	inside  chan struct{} // closed when an append blocked
	release chan struct{}
}

func startStalledBroker(t *testing.T, mutate func(*config.Config)) *stalledBroker {
	t.Helper()
	sb := &stalledBroker{inside: make(chan struct{}), release: make(chan struct{})}
	sb.testBroker = startBrokerWith(t, "", func(c *config.Config) {
		c.SendMessageThreadPoolNums = 1
		if mutate != nil {
			mutate(c)
		}
	}, Options{InAppend: func() {
		if sb.stall.CompareAndSwap(true, false) {
			close(sb.inside)
			<-sb.release
		}
	}})
	// Registered after startBrokerWith's, so it runs before the broker stops: a stuck
	// append is let go first.
	t.Cleanup(func() {
		select {
		case <-sb.release:
		default:
			close(sb.release)
		}
	})
	return sb
}

// sendAsync sends one message and delivers the answer on the channel returned.
func (sb *stalledBroker) sendAsync(topic, body string) <-chan *remoting.Command {
	out := make(chan *remoting.Command, 1)
	req := sendV2Request(topic, 0, "", body)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := sb.cl.Invoke(ctx, sb.addr, req)
		if err != nil {
			resp = req.NewResponse(-1, err.Error())
		}
		out <- resp
	}()
	return out
}

// A send that waits in the send pool longer than waitTimeMillsInSendQueue is answered
// SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE] while the only worker is still stuck, as 4.9.7's
// BrokerFastFailure does; the stuck send itself completes once the store moves again.
func TestSendQueueFastFailure(t *testing.T) {
	sb := startStalledBroker(t, func(c *config.Config) {
		c.WaitTimeInSendQueue = 50 * time.Millisecond
		c.OSPageCacheBusyTimeout = time.Hour // this test is about the queue only
	})
	sb.createTopic("FF", 1)
	sb.stall.Store(true)
	stuck := sb.sendAsync("FF", "stuck")
	<-sb.inside
	var queued []<-chan *remoting.Command
	for range 3 {
		queued = append(queued, sb.sendAsync("FF", "queued"))
	}
	for i, ch := range queued {
		resp := <-ch
		if resp.Code != remoting.SystemBusy || !strings.HasPrefix(resp.Remark,
			"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: ") {
			t.Errorf("queued send %d answered %d %q, want SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE]", i, resp.Code, resp.Remark)
		}
	}
	select {
	case resp := <-stuck:
		t.Fatalf("the stuck send was answered (%d %q) while its append was blocked", resp.Code, resp.Remark)
	default:
	}
	close(sb.release)
	if resp := <-stuck; resp.Code != remoting.Success {
		t.Fatalf("the stuck send: %d %q", resp.Code, resp.Remark)
	}
	if resp := sb.sendV2("FF", 0, "", "after"); resp.Code != remoting.Success {
		t.Fatalf("a send after the stall: %d %q", resp.Code, resp.Remark)
	}
}

// While an append holds the commitlog longer than osPageCacheBusyTimeOutMills, sends are
// refused at once: those queued behind the stuck worker with [PCBUSY_CLEAN_QUEUE], those
// that reach a free worker with [PC_SYNCHRONIZED]; GET_BROKER_RUNTIME_INFO shows how long
// the lock is held.
func TestSendRefusedWhileCommitLogBusy(t *testing.T) {
	for _, tc := range []struct {
		workers int
		want    string // remark prefix
	}{
		{1, "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: "},
		{2, pcSynchronizedRemark},
	} {
		t.Run(strconv.Itoa(tc.workers)+" workers", func(t *testing.T) {
			sb := startStalledBroker(t, func(c *config.Config) {
				c.SendMessageThreadPoolNums = tc.workers
				c.OSPageCacheBusyTimeout = time.Millisecond
				c.WaitTimeInSendQueue = time.Hour // only the busy commitlog refuses here
			})
			sb.createTopic("PC", 1)
			sb.stall.Store(true)
			stuck := sb.sendAsync("PC", "stuck")
			<-sb.inside
			waitFor(t, func() bool { return sb.store.AppendHeldFor() > time.Millisecond })
			resp := <-sb.sendAsync("PC", "while busy")
			if resp.Code != remoting.SystemBusy || !strings.HasPrefix(resp.Remark, tc.want) {
				t.Errorf("a send while the commitlog is busy: %d %q, want SYSTEM_BUSY %q", resp.Code, resp.Remark, tc.want)
			}
			var info struct{ Table map[string]string }
			if err := protocol.Decode(sb.invoke(remoting.GetBrokerRuntimeInfo, nil, nil).Body, &info); err != nil {
				t.Fatal(err)
			}
			if info.Table["pageCacheLockTimeMills"] == "0" {
				t.Errorf("pageCacheLockTimeMills=0 while an append holds the commitlog")
			}
			close(sb.release)
			if resp := <-stuck; resp.Code != remoting.Success {
				t.Fatalf("the stuck send: %d %q", resp.Code, resp.Remark)
			}
			if resp := sb.sendV2("PC", 0, "", "after"); resp.Code != remoting.Success {
				t.Fatalf("a send after the stall: %d %q", resp.Code, resp.Remark)
			}
		})
	}
}
