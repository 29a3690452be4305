package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/openrmq/rocketmq-operator/pkg/client"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// TestOverload floods a broker with its default flow control from many connections with
// far more sends outstanding than it takes, first of 1 KiB bodies, then of 256 KiB ones
// whose bytes in flight are eight times what its send queue holds (MaxWaitingBytes),
// while the official Go client produces and consumes a topic of its own at a steady pace.
// The broker must keep answering: every send is stored or refused SYSTEM_BUSY (which a
// client may retry elsewhere), none times out; its anonymous memory stays bounded; and
// the well-behaved client's sends and pulls keep being served during the flood, not
// after it.
func TestOverload(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of overload; -short leaves it out")
	}
	b := startTestBroker(t, "broker-overload", map[string]string{
		// The flow control under test, with RocketMQ's defaults.
		"waitTimeMillsInSendQueue": "200", "osPageCacheBusyTimeOutMills": "1000",
	})
	flooded, watched := runName(t, "E2EOverload"), runName(t, "E2EOverloadWatch")
	createTopic(t, b, flooded, 8)
	createTopic(t, b, watched, 2)

	// The well-behaved client: a producer sending every 50 ms and a push consumer.
	_, col := startPush(t, runName(t, "E2EOverloadG"), watched, pushOpts{from: consumer.ConsumeFromFirstOffset})
	p := newProducer(t, runName(t, "E2EOverloadP"))
	var watchSent, watchFailed atomic.Int64
	stopWatch := make(chan struct{})
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stopWatch:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			res, err := p.SendSync(ctx, primitive.NewMessage(watched, []byte(fmt.Sprintf("watch-%d", i))))
			cancel()
			if err != nil || res.Status != primitive.SendOK {
				watchFailed.Add(1)
				continue
			}
			watchSent.Add(1)
		}
	}()

	// The queues hold at most MaxWaitingBytes (16 MiB) per pool, and the heap at most
	// twice what is live past 64 MiB (cmd/broker's gcHeadroom): 60-70 MiB here. The
	// 256 KiB phase offers 512 MiB in flight, which an unbounded queue would hold; with
	// GOGC=400's headroom alone the peaks were 150 and 300 MiB.
	const bound = 128 << 20
	rss := watchAnonRSS(t, b.p.cmd.Process.Pid)
	for _, phase := range []struct {
		name                 string
		body                 int
		conns, inflight, per int // per: sends per connection at most
		within               time.Duration
	}{
		{"1KiB", 1 << 10, 64, 128, 200_000, 30 * time.Second},
		{"256KiB", 256 << 10, 64, 32, 64, 60 * time.Second},
	} {
		receivedBefore := col.deliveries()
		got := flood(t, b.addr, flooded, phase.body, phase.conns, phase.inflight, phase.per, phase.within)
		peak := rss.takePeak()
		t.Logf("overload %s: %d connections x %d outstanding for %v: stored=%d busy=%d, broker peak anon RSS %d MiB; watch: sent=%d failed=%d consumed=%d",
			phase.name, phase.conns, phase.inflight, got.took.Round(time.Millisecond), got.stored, got.busy, peak>>20,
			watchSent.Load(), watchFailed.Load(), col.deliveries())
		if peak > bound {
			t.Errorf("overload %s: broker peak anonymous RSS %d MiB, want at most %d MiB", phase.name, peak>>20, bound>>20)
		}
		if got.other != 0 {
			t.Errorf("overload %s: %d sends neither stored nor refused SYSTEM_BUSY (first: %v)", phase.name, got.other, got.firstOther)
		}
		if got.stored == 0 {
			t.Errorf("overload %s: no send stored", phase.name)
		}
		if col.deliveries() == receivedBefore {
			t.Errorf("overload %s: the push consumer got nothing during the flood", phase.name)
		}
	}
	close(stopWatch)
	<-watchDone
	if sent, failed := watchSent.Load(), watchFailed.Load(); sent == 0 || failed*10 > sent+failed {
		t.Errorf("the steady producer got %d of %d sends through during the flood: its line should take turns with the flood's", sent, sent+failed)
	}
	want := int(watchSent.Load())
	eventually(t, 30*time.Second, fmt.Sprintf("the %d watch messages consumed", want), func() bool { return col.distinct() >= want })
}

type floodResult struct {
	stored, busy, other int64
	firstOther          error
	took                time.Duration
}

// flood sends bodies of size bytes to topic on addr from conns connections, each keeping
// inflight sends outstanding, until each has sent per or within has passed.
func flood(t *testing.T, addr, topic string, size, conns, inflight, per int, within time.Duration) floodResult {
	t.Helper()
	body := make([]byte, size)
	var (
		res  floodResult
		mu   sync.Mutex
		wg   sync.WaitGroup
		stop = time.Now().Add(within)
	)
	start := time.Now()
	for c := range conns {
		rc := remoting.NewClient(remoting.ClientConfig{})
		defer rc.Close()
		cl := client.New(rc, namesrvAddr)
		mq := client.MessageQueue{Topic: topic, BrokerName: "broker-overload", QueueID: c % 8, Addr: addr}
		slots := make(chan struct{}, inflight)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sends sync.WaitGroup
			defer sends.Wait()
			for range per {
				if time.Now().After(stop) {
					return
				}
				slots <- struct{}{}
				sends.Add(1)
				err := cl.SendAsync(context.Background(), mq, "E2EOverloadFlood", &client.Message{Topic: topic, Body: body}, 10*time.Second,
					func(_ *client.SendResult, err error) {
						defer func() { <-slots; sends.Done() }()
						var re *client.ResponseError
						mu.Lock()
						defer mu.Unlock()
						switch {
						case err == nil:
							res.stored++
						case errors.As(err, &re) && re.Code == remoting.SystemBusy:
							res.busy++
						default:
							if res.other++; res.firstOther == nil {
								res.firstOther = err
							}
						}
					})
				if err != nil {
					<-slots
					sends.Done()
					mu.Lock()
					if res.other++; res.firstOther == nil {
						res.firstOther = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	res.took = time.Since(start)
	return res
}

// anonRSS samples a process's anonymous resident memory (RssAnon) every 100 ms.
type anonRSS struct {
	peak atomic.Int64
	done chan struct{}
	wg   sync.WaitGroup
}

func watchAnonRSS(t *testing.T, pid int) *anonRSS {
	t.Helper()
	r := &anonRSS{done: make(chan struct{})}
	read := func() {
		if v, err := readAnonRSS(pid); err == nil && v > r.peak.Load() {
			r.peak.Store(v)
		}
	}
	if _, err := readAnonRSS(pid); err != nil {
		t.Fatalf("broker memory: %v", err)
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			read()
			select {
			case <-r.done:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(r.stop)
	return r
}

// takePeak returns the peak in bytes since the sampling started or the last takePeak,
// and starts the next.
func (r *anonRSS) takePeak() int64 { return r.peak.Swap(0) }

// stop ends the sampling, once, at the test's end.
func (r *anonRSS) stop() {
	close(r.done)
	r.wg.Wait()
}

func readAnonRSS(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "RssAnon:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no RssAnon in /proc/%d/status", pid)
}
