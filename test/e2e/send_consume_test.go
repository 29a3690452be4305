package e2e

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestSendModesAndPushConsume: sync, async, oneway and batch sends all reach a
// clustering push consumer with body, tag, keys and user properties intact.
func TestSendModesAndPushConsume(t *testing.T) {
	const topic = "E2ESendModes"
	createTopic(t, shared, topic, 4)
	p := newProducer(t, "E2ESendModesP")

	var want []string
	for i := range 5 {
		body := fmt.Sprintf("sync-%d", i)
		res := sendSync(t, p, msg(topic, body, "TagS"))
		if res.OffsetMsgID == "" || res.MsgID == "" {
			t.Fatalf("send result without ids: %+v", res)
		}
		want = append(want, body)
	}
	var wg sync.WaitGroup
	var asyncErr error
	var mu sync.Mutex
	for i := range 5 {
		body := fmt.Sprintf("async-%d", i)
		want = append(want, body)
		wg.Add(1)
		err := p.SendAsync(context.Background(), func(_ context.Context, r *primitive.SendResult, err error) {
			defer wg.Done()
			if err == nil && r.Status != primitive.SendOK {
				err = fmt.Errorf("status %v", r.Status)
			}
			if err != nil {
				mu.Lock()
				asyncErr = err
				mu.Unlock()
			}
		}, msg(topic, body, "TagA"))
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		body := fmt.Sprintf("oneway-%d", i)
		want = append(want, body)
		if err := p.SendOneWay(context.Background(), msg(topic, body, "TagO")); err != nil {
			t.Fatal(err)
		}
	}
	var batch []*primitive.Message
	for i := range 5 {
		body := fmt.Sprintf("batch-%d", i)
		want = append(want, body)
		batch = append(batch, msg(topic, body, "TagB"))
	}
	sendSync(t, p, batch...)
	waitGroup(t, &wg, 10*time.Second, "async send callbacks")
	if asyncErr != nil {
		t.Fatalf("async send: %v", asyncErr)
	}

	_, col := startPush(t, "E2ESendModesG", topic, pushOpts{from: consumer.ConsumeFromFirstOffset})
	eventually(t, 30*time.Second, "all 20 messages consumed", func() bool { return col.distinct() == len(want) })
	col.mu.Lock()
	defer col.mu.Unlock()
	for _, body := range want {
		m := col.msgs[body]
		if m == nil {
			t.Fatalf("%s not received", body)
		}
		wantTag := map[byte]string{'s': "TagS", 'a': "TagA", 'o': "TagO", 'b': "TagB"}[body[0]]
		if m.GetTags() != wantTag || m.GetKeys() != "key-"+body || m.GetProperty("origin") != "e2e-"+body {
			t.Errorf("%s: tag %q keys %q origin %q", body, m.GetTags(), m.GetKeys(), m.GetProperty("origin"))
		}
		if m.Topic != topic || m.StoreHost == "" || m.MsgId == "" {
			t.Errorf("%s: topic %q storeHost %q msgId %q", body, m.Topic, m.StoreHost, m.MsgId)
		}
	}
}

func waitGroup(t *testing.T, wg *sync.WaitGroup, within time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(within):
		t.Fatalf("timed out after %v waiting for %s", within, what)
	}
}

// TestTagFilter: a consumer subscribed to one tag gets only that tag's messages.
func TestTagFilter(t *testing.T) {
	topic := runName(t, "E2ETagFilter")
	createTopic(t, shared, topic, 2)
	p := newProducer(t, "E2ETagFilterP")
	for i := range 10 {
		tag := []string{"red", "blue"}[i%2]
		sendSync(t, p, msg(topic, fmt.Sprintf("%s-%d", tag, i), tag))
	}
	_, col := startPush(t, runName(t, "E2ETagFilterG"), topic, pushOpts{from: consumer.ConsumeFromFirstOffset, selector: "red"})
	eventually(t, 30*time.Second, "5 red messages", func() bool { return col.distinct() == 5 })
	// Give blue messages, were they wrongly delivered, a moment to show up.
	sendSync(t, p, msg(topic, "red-last", "red"))
	eventually(t, 10*time.Second, "the last red message", func() bool { return col.has("red-last") })
	col.mu.Lock()
	defer col.mu.Unlock()
	for body, m := range col.msgs {
		if m.GetTags() != "red" {
			t.Errorf("received %s with tag %q", body, m.GetTags())
		}
	}
}

// TestSQL92Filter: with enablePropertyFilter, a SQL92 subscription gets the messages
// whose properties match.
func TestSQL92Filter(t *testing.T) {
	const topic = "E2ESQL"
	createTopic(t, shared, topic, 2)
	p := newProducer(t, "E2ESQLP")
	for i := range 10 {
		m := msg(topic, fmt.Sprintf("sql-%d", i), "T")
		m.WithProperty("n", fmt.Sprint(i))
		sendSync(t, p, m)
	}
	col := newCollector()
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{namesrvAddr}), consumer.WithGroupName("E2ESQLG"),
		consumer.WithInstance(instance("c")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerModel(consumer.Clustering))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: "n >= 7 AND TAGS = 'T'"}, col.consume); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	eventually(t, 30*time.Second, "3 matching messages", func() bool { return col.distinct() == 3 })
	last := msg(topic, "sql-last", "T")
	last.WithProperty("n", "9")
	sendSync(t, p, last)
	eventually(t, 10*time.Second, "the last matching message", func() bool { return col.has("sql-last") })
	col.mu.Lock()
	defer col.mu.Unlock()
	for body := range col.msgs {
		if body != "sql-7" && body != "sql-8" && body != "sql-9" && body != "sql-last" {
			t.Errorf("received %s", body)
		}
	}
}

// TestLongPollingLatency: an idle push consumer receives a new message within 50 ms at
// the median: its pull is held by the broker and answered on arrival.
func TestLongPollingLatency(t *testing.T) {
	const topic = "E2ELatency"
	createTopic(t, shared, topic, 1)
	p := newProducer(t, "E2ELatencyP")
	_, arrived := startIdlePush(t, p, "E2ELatencyG", topic)
	var lat []time.Duration
	for i := range 9 {
		time.Sleep(300 * time.Millisecond) // idle: the consumer's pull is held
		start := time.Now()
		sendSync(t, p, msg(topic, fmt.Sprintf("m-%d", i), ""))
		select {
		case at := <-arrived:
			lat = append(lat, at.Sub(start))
		case <-time.After(10 * time.Second):
			t.Fatalf("message %d not consumed within 10s", i)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	median := lat[len(lat)/2]
	t.Logf("send-to-consume latencies: %v (median %v)", lat, median)
	if median > 50*time.Millisecond {
		t.Fatalf("median latency %v > 50ms", median)
	}
}

// TestTwoConsumersSplitQueues: two consumers of one group divide the queues and
// together receive everything.
func TestTwoConsumersSplitQueues(t *testing.T) {
	const topic = "E2ESplit"
	createTopic(t, shared, topic, 4)
	p := newProducer(t, "E2ESplitP")
	_, col1 := startPush(t, "E2ESplitG", topic, pushOpts{from: consumer.ConsumeFromFirstOffset})
	_, col2 := startPush(t, "E2ESplitG", topic, pushOpts{from: consumer.ConsumeFromFirstOffset})
	// Wait until the broker lists both, then let them rebalance (the second one's
	// arrival is pushed to the first with NOTIFY_CONSUMER_IDS_CHANGED).
	eventually(t, 10*time.Second, "two consumers registered", func() bool { return len(consumerIDs(t, shared, "E2ESplitG")) == 2 })
	time.Sleep(2 * time.Second)
	const n = 40
	for i := range n {
		sendSync(t, p, msg(topic, fmt.Sprintf("split-%d", i), ""))
	}
	eventually(t, 30*time.Second, "40 messages between the two", func() bool {
		col1.mu.Lock()
		defer col1.mu.Unlock()
		col2.mu.Lock()
		defer col2.mu.Unlock()
		all := map[string]bool{}
		for b := range col1.msgs {
			all[b] = true
		}
		for b := range col2.msgs {
			all[b] = true
		}
		return len(all) == n
	})
	queues := func(c *collector) map[int]bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		out := map[int]bool{}
		for _, m := range c.msgs {
			out[m.Queue.QueueId] = true
		}
		return out
	}
	q1, q2 := queues(col1), queues(col2)
	if len(q1) == 0 || len(q2) == 0 {
		t.Fatalf("one consumer got nothing: queues %v and %v", q1, q2)
	}
	for q := range q1 {
		if q2[q] {
			t.Errorf("queue %d consumed by both (%v, %v)", q, q1, q2)
		}
	}
}

// TestBroadcasting: every consumer of a broadcasting group receives every message.
func TestBroadcasting(t *testing.T) {
	const topic = "E2EBroadcast"
	createTopic(t, shared, topic, 2)
	p := newProducer(t, "E2EBroadcastP")
	o := pushOpts{from: consumer.ConsumeFromFirstOffset, broadcast: true}
	// Broadcasting consumers keep their offsets in local files under
	// ~/.rocketmq_client_go/<clientID>/<group>: a group name of its own per run keeps
	// earlier runs' files out, and they are removed at the end.
	group := "E2EBroadcastG-" + runID
	t.Cleanup(func() { removeLocalOffsets(group) })
	_, col1 := startPush(t, group, topic, o)
	_, col2 := startPush(t, group, topic, o)
	eventually(t, 10*time.Second, "two consumers registered", func() bool { return len(consumerIDs(t, shared, group)) == 2 })
	time.Sleep(time.Second)
	for i := range 10 {
		sendSync(t, p, msg(topic, fmt.Sprintf("bc-%d", i), ""))
	}
	eventually(t, 30*time.Second, "10 messages at each consumer", func() bool { return col1.distinct() == 10 && col2.distinct() == 10 })
}

// TestAutoCreateTopic: a producer sending to an unknown topic gets it created from
// TBW102 (autoCreateTopicEnable defaults to true), and it is routed from then on.
func TestAutoCreateTopic(t *testing.T) {
	topic := "E2EAutoCreate"
	p := newProducer(t, "E2EAutoCreateP")
	sendSync(t, p, msg(topic, "first", ""))
	if _, ok := brokerTopics(t, shared)[topic]; !ok {
		t.Fatal("topic not created on the broker")
	}
	waitRoute(t, topic, true)
	_, col := startPush(t, "E2EAutoCreateG", topic, pushOpts{from: consumer.ConsumeFromFirstOffset})
	eventually(t, 30*time.Second, "the message consumed", func() bool { return col.has("first") })
}
