package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// TestOrderlyConsumer: an orderly consumer locks its queues (LOCK_BATCH_MQ) and gets
// one queue's messages in order.
func TestOrderlyConsumer(t *testing.T) {
	const topic = "E2EOrderly"
	createTopic(t, shared, topic, 4)
	p, err := rocketmq.NewProducer(
		producer.WithNameServer([]string{namesrvAddr}),
		producer.WithGroupName("E2EOrderlyP"),
		producer.WithInstanceName(instance("p")),
		producer.WithQueueSelector(producer.NewHashQueueSelector()),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	for i := range 20 {
		m := msg(topic, fmt.Sprintf("o-%02d", i), "")
		m.WithShardingKey("order-1")
		sendSync(t, p, m)
	}
	got := make(chan string, 100)
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{namesrvAddr}),
		consumer.WithGroupName("E2EOrderlyG"),
		consumer.WithInstance(instance("c")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumerOrder(true),
	)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			got <- string(m.Body)
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	for i := range 20 {
		select {
		case b := <-got:
			if want := fmt.Sprintf("o-%02d", i); b != want {
				t.Fatalf("message %d is %s, want %s", i, b, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of 20 ordered messages within 30s", i)
		}
	}
}

// orderLog records, per consumer, the sequence numbers each sharding key arrived with.
type orderLog struct {
	mu    sync.Mutex
	byKey map[string][]int // in arrival order, over all consumers
	per   map[string]map[string][]int
}

func (l *orderLog) listener(name string) func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			l.record(name, string(m.Body))
		}
		return consumer.ConsumeSuccess, nil
	}
}

// record notes that consumer name got body, "<key>/<seq>".
func (l *orderLog) record(name, body string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key, seqStr, _ := strings.Cut(body, "/")
	seq, _ := strconv.Atoi(seqStr)
	l.byKey[key] = append(l.byKey[key], seq)
	if l.per[name] == nil {
		l.per[name] = map[string][]int{}
	}
	l.per[name][key] = append(l.per[name][key], seq)
}

// complete reports whether every key arrived up to n-1.
func (l *orderLog) complete(keys []string, n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		seen := map[int]bool{}
		for _, s := range l.byKey[k] {
			seen[s] = true
		}
		if len(seen) < n {
			return false
		}
	}
	return true
}

// TestOrderlyTwoConsumersOneLeaves: two orderly consumers of one group share a topic's
// queues (each locked by one of them, LOCK_BATCH_MQ); messages of eight sharding keys arrive in strict
// order per key, also while one consumer leaves and the other takes its queues over. A
// queue taken over may replay from the last committed offset (at-least-once), but
// never out of order: per consumer every key's sequence rises, and the first arrival
// of each sequence number comes in order.
func TestOrderlyTwoConsumersOneLeaves(t *testing.T) {
	t.Parallel()
	// Names of their own per run: a consumer of the official client that shut down may
	// stay listed in its group until the broker expires its channel (see childConsumer).
	topic, group := instance("E2EOrderlyLeave"), instance("E2EOrderlyLeaveG")
	createTopic(t, shared, topic, 4)
	createRetryTopic(t, shared, group)
	p, err := rocketmq.NewProducer(
		producer.WithNameServer([]string{namesrvAddr}), producer.WithGroupName("E2EOrderlyLeaveP"),
		producer.WithInstanceName(instance("p")), producer.WithQueueSelector(producer.NewHashQueueSelector()))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()

	l := &orderLog{byKey: map[string][]int{}, per: map[string]map[string][]int{}}
	// The consumers that leave run in child processes: see childConsumer for why.
	startChild := func(name string) *childConsumer {
		return startChildConsumer(t, childConsumerSpec{Namesrv: namesrvAddr, Group: group, Topic: topic,
			Instance: instance(name), Orderly: true}, func(body string) { l.record(name, body) })
	}
	// The first consumer of a group locks every queue. When others join it drops some
	// of them, but the Go client does not unlock the queues it drops (its
	// removeUnnecessaryMessageQueue leaves orderly consumption as a TODO), so they
	// would stay blocked until the lock expires (60 s). A first consumer that leaves
	// again unlocks all it holds, and the two that stay share the queues at once.
	first := startChild("first")
	eventually(t, 20*time.Second, "the first consumer registered", func() bool { return len(consumerIDs(t, shared, group)) == 1 })
	stays, err := newFirstOffsetConsumer(namesrvAddr, group, instance("stays"), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := stays.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, l.listener("stays")); err != nil {
		t.Fatal(err)
	}
	if err := stays.Start(); err != nil {
		t.Fatal(err)
	}
	defer stays.Shutdown()
	leaves := startChild("leaves")
	eventually(t, 20*time.Second, "three consumers registered", func() bool { return len(consumerIDs(t, shared, group)) == 3 })
	first.stop(t)
	eventually(t, 10*time.Second, "two consumers left", func() bool { return len(consumerIDs(t, shared, group)) == 2 })

	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}
	const n = 60
	for seq := range n {
		if seq == n/2 {
			// Let both consume for a while, then one leaves mid-stream. A consumer whose
			// lock lost a race with the leaving first one gets its queues at its next
			// rebalance (the Go client's run every 20 s): allow two.
			eventually(t, 45*time.Second, "both consumers busy", func() bool {
				l.mu.Lock()
				defer l.mu.Unlock()
				return len(l.per["stays"]) > 0 && len(l.per["leaves"]) > 0
			})
			leaves.stop(t)
		}
		for _, k := range keys {
			m := primitive.NewMessage(topic, []byte(fmt.Sprintf("%s/%d", k, seq)))
			m.WithShardingKey(k)
			sendSync(t, p, m)
		}
		if seq < n/2 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	eventually(t, 60*time.Second, "every key's messages", func() bool { return l.complete(keys, n) })

	l.mu.Lock()
	defer l.mu.Unlock()
	for name, perKey := range l.per {
		for k, seqs := range perKey {
			for i := 1; i < len(seqs); i++ {
				if seqs[i] <= seqs[i-1] {
					t.Errorf("consumer %s, key %s: %d after %d (%v)", name, k, seqs[i], seqs[i-1], seqs)
					break
				}
			}
		}
	}
	for _, k := range keys {
		next := 0
		for _, s := range l.byKey[k] {
			if s > next {
				t.Errorf("key %s: %d arrived before %d (%v)", k, s, next, l.byKey[k])
				break
			}
			if s == next {
				next++
			}
		}
	}
	t.Logf("keys per consumer: stays %d, leaves %d", len(l.per["stays"]), len(l.per["leaves"]))
}

// TestOrderlyQueueFreedWhenOwnerDisconnects: an orderly consumer whose connection
// drops without unlocking (it crashed) does not block its queues until the 60 s lock
// expiry: the broker releases its locks when the connection closes and tells the group,
// and a consumer of the official client takes the queues over and consumes in order.
func TestOrderlyQueueFreedWhenOwnerDisconnects(t *testing.T) {
	t.Parallel()
	const topic, group = "E2EOrderlyCrash", "E2EOrderlyCrashG"
	createTopic(t, shared, topic, 2)
	createRetryTopic(t, shared, group)
	p := newProducer(t, "E2EOrderlyCrashP")
	for i := range 10 {
		m := msg(topic, fmt.Sprintf("c-%02d", i), "")
		sendSync(t, p, m) // queue chosen at random; order is checked per queue
	}

	// The crashed consumer: registered in the group, both queues locked, one connection.
	ghost := remoting.NewClient(remoting.ClientConfig{})
	defer ghost.Close()
	call := func(code int16, body string) *remoting.Command {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := ghost.Invoke(ctx, shared.addr, remoting.NewRequest(code, nil, []byte(body)))
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("request %d: %v %v", code, resp, err)
		}
		return resp
	}
	call(remoting.HeartBeat, fmt.Sprintf(`{"clientID":"ghost@1","producerDataSet":[],"consumerDataSet":[{"groupName":%q,`+
		`"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET",`+
		`"subscriptionDataSet":[{"topic":%q,"subString":"*","subVersion":1,"expressionType":"TAG"}],"unitMode":false}]}`, group, topic))
	resp := call(remoting.LockBatchMQ, fmt.Sprintf(`{"consumerGroup":%q,"clientId":"ghost@1","mqSet":[`+
		`{"topic":%q,"brokerName":%q,"queueId":0},{"topic":%q,"brokerName":%q,"queueId":1}]}`, group, topic, shared.name, topic, shared.name))
	if !strings.Contains(string(resp.Body), `"queueId":1`) || !strings.Contains(string(resp.Body), `"queueId":0`) {
		t.Fatalf("ghost locked %s, want both queues", resp.Body)
	}

	var mu sync.Mutex
	got := map[int][]string{} // by queue
	c, err := newFirstOffsetConsumer(namesrvAddr, group, instance("c"), true)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[m.Queue.QueueId] = append(got[m.Queue.QueueId], string(m.Body))
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got[0]) + len(got[1])
	}
	eventually(t, 10*time.Second, "the consumer registered", func() bool { return len(consumerIDs(t, shared, group)) == 2 })
	time.Sleep(2 * time.Second)
	if n := count(); n != 0 {
		t.Fatalf("consumed %d messages from queues another client holds", n)
	}
	ghost.Close()
	eventually(t, 15*time.Second, "10 messages after the owner's connection closed", func() bool { return count() >= 10 })
	mu.Lock()
	defer mu.Unlock()
	for q, bodies := range got {
		for i := 1; i < len(bodies); i++ {
			if bodies[i] <= bodies[i-1] {
				t.Errorf("queue %d out of order: %v", q, bodies)
				break
			}
		}
	}
}
