package e2e

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestSIGKILLKeepsDelayedAndHalfMessages: delayed messages not yet due and half
// messages of unresolved transactions (already checked back once) survive a SIGKILL of
// the broker. After the restart each delayed message is delivered once, not before it
// was due, and each half message is checked back with a live producer of the group,
// which commits it, and delivered. Delayed messages delivered before the kill are not
// delivered again (their delay offsets were persisted).
func TestSIGKILLKeepsDelayedAndHalfMessages(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, "broker-sigkill", map[string]string{
		"messageDelayLevel":        "1s 2s 8s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s",
		"transactionCheckInterval": "1000", "transactionTimeOut": "1000",
	})
	const topic, txGroup = "E2ESigkill", "E2ESigkillTxP"
	const delay = 8 * time.Second // level 3 here
	createTopic(t, b, topic, 2)

	// Transactions first: their first check comes about two seconds later.
	l := newAnswerListener(unknown)
	tp := startTxProducer(t, txGroup, l)
	var halves []string
	for i := range 3 {
		body := fmt.Sprintf("half-%d", i)
		sendTx(t, tp, topic, body)
		halves = append(halves, body)
	}
	p := newProducer(t, "E2ESigkillP")
	var early []string
	for i := range 3 {
		body := fmt.Sprintf("early-%d", i)
		m := msg(topic, body, "")
		m.WithDelayTimeLevel(1)
		sendSync(t, p, m)
		early = append(early, body)
	}
	var delayed []string
	sent := time.Now()
	for i := range 5 {
		body := fmt.Sprintf("delayed-%d", i)
		m := msg(topic, body, "")
		m.WithDelayTimeLevel(3)
		sendSync(t, p, m)
		delayed = append(delayed, body)
	}
	eventually(t, 10*time.Second, "a first check of each half message", func() bool {
		for _, h := range halves {
			if l.checks(h) == 0 {
				return false
			}
		}
		return true
	})
	// The level-1 messages are due and delivered to their topic before the kill, and
	// their delay offsets written (100 ms after the flush of the copies).
	eventually(t, 10*time.Second, "the level-1 messages delivered", func() bool { return sum(maxOffsets(t, b, topic, 2)) == 3 })
	time.Sleep(time.Second)
	tp.Shutdown()
	if time.Since(sent) > delay-2*time.Second {
		t.Fatalf("too slow to kill the broker before the delayed messages are due (%v after sending)", time.Since(sent))
	}
	if err := b.stop(syscall.SIGKILL); err == nil {
		t.Fatal("the broker survived SIGKILL")
	}
	if err := b.start(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()

	// A live producer of the group commits what is checked from now on. It sends a
	// transaction of its own, so it knows the broker and heartbeats to it.
	l.set(func(string) primitive.LocalTransactionState { return primitive.CommitMessageState })
	before := map[string]int{}
	for _, h := range halves {
		before[h] = l.checks(h)
	}
	tp2 := startTxProducer(t, txGroup, l)
	defer tp2.Shutdown()
	waitRoute(t, topic, true)
	sendTx(t, tp2, topic, "after-restart")

	_, col := startPush(t, "E2ESigkillG", topic, pushOpts{from: consumer.ConsumeFromFirstOffset})
	all := append(append(append([]string{"after-restart"}, halves...), delayed...), early...)
	eventually(t, 40*time.Second, "every delayed and half message delivered", func() bool {
		for _, body := range all {
			if !col.has(body) {
				return false
			}
		}
		return true
	})
	time.Sleep(2 * time.Second) // duplicates, were there any, would show by now
	for _, h := range halves {
		if l.checks(h) == before[h] {
			t.Errorf("%s delivered without a check after the restart", h)
		}
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	// A level-1 message delivered again by the restarted broker would be a second copy
	// in the topic, and a second delivery to this group, which reads from the start.
	if col.count != len(all) {
		t.Errorf("%d deliveries of %d messages: some delivered twice", col.count, len(all))
	}
	for _, body := range delayed {
		m := col.msgs[body]
		if due := m.BornTimestamp + delay.Milliseconds(); m.StoreTimestamp < due {
			t.Errorf("%s delivered %d ms before due", body, due-m.StoreTimestamp)
		}
	}
	t.Logf("restarted %v after the delayed sends", killed.Sub(sent))
}
