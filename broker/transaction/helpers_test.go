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

// fixture is a store, its consumer offsets and one clock for both the store
// and the service, so that every age a scan compares is set by the test.
type fixture struct {
	t    testing.TB
	root string
	clk  *storetest.Clock
	st   *store.Store
	offs *metadata.Offsets
}

func newFixture(t testing.TB) *fixture {
	f := &fixture{t: t, root: t.TempDir(), clk: storetest.NewClock(time.Date(2030, 6, 10, 9, 22, 0, 0, time.UTC))}
	f.open()
	return f
}

// open (re)opens the store and the offsets under f.root.
func (f *fixture) open() {
	f.t.Helper()
	cfg := storetest.Config(f.root)
	cfg.Now = f.clk.Now
	f.st = storetest.Open(f.t, cfg)
	o, err := metadata.LoadOffsets(filepath.Join(f.root, "config"))
	if err != nil {
		f.t.Fatal(err)
	}
	f.offs = o
}

// service returns a stopped service on f's clock; tests run its scans with
// scan, the loop only in TestCheckLoop.
func (f *fixture) service(checker Checker, edit func(*Config)) *Service {
	cfg := Config{CheckInterval: time.Hour, TransactionTimeout: 300 * time.Millisecond, CheckMax: 15, Now: f.clk.Now, Logger: storetest.Logger(f.t)}
	if edit != nil {
		edit(&cfg)
	}
	return New(f.st, f.offs, checker, cfg)
}

// scan advances the clock by d and runs one scan once everything put so far
// is in the queues (the scan reads the half and op queues).
func (f *fixture) scan(svc *Service, d time.Duration) CheckStats {
	f.t.Helper()
	f.clk.Advance(d)
	storetest.WaitDispatched(f.t, f.st)
	st, err := svc.Check()
	if err != nil {
		f.t.Fatalf("Check: %v", err)
	}
	return st
}

// settled returns what topic/qid holds once everything put so far is dispatched.
func (f *fixture) settled(topic string, qid int32) []*message.MessageExt {
	f.t.Helper()
	storetest.WaitDispatched(f.t, f.st)
	return storetest.ReadQueue(f.t, f.st, topic, qid)
}

// sendHalf sends a transactional message like the broker: ToHalf, PutMessage.
func (f *fixture) sendHalf(topic string, qid int32, body, group string, extra map[string]string) *store.PutResult {
	f.t.Helper()
	props := map[string]string{
		message.PropertyTransactionPrepared: "true", message.PropertyProducerGroup: group,
		message.PropertyUniqClientMessageIDKey: "UNIQ-" + body, message.PropertyTags: "tx",
	}
	for k, v := range extra {
		props[k] = v
	}
	p, err := message.EncodeProperties(props)
	if err != nil {
		f.t.Fatal(err)
	}
	m := &message.Message{
		Topic: topic, QueueID: qid, Body: []byte(body), Properties: p, SysFlag: message.TransactionPreparedType,
		BornTimestamp: f.clk.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("10.1.2.3:4567"),
	}
	if !IsPrepared(m) {
		f.t.Fatal("IsPrepared false")
	}
	if err := ToHalf(m); err != nil {
		f.t.Fatal(err)
	}
	r, err := f.st.PutMessage(m)
	if err != nil {
		f.t.Fatal(err)
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

// recorder is a Checker that records its calls.
type recorder struct {
	mu   sync.Mutex
	reqs []*CheckRequest
	ch   chan *CheckRequest
}

func newRecorder() *recorder { return &recorder{ch: make(chan *CheckRequest, 100)} }

func (r *recorder) check(req *CheckRequest) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	r.ch <- req
}

func (r *recorder) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.reqs) }

// next returns the next check; the checker runs inside the scan, so after a
// scan that reported a check it is already there.
func (r *recorder) next(t testing.TB) *CheckRequest {
	t.Helper()
	select {
	case req := <-r.ch:
		return req
	case <-time.After(storetest.Patience):
		t.Fatalf("no check within %v", storetest.Patience)
		return nil
	}
}
