package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestDelayAndRetry: a message with delay level 1 arrives about 1 s late, and a message
// the consumer fails comes back through %RETRY%<group> after the first retry delay (10 s).
func TestDelayAndRetry(t *testing.T) {
	t.Parallel()
	const topic = "E2ERetry"
	createTopic(t, shared, topic, 1)
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
	if gap < 9*time.Second {
		t.Errorf("retried after %v, want the 10 s of delay level 3", gap)
	}
}
