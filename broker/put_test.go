package broker

import (
	"testing"

	"github.com/openrmq/rocketmq-operator/broker/store/storetest"
	"github.com/openrmq/rocketmq-operator/broker/transaction"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// Every put wakes replication, whoever writes; the statistics count by kind: a send in
// the total and under its topic, a send-back or commit in the total only, the broker's
// own records not at all. The services' puts go the same way (serviceStore).
func TestPutPathWakesReplicationAndCountsByKind(t *testing.T) {
	s := storetest.Open(t, storetest.Config(t.TempDir()))
	defer s.Close()
	wakes := 0
	p := &putPath{store: s, wakeHA: func() { wakes++ }, stats: newStats()}
	msg := func(topic string) *message.Message { return storetest.Message(topic, 0, "body", nil) }

	if _, err := p.put(putSend, msg("A"), msg("A")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.put(putRequeued, msg("%RETRY%g")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.put(putInternal, msg("OFFSET_MOVED_EVENT")); err != nil {
		t.Fatal(err)
	}
	txn := serviceStore{s, p, transactionKind}
	for _, topic := range []string{transaction.HalfTopic, transaction.OpTopic, "B"} {
		if _, err := txn.PutMessage(msg(topic)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := (serviceStore{s, p, scheduleKind}).PutMessage(msg("C")); err != nil {
		t.Fatal(err)
	}

	if wakes != 7 {
		t.Errorf("replication woken %d times for 7 puts", wakes)
	}
	// 2 sent, 1 sent back, 1 committed (B); not the offset-moved event, the half and op
	// records or the delayed re-put of C.
	if n := p.stats.put.Load(); n != 4 {
		t.Errorf("put total %d, want 4", n)
	}
	if it, ok := p.stats.lookup(statsTopicPutNums, "A"); !ok || it.value.Load() != 2 {
		t.Errorf("TOPIC_PUT_NUMS of A: %v", it)
	}
	for _, topic := range []string{"%RETRY%g", "OFFSET_MOVED_EVENT", "B", "C", transaction.HalfTopic} {
		if _, ok := p.stats.lookup(statsTopicPutNums, topic); ok {
			t.Errorf("TOPIC_PUT_NUMS counted for %s", topic)
		}
	}
}
