package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// txListener commits "commit", rolls back "rollback" and leaves "check" unknown until
// the broker asks (CHECK_TRANSACTION_STATE), then commits it.
type txListener struct {
	mu      sync.Mutex
	checked map[string]int
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	switch string(m.Body) {
	case "commit":
		return primitive.CommitMessageState
	case "rollback":
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checked[string(m.Body)]++
	return primitive.CommitMessageState
}

// TestTransactions: committed messages are delivered, rolled-back ones are not, and an
// unknown one is committed once the broker checks back with the producer.
func TestTransactions(t *testing.T) {
	t.Parallel()
	const topic = "E2ETransaction"
	createTopic(t, shared, topic, 2)
	l := &txListener{checked: map[string]int{}}
	p, err := producer.NewTransactionProducer(l,
		producer.WithNameServer([]string{namesrvAddr}),
		producer.WithGroupName("E2ETransactionP"),
		producer.WithInstanceName(instance("tp")),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	for _, body := range []string{"commit", "rollback", "check"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := p.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte(body)))
		cancel()
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %s: %v %v", body, res, err)
		}
	}
	_, col := startPush(t, "E2ETransactionG", topic, pushOpts{from: consumer.ConsumeFromFirstOffset})
	eventually(t, 30*time.Second, "the committed and the checked message", func() bool { return col.has("commit") && col.has("check") })
	time.Sleep(2 * time.Second) // a rolled-back message would show up by now
	if col.has("rollback") {
		t.Fatal("rolled-back message delivered")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.checked["check"] == 0 {
		t.Fatal("the broker never checked the unknown transaction")
	}
}
