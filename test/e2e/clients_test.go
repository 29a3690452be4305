package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

var instanceSeq atomic.Int64

func instance(prefix string) string { return fmt.Sprintf("%s-%d", prefix, instanceSeq.Add(1)) }

// newProducer starts a producer of group on the e2e name server; opts come after the
// defaults and so override them.
func newProducer(t *testing.T, group string, opts ...producer.Option) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(append([]producer.Option{
		producer.WithNameServer([]string{namesrvAddr}),
		producer.WithGroupName(group),
		producer.WithInstanceName(instance("p")),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(5 * time.Second),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown() })
	return p
}

// collector gathers what a push consumer receives, by body.
type collector struct {
	mu       sync.Mutex
	msgs     map[string]*primitive.MessageExt
	count    int // deliveries, duplicates included
	received []time.Time
	onMsg    func(*primitive.MessageExt)
}

func newCollector() *collector { return &collector{msgs: map[string]*primitive.MessageExt{}} }

func (c *collector) consume(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		c.msgs[string(m.Body)] = m
		c.count++
		c.received = append(c.received, now)
		if c.onMsg != nil {
			c.onMsg(m)
		}
	}
	return consumer.ConsumeSuccess, nil
}

func (c *collector) distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.msgs)
}

func (c *collector) deliveries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

func (c *collector) has(body string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.msgs[body]
	return ok
}

type pushOpts struct {
	from      consumer.ConsumeFromWhere
	broadcast bool
	selector  string
	collector *collector
}

// startPush starts a push consumer of group on topic; it is shut down at the test's end
// unless the caller shuts it down first.
func startPush(t *testing.T, group, topic string, o pushOpts) (rocketmq.PushConsumer, *collector) {
	t.Helper()
	if o.collector == nil {
		o.collector = newCollector()
	}
	if o.selector == "" {
		o.selector = "*"
	}
	model := consumer.Clustering
	if o.broadcast {
		model = consumer.BroadCasting
	}
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{namesrvAddr}),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance("c")),
		consumer.WithConsumeFromWhere(o.from),
		consumer.WithConsumerModel(model),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: o.selector}, o.collector.consume); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { c.Shutdown() }) })
	return c, o.collector
}

func msg(topic, body, tag string) *primitive.Message {
	m := primitive.NewMessage(topic, []byte(body))
	if tag != "" {
		m.WithTag(tag)
	}
	m.WithKeys([]string{"key-" + body})
	m.WithProperty("origin", "e2e-"+body)
	return m
}

func sendSync(t *testing.T, p rocketmq.Producer, msgs ...*primitive.Message) *primitive.SendResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.SendSync(ctx, msgs...)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if res.Status != primitive.SendOK {
		t.Fatalf("send status %v", res.Status)
	}
	return res
}

// consumerIDs asks the broker for a group's client ids (GET_CONSUMER_LIST_BY_GROUP).
func consumerIDs(t *testing.T, b *brokerProc, group string) []string {
	t.Helper()
	resp := invoke(t, b.addr, remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": group}, nil)
	if resp.Code != remoting.Success {
		return nil
	}
	var body struct {
		ConsumerIDList []string `json:"consumerIdList"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		t.Fatalf("consumer list body %q: %v", resp.Body, err)
	}
	return body.ConsumerIDList
}

// runID tells this run's client-side files from earlier runs'.
var runID = strconv.FormatInt(time.Now().UnixNano(), 36)

func removeLocalOffsets(group string) {
	dirs, _ := filepath.Glob(filepath.Join(os.Getenv("HOME"), ".rocketmq_client_go", "*", group))
	for _, d := range dirs {
		os.RemoveAll(d)
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// startIdlePush starts a push consumer of topic in group (from the first offset), sends a
// warm-up message with p and waits until it is consumed, so that the consumer's pull is
// then held idle by the broker. It returns the collector and the arrival times of the
// messages that follow.
func startIdlePush(t *testing.T, p rocketmq.Producer, group, topic string) (*collector, <-chan time.Time) {
	t.Helper()
	col := newCollector()
	arrived := make(chan time.Time, 100)
	col.onMsg = func(*primitive.MessageExt) { arrived <- time.Now() }
	startPush(t, group, topic, pushOpts{from: consumer.ConsumeFromFirstOffset, collector: col})
	sendSync(t, p, msg(topic, "warmup", ""))
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("warm-up message not consumed within 30s")
	}
	return col, arrived
}

// startPull starts a pull consumer of group subscribed to every message of topic, shut
// down when the test ends.
func startPull(t *testing.T, group, topic, instanceName string) rocketmq.PullConsumer {
	t.Helper()
	pc, err := rocketmq.NewPullConsumer(
		consumer.WithNameServer([]string{namesrvAddr}),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance(instanceName)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Shutdown() })
	return pc
}
