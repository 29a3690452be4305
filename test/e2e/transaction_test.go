package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
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
	// Ended transactions are recorded (RMQ_SYS_TRANS_OP_HALF_TOPIC): never checked.
	if l.checked["commit"] != 0 || l.checked["rollback"] != 0 {
		t.Fatalf("ended transactions checked back: %v", l.checked)
	}
	if n := col.deliveries(); n != 2 {
		t.Fatalf("%d deliveries, want 2 (commit, check)", n)
	}
}

// answerListener answers every local transaction and every check with the state
// its answer func gives, and counts the checks per body.
type answerListener struct {
	mu      sync.Mutex
	answer  func(body string) primitive.LocalTransactionState
	checked map[string]int
}

func newAnswerListener(answer func(string) primitive.LocalTransactionState) *answerListener {
	return &answerListener{answer: answer, checked: map[string]int{}}
}

func (l *answerListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.answer(string(m.Body))
}

func (l *answerListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checked[string(m.Body)]++
	return l.answer(string(m.Body))
}

func (l *answerListener) set(answer func(string) primitive.LocalTransactionState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.answer = answer
}

func (l *answerListener) checks(body string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checked[body]
}

func unknown(string) primitive.LocalTransactionState { return primitive.UnkonwnState }

func startTxProducer(t *testing.T, group string, l primitive.TransactionListener) rocketmq.TransactionProducer {
	t.Helper()
	p, err := producer.NewTransactionProducer(l,
		producer.WithNameServer([]string{namesrvAddr}), producer.WithGroupName(group),
		producer.WithInstanceName(instance("tp")))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

func sendTx(t *testing.T, p rocketmq.TransactionProducer, topic, body string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte(body)))
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("send %s: %v %v", body, res, err)
	}
}

// TestTransactionCheckMax: a transaction that stays unknown is checked back
// transactionCheckMax times (2 here), then discarded with a log line and never
// delivered.
func TestTransactionCheckMax(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, "broker-txmax", map[string]string{
		// The time-out leaves the producer its first heartbeat (1 s after it starts): as
		// in Java, a check with no live producer to ask counts all the same.
		"transactionCheckInterval": "500", "transactionTimeOut": "3000", "transactionCheckMax": "2"})
	const topic = "E2ETxCheckMax"
	createTopic(t, b, topic, 1)
	l := newAnswerListener(unknown)
	p := startTxProducer(t, "E2ETxCheckMaxP", l)
	defer p.Shutdown()
	sendTx(t, p, topic, "forever-unknown")
	eventually(t, 30*time.Second, "two checks", func() bool { return l.checks("forever-unknown") >= 2 })
	eventually(t, 10*time.Second, "the discard logged", func() bool {
		out := b.p.output()
		return strings.Contains(out, "half message discarded") && strings.Contains(out, "to=TRANS_CHECK_MAX_TIME_TOPIC")
	})
	time.Sleep(2 * time.Second) // four more scans
	if n := l.checks("forever-unknown"); n != 2 {
		t.Fatalf("checked %d times, want transactionCheckMax = 2", n)
	}
	_, col := startPush(t, "E2ETxCheckMaxG", topic, pushOpts{from: consumer.ConsumeFromFirstOffset})
	time.Sleep(2 * time.Second)
	if n := col.deliveries(); n != 0 {
		t.Fatalf("a discarded transaction was delivered %d times", n)
	}
}
