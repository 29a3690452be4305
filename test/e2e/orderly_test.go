package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
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
