//go:build k8s

package e2ek8s

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openrmq/rocketmq-operator/test/internal/procs"
)

// steadyLoad is the load of the roll and failover measurements: an official Go producer
// at rollRate msg/s (SendSync, 2 retries, 3 s timeout), the official Java producer at
// javaRollRate (java/.../SteadyProducer.java), both on one topic, and a Go push consumer
// reading along. Every key a producer had acknowledged SEND_OK must be consumed.
type steadyLoad struct {
	topic    string
	got      *seen
	consumed gapTracker // between receipts
	sent     gapTracker // between the Go producer's SEND_OKs

	mu    sync.Mutex
	acked []string
	notOK map[primitive.SendStatus]int // stored, but not as asked: SLAVE_NOT_AVAILABLE, FLUSH_SLAVE_TIMEOUT, ...
	// onAck, when set, sees each SEND_OK with when its send began, under mu.
	onAck func(res *primitive.SendResult, began, at time.Time)

	java *procs.Proc
	stop func()
}

// startSteadyLoad starts the load on a new topic of 4 queues, named after name and suffix,
// for at most limit, and returns once both producers' sends are acknowledged and
// consumed. onAck may be nil.
func startSteadyLoad(nsAddrs []string, name, suffix string, limit time.Duration,
	onAck func(res *primitive.SendResult, began, at time.Time)) *steadyLoad {
	l := &steadyLoad{topic: "E2E" + name + strings.ReplaceAll(suffix, "-", "_"), got: &seen{keys: map[string]int{}},
		notOK: map[primitive.SendStatus]int{}, onAck: onAck}
	lower := strings.ToLower(name)
	createTopic(strings.Join(nsAddrs, ";"), l.topic, 4)
	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver(nsAddrs)),
		consumer.WithGroupName("e2e-"+lower+"-"+runID+suffix), consumer.WithInstance(lower+"-"+runID+suffix),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	Expect(err).NotTo(HaveOccurred())
	Expect(c.Subscribe(l.topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			l.consumed.tick(time.Now())
			l.got.mu.Lock()
			for _, m := range msgs {
				l.got.keys[m.GetKeys()]++
			}
			l.got.mu.Unlock()
			return consumer.ConsumeSuccess, nil
		})).To(Succeed())
	Expect(c.Start()).To(Succeed())
	DeferCleanup(func() { _ = c.Shutdown() })

	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver(nsAddrs)),
		producer.WithGroupName("e2e-"+lower+"-producer"), producer.WithInstanceName(lower+"-"+runID+suffix),
		producer.WithRetry(2), producer.WithSendMsgTimeout(3*time.Second))
	Expect(err).NotTo(HaveOccurred())
	Expect(p.Start()).To(Succeed())
	DeferCleanup(func() { _ = p.Shutdown() })
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer GinkgoRecover()
		defer wg.Done()
		tick := time.NewTicker(time.Second / rollRate)
		defer tick.Stop()
		for i := 0; i < rollRate*int(limit/time.Second); i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			k := fmt.Sprintf("%s-%s%s-%d", lower, runID, suffix, i)
			m := primitive.NewMessage(l.topic, []byte(k))
			m.WithKeys([]string{k})
			began := time.Now()
			res, err := p.SendSync(ctx, m)
			switch {
			case err == nil && res.Status == primitive.SendOK:
				at := time.Now()
				l.sent.tick(at)
				l.mu.Lock()
				l.acked = append(l.acked, k)
				if l.onAck != nil {
					l.onAck(res, began, at)
				}
				l.mu.Unlock()
			case err == nil:
				l.mu.Lock()
				l.notOK[res.Status]++
				l.mu.Unlock()
			}
		}
	}()

	// The Java producer stops when its stdin closes, at the latest after limit.
	stdin, stopSignal, err := os.Pipe()
	Expect(err).NotTo(HaveOccurred())
	l.java, err = java.WithJVMArgs("-Drocketmq.namesrv.addr="+strings.Join(nsAddrs, ";")).WithStdin(stdin).StartMain(
		filepath.Join(workDir, "java"), "steady-producer"+suffix, "org.openrmq.e2ek8s.SteadyProducer",
		l.topic, lower+"-java-"+runID+suffix, fmt.Sprint(javaRollRate), fmt.Sprint(int(limit/time.Second)))
	_ = stdin.Close() // the JVM holds its own copy
	Expect(err).NotTo(HaveOccurred())
	l.stop = sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
		_ = stopSignal.Close()
		select {
		case <-l.java.Done():
		case <-time.After(15 * time.Second): // a send in flight ends within its 3 s timeout
			l.java.Stop(procs.DefaultStopGrace)
		}
	})
	DeferCleanup(l.stop)

	Eventually(func() int { return l.got.count(nil) }).WithTimeout(time.Minute).Should(BeNumerically(">=", rollRate))
	jctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	Expect(l.java.WaitForLog(jctx, " SEND_OK ")).To(Succeed())
	return l
}

// loadResult is what a finished load measured.
type loadResult struct {
	acked, lost int
	end         time.Time  // when the producers were stopped
	js          *javaSends // the Java producer's sends
	notOK       map[primitive.SendStatus]int
}

// stall is the longest stall of either producer, each measured on its own.
func (l *steadyLoad) stall(r loadResult) time.Duration {
	return max(l.sent.max(r.end), r.js.stall.max(r.end))
}

// finish lets ten more seconds' worth of sends be acknowledged, stops both producers and
// waits for every acknowledged key to be consumed; with mayLose it waits up to a minute
// and leaves judging what was not consumed to the caller.
func (l *steadyLoad) finish(mayLose bool) loadResult {
	ackedNow := func() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.acked) }
	tail := ackedNow() + 10*rollRate
	Eventually(ackedNow).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(BeNumerically(">=", tail))
	r := loadResult{end: time.Now()}
	l.stop()
	r.js = parseJavaSends(l.java.Log())
	Expect(r.js.done).NotTo(BeEmpty(), "the java producer did not finish; log %s:\n%s", l.java.LogPath, l.java.Tail(40))
	l.mu.Lock()
	keys := append(append([]string(nil), l.acked...), r.js.acked...)
	r.notOK = l.notOK
	l.mu.Unlock()
	if mayLose {
		for deadline := time.Now().Add(time.Minute); l.got.count(keys) < len(keys) && time.Now().Before(deadline); {
			time.Sleep(500 * time.Millisecond)
		}
	} else {
		Eventually(func() int { return l.got.count(keys) }).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Equal(len(keys)))
	}
	r.acked, r.lost = len(keys), len(keys)-l.got.count(keys)
	report("java producer at %d msg/s: acked=%d not_send_ok=%d failed=%d longest_send_stall_ms=%d",
		javaRollRate, len(r.js.acked), len(r.js.notOK), len(r.js.failed), r.js.stall.max(r.end).Milliseconds())
	return r
}
