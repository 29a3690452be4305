package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// TestDelayAndRetry: a message with delay level 1 arrives about 1 s late, and a message
// the consumer fails comes back through %RETRY%<group> after the first retry delay (10 s).
func TestDelayAndRetry(t *testing.T) {
	t.Parallel()
	const topic = "E2ERetry"
	createTopic(t, shared, topic, 1)
	createRetryTopic(t, shared, "E2ERetryG")
	p := newProducer(t, "E2ERetryP")

	var mu sync.Mutex
	seen := map[string][]time.Time{}
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{namesrvAddr}), consumer.WithGroupName("E2ERetryG"),
		consumer.WithInstance(instance("c")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerModel(consumer.Clustering))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		result := consumer.ConsumeSuccess
		for _, m := range msgs {
			b := string(m.Body)
			seen[b] = append(seen[b], time.Now())
			if b == "fail-once" && len(seen[b]) == 1 {
				result = consumer.ConsumeRetryLater
			}
		}
		return result, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	count := func(b string) int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen[b])
	}

	sendSync(t, p, msg(topic, "warmup", ""))
	eventually(t, 30*time.Second, "the warm-up message", func() bool { return count("warmup") == 1 })

	delayed := msg(topic, "delayed", "")
	delayed.WithDelayTimeLevel(1)
	sent := time.Now()
	sendSync(t, p, delayed)
	sendSync(t, p, msg(topic, "fail-once", ""))
	eventually(t, 10*time.Second, "the delayed message", func() bool { return count("delayed") == 1 })
	mu.Lock()
	late := seen["delayed"][0].Sub(sent)
	mu.Unlock()
	if late < 900*time.Millisecond || late > 5*time.Second {
		t.Errorf("delay level 1 delivered after %v, want about 1s", late)
	}
	eventually(t, 40*time.Second, "the failed message again", func() bool { return count("fail-once") == 2 })
	mu.Lock()
	gap := seen["fail-once"][1].Sub(seen["fail-once"][0])
	mu.Unlock()
	if gap < 10*time.Second || gap > 15*time.Second {
		t.Errorf("retried after %v, want the 10 s of delay level 3", gap)
	}
}

// createRetryTopic creates %RETRY%<group> before the group's first consumer starts, as
// it exists for any group that has run before. A brand-new group's retry topic is made
// by its first heartbeat, after the client looked its route up at start (and found
// none): the client then pulls its retries only from its next route refresh, up to
// 30 s later, with this broker as with Java's.
func createRetryTopic(t *testing.T, b *brokerProc, group string) {
	t.Helper()
	createTopic(t, b, "%RETRY%"+group, 1)
}

// shortLevels makes retries fast: level 3 (the first retry) is 2 s, level 4 (the
// second) 3 s, every other level 1 s.
const shortLevels = "1s 1s 2s 3s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s"

// delivery is one delivery of a message to a push consumer.
type delivery struct {
	at             time.Time
	topic          string
	reconsumeTimes int32
	offsetMsgID    string
	originMsgID    string
	retryTopic     string
}

// failer is a push consumer's listener that fails a message's first failures
// deliveries (ConsumeRetryLater) and records every delivery.
type failer struct {
	mu       sync.Mutex
	failures int // -1: fail always
	seen     map[string][]delivery
}

func newFailer(failures int) *failer {
	return &failer{failures: failures, seen: map[string][]delivery{}}
}

func (f *failer) consume(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	result := consumer.ConsumeSuccess
	for _, m := range msgs {
		b := string(m.Body)
		f.seen[b] = append(f.seen[b], delivery{at: time.Now(), topic: m.Topic, reconsumeTimes: m.ReconsumeTimes,
			offsetMsgID: m.OffsetMsgId, originMsgID: m.GetProperty(primitive.PropertyOriginMessageId),
			retryTopic: m.GetProperty(primitive.PropertyRetryTopic)})
		if f.failures < 0 || len(f.seen[b]) <= f.failures {
			result = consumer.ConsumeRetryLater
		}
	}
	return result, nil
}

func (f *failer) deliveries(body string) []delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]delivery(nil), f.seen[body]...)
}

// startFailing starts a push consumer of group on topic (one message per call) with
// listener f and extra options.
func startFailing(t *testing.T, group, topic string, f *failer, opts ...consumer.Option) {
	t.Helper()
	opts = append([]consumer.Option{
		consumer.WithNameServer([]string{namesrvAddr}), consumer.WithGroupName(group),
		consumer.WithInstance(instance("c")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerModel(consumer.Clustering), consumer.WithConsumeMessageBatchMaxSize(1),
	}, opts...)
	c, err := rocketmq.NewPushConsumer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, f.consume); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown() })
}

// TestRetryRedeliversUnderOriginalTopic: a message failed twice is redelivered twice,
// under its original topic, with reconsumeTimes 1 then 2, the delay of level
// 3 + reconsumeTimes before each (configured short here), and ORIGIN_MESSAGE_ID
// naming the first delivery.
func TestRetryRedeliversUnderOriginalTopic(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, "broker-retry", map[string]string{"messageDelayLevel": shortLevels})
	const topic, group = "E2ERetryTwice", "E2ERetryTwiceG"
	createTopic(t, b, topic, 1)
	createRetryTopic(t, b, group)
	p := newProducer(t, "E2ERetryTwiceP")
	f := newFailer(2)
	startFailing(t, group, topic, f)
	sendSync(t, p, msg(topic, "fail-twice", ""))
	eventually(t, 40*time.Second, "three deliveries", func() bool { return len(f.deliveries("fail-twice")) >= 3 })
	time.Sleep(2500 * time.Millisecond) // a fourth delivery would be due by now
	d := f.deliveries("fail-twice")
	if len(d) != 3 {
		t.Fatalf("%d deliveries, want 3 (one and two retries)", len(d))
	}
	for i, x := range d {
		if x.topic != topic || x.reconsumeTimes != int32(i) {
			t.Errorf("delivery %d: topic %q reconsumeTimes %d, want %q and %d", i, x.topic, x.reconsumeTimes, topic, i)
		}
		if i > 0 && (x.originMsgID != d[0].offsetMsgID || x.retryTopic != topic) {
			t.Errorf("delivery %d: ORIGIN_MESSAGE_ID %q RETRY_TOPIC %q, want %q and %q", i, x.originMsgID, x.retryTopic, d[0].offsetMsgID, topic)
		}
	}
	// Level 3 (2 s) before the first retry, level 4 (3 s) before the second.
	if gap := d[1].at.Sub(d[0].at); gap < 2*time.Second || gap > 8*time.Second {
		t.Errorf("first retry after %v, want the 2 s of level 3", gap)
	}
	if gap := d[2].at.Sub(d[1].at); gap < 3*time.Second || gap > 9*time.Second {
		t.Errorf("second retry after %v, want the 3 s of level 4", gap)
	}
}

// TestDeadLetterQueue: with a retry limit of 1 a message that keeps failing is
// delivered twice, then lands in %DLQ%<group> (one queue, readable), where another
// group consumes it.
func TestDeadLetterQueue(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, "broker-dlq", map[string]string{"messageDelayLevel": shortLevels})
	const topic, group = "E2EDLQ", "E2EDLQG"
	createTopic(t, b, topic, 1)
	createRetryTopic(t, b, group)
	p := newProducer(t, "E2EDLQP")
	f := newFailer(-1)
	// The official clients send their maxReconsumeTimes with every send-back, and it
	// overrides the group's retryMaxTimes (in Java too).
	startFailing(t, group, topic, f, consumer.WithMaxReconsumeTimes(1))
	res := sendSync(t, p, msg(topic, "dead", ""))
	eventually(t, 30*time.Second, "two deliveries", func() bool { return len(f.deliveries("dead")) >= 2 })

	dlq := "%DLQ%" + group
	waitRoute(t, dlq, true)
	route := invoke(t, namesrvAddr, remoting.GetRouteInfoByTopic, map[string]string{"topic": dlq}, nil)
	var rd struct {
		QueueDatas []struct {
			ReadQueueNums, WriteQueueNums, Perm int
		} `json:"queueDatas"`
	}
	if err := jsonUnmarshal(route.Body, &rd); err != nil || len(rd.QueueDatas) != 1 || rd.QueueDatas[0].ReadQueueNums != 1 ||
		rd.QueueDatas[0].WriteQueueNums != 1 || rd.QueueDatas[0].Perm&4 == 0 {
		t.Fatalf("route of %s: %s (%v), want one readable queue", dlq, route.Body, err)
	}
	_, col := startPush(t, "E2EDLQReader", dlq, pushOpts{from: consumer.ConsumeFromFirstOffset})
	eventually(t, 30*time.Second, "the dead message consumed from "+dlq, func() bool { return col.has("dead") })
	col.mu.Lock()
	m := col.msgs["dead"]
	col.mu.Unlock()
	if m.Topic != dlq || m.ReconsumeTimes != 2 || m.GetProperty(primitive.PropertyRetryTopic) != topic ||
		m.GetProperty(primitive.PropertyOriginMessageId) != res.OffsetMsgID || m.GetProperty("origin") != "e2e-dead" {
		t.Errorf("DLQ message: topic %q reconsumeTimes %d RETRY_TOPIC %q ORIGIN_MESSAGE_ID %q (sent %q) origin %q",
			m.Topic, m.ReconsumeTimes, m.GetProperty(primitive.PropertyRetryTopic), m.GetProperty(primitive.PropertyOriginMessageId),
			res.OffsetMsgID, m.GetProperty("origin"))
	}
	time.Sleep(2 * time.Second) // no third delivery: it is dead
	if n := len(f.deliveries("dead")); n != 2 {
		t.Errorf("%d deliveries to the failing group, want 2", n)
	}
}

// TestDelayLevel2: a level-2 message (5 s by default) reaches an idle consumer no
// earlier than 5 s and no later than 6 s after it was sent, and the broker puts it back
// into its topic no more than 100 ms after due.
func TestDelayLevel2(t *testing.T) {
	t.Parallel()
	const topic = "E2EDelay2"
	createTopic(t, shared, topic, 1)
	p := newProducer(t, "E2EDelay2P")
	col, arrived := startIdlePush(t, p, "E2EDelay2G", topic)
	time.Sleep(300 * time.Millisecond) // idle: the consumer's pull is held
	m := msg(topic, "level-2", "")
	m.WithDelayTimeLevel(2)
	before := time.Now()
	sendSync(t, p, m)
	after := time.Now()
	var at time.Time
	select {
	case at = <-arrived:
	case <-time.After(15 * time.Second):
		t.Fatal("level-2 message not consumed within 15s")
	}
	col.mu.Lock()
	got := col.msgs["level-2"]
	col.mu.Unlock()
	if got == nil {
		t.Fatal("another message arrived instead of the delayed one")
	}
	early, late := at.Sub(before), at.Sub(after)
	// The broker's own lateness: its re-put time against due (born + 5 s; born is
	// before the original store time, so this over-states it a little).
	t.Logf("level 2 consumed %v after the send; re-put %d ms after born", early, got.StoreTimestamp-got.BornTimestamp)
	if early < 5*time.Second || late > 6*time.Second {
		t.Fatalf("level 2 consumed %v..%v after the send, want within [5s, 6s]", late, early)
	}
	// The bound for the schedule itself at light load (typically 1 ms here).
	if lateness := got.StoreTimestamp - got.BornTimestamp - 5000; lateness < 0 || lateness > 100 {
		t.Fatalf("re-put %d ms after due, want [0, 100]", lateness)
	}
}
