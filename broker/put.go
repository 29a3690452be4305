package broker

import (
	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/broker/transaction"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// putPath is the broker's one way of storing messages: every writer (sends, stored
// replies, send-backs, offset-moved events, and through serviceStore the schedule and
// transaction services) calls it, and it owns the side effects of a write, as 4.9.7's
// CommitLog.putMessage owns handleHA:
//
//   - the append to broker/store;
//   - waking the master's HA writers at once, so that a slave copies the record now and
//     not at the writers' next 100 ms poll;
//   - the put statistics of GET_BROKER_RUNTIME_INFO and VIEW_BROKER_STATS_DATA, as the
//     putKind says.
//
// The long-poll notification needs no call here: the store's dispatcher reports each
// record once its consume-queue entry exists (store.OnArrival, registered in New), which
// is when a held pull can read it. Waiting for a SYNC_MASTER's slave stays with the
// callers: a send waits off its worker (ReplyDeferred, ReplyLater), a stored reply in place.
type putPath struct {
	store  *store.Store
	wakeHA func() // the master's HA writers (notifyHA); a no-op elsewhere
	stats  *stats
}

// putKind says how a put is counted.
type putKind uint8

const (
	// putSend is a producer's message (a send, a stored reply): counted in the put total
	// and under the topic stored (TOPIC_PUT_NUMS, TOPIC_PUT_SIZE), so that delayed
	// messages count in SCHEDULE_TOPIC_XXXX, as Java's send processor counts them.
	putSend putKind = iota
	// putRequeued is a message given back or released: a consumer's send-back, a
	// committed transaction. Counted in the put total only.
	putRequeued
	// putInternal is a record of the broker's own: a due delayed message re-put, a half
	// message copy or op record, an offset-moved event. Not counted.
	putInternal
)

// append appends msgs (one topic and queue) and runs the write's side effects; the
// caller waits for durable or is notified of it, once, as with store.AppendMessages.
func (p *putPath) append(msgs []*message.Message, kind putKind) (*store.PutResult, store.Durable, error) {
	res, durable, err := p.store.AppendMessages(msgs)
	if err != nil {
		return nil, durable, err
	}
	p.wakeHA()
	switch kind {
	case putSend:
		p.stats.topicPut(msgs[0].Topic, res.MsgCount, res.Size)
	case putRequeued:
		p.stats.put.Add(int64(res.MsgCount))
	}
	return res, durable, nil
}

// put is append waiting for durability (store.PutMessages).
func (p *putPath) put(kind putKind, msgs ...*message.Message) (*store.PutResult, error) {
	res, durable, err := p.append(msgs, kind)
	if err != nil {
		return nil, err
	}
	res.Status = durable.Wait()
	return res, nil
}

// serviceStore is broker/store as the schedule and transaction services see it: reads
// go to the store, puts through the put path, counted as kind says.
type serviceStore struct {
	*store.Store
	puts *putPath
	kind func(m *message.Message) putKind
}

func (s serviceStore) PutMessage(m *message.Message) (*store.PutResult, error) {
	return s.puts.put(s.kind(m), m)
}

// scheduleKind: a due delayed message's re-put is the broker's own record.
func scheduleKind(*message.Message) putKind { return putInternal }

// transactionKind: the service's own records go to its system topics; anything else it
// puts is a committed half message's real message (in SCHEDULE_TOPIC_XXXX when delayed).
func transactionKind(m *message.Message) putKind {
	switch m.Topic {
	case transaction.HalfTopic, transaction.OpTopic, transaction.DiscardTopic:
		return putInternal
	}
	return putRequeued
}
