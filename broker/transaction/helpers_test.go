package transaction

import (
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/metadata"
	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/broker/store/storetest"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

func openStore(t testing.TB, root string) *store.Store {
	t.Helper()
	return storetest.Open(t, storetest.Config(root))
}

func loadOffsets(t testing.TB, root string) *metadata.Offsets {
	t.Helper()
	o, err := metadata.LoadOffsets(filepath.Join(root, "config"))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// recorder is a Checker that records its calls.
type recorder struct {
	mu   sync.Mutex
	reqs []*CheckRequest
	at   []time.Time
	ch   chan *CheckRequest
}

func newRecorder() *recorder { return &recorder{ch: make(chan *CheckRequest, 100)} }

func (r *recorder) check(req *CheckRequest) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.at = append(r.at, time.Now())
	r.mu.Unlock()
	r.ch <- req
}

func (r *recorder) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.reqs) }

func (r *recorder) next(t testing.TB, within time.Duration) *CheckRequest {
	t.Helper()
	select {
	case req := <-r.ch:
		return req
	case <-time.After(within):
		t.Fatalf("no check within %v", within)
		return nil
	}
}

// sendHalf sends a transactional message like the broker: ToHalf, PutMessage.
func sendHalf(t testing.TB, st *store.Store, topic string, qid int32, body, group string, extra map[string]string) *store.PutResult {
	t.Helper()
	props := map[string]string{
		message.PropertyTransactionPrepared: "true", message.PropertyProducerGroup: group,
		message.PropertyUniqClientMessageIDKey: "UNIQ-" + body, message.PropertyTags: "tx",
	}
	for k, v := range extra {
		props[k] = v
	}
	p, err := message.EncodeProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	m := &message.Message{
		Topic: topic, QueueID: qid, Body: []byte(body), Properties: p, SysFlag: message.TransactionPreparedType,
		BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("10.1.2.3:4567"),
	}
	if !IsPrepared(m) {
		t.Fatal("IsPrepared false")
	}
	if err := ToHalf(m); err != nil {
		t.Fatal(err)
	}
	r, err := st.PutMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func commit(t testing.TB, svc *Service, group string, off int64, phy int64, how int32, fromCheck bool) *store.PutResult {
	t.Helper()
	res, err := svc.EndTransaction(EndRequest{ProducerGroup: group, TranStateTableOffset: off, CommitLogOffset: phy, CommitOrRollback: how, FromTransactionCheck: fromCheck})
	if err != nil {
		t.Fatalf("EndTransaction: %v", err)
	}
	return res
}
