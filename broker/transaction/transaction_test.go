package transaction

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/schedule"
	"github.com/openrmq/rocketmq-operator/broker/store/storetest"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

func TestHalfForm(t *testing.T) {
	f := newFixture(t)
	defer f.st.Close()
	r := f.sendHalf("T", 2, "a", "pg", nil)
	got := storetest.WaitQueue(t, f.st, HalfTopic, 0, 1)
	h := got[0]
	if h.QueueOffset != r.QueueOffset || h.QueueID != 0 || message.TransactionType(h.SysFlag) != message.TransactionNotType ||
		h.Property(message.PropertyRealTopic) != "T" || h.Property(message.PropertyRealQueueID) != "2" ||
		h.Property(message.PropertyTransactionPrepared) != "true" || h.Property(message.PropertyProducerGroup) != "pg" {
		t.Fatalf("half message %+v", h)
	}
	if n := len(f.settled("T", 2)); n != 0 {
		t.Fatalf("real topic has %d messages before commit", n)
	}
}

func TestCommitDeliversRollbackNever(t *testing.T) {
	f := newFixture(t)
	defer f.st.Close()
	svc := f.service(nil, nil)
	a := f.sendHalf("T", 1, "commit-me", "pg", map[string]string{"k": "v"})
	b := f.sendHalf("T", 1, "roll-me", "pg", nil)
	res := commit(t, svc, "pg", a.QueueOffset, a.PhysicalOffset, message.TransactionCommitType, false)
	if res == nil {
		t.Fatal("commit returned no put result")
	}
	if res := commit(t, svc, "pg", b.QueueOffset, b.PhysicalOffset, message.TransactionRollbackType, false); res != nil {
		t.Fatal("rollback put something")
	}
	got := f.settled("T", 1)
	if len(got) != 1 {
		t.Fatalf("real topic has %d messages, want 1", len(got))
	}
	m := got[0]
	if string(m.Body) != "commit-me" || message.TransactionType(m.SysFlag) != message.TransactionCommitType ||
		m.PreparedTransactionOffset != a.PhysicalOffset || m.Property(message.PropertyRealTopic) != "" ||
		m.Property(message.PropertyRealQueueID) != "" || m.Property("k") != "v" || m.Property(message.PropertyTags) != "tx" ||
		m.Property(message.PropertyUniqClientMessageIDKey) != "UNIQ-commit-me" {
		t.Fatalf("committed message %+v", m)
	}
	ops := f.settled(OpTopic, 0)
	if len(ops) != 2 {
		t.Fatalf("%d op messages, want 2", len(ops))
	}
	for i, want := range []string{"0", "1"} {
		if string(ops[i].Body) != want || ops[i].Property(message.PropertyTags) != RemoveTag {
			t.Fatalf("op %d = %q tags %q", i, ops[i].Body, ops[i].Property(message.PropertyTags))
		}
	}
}

func TestCommitWithDelay(t *testing.T) {
	f := newFixture(t)
	defer f.st.Close()
	svc := f.service(nil, nil)
	a := f.sendHalf("T", 0, "later", "pg", map[string]string{message.PropertyDelayTimeLevel: "3"})
	commit(t, svc, "pg", a.QueueOffset, a.PhysicalOffset, message.TransactionCommitType, false)
	got := storetest.WaitQueue(t, f.st, schedule.Topic, 2, 1)
	if got[0].Property(message.PropertyRealTopic) != "T" {
		t.Fatalf("scheduled commit %+v", got[0])
	}
}

func TestEndTransactionRefusals(t *testing.T) {
	f := newFixture(t)
	defer f.st.Close()
	svc := f.service(nil, nil)
	a := f.sendHalf("T", 0, "x", "pg", nil)
	for _, tc := range []struct {
		req  EndRequest
		want error
	}{
		{EndRequest{ProducerGroup: "other", TranStateTableOffset: a.QueueOffset, CommitLogOffset: a.PhysicalOffset, CommitOrRollback: message.TransactionCommitType}, ErrWrongGroup},
		{EndRequest{ProducerGroup: "pg", TranStateTableOffset: 9, CommitLogOffset: a.PhysicalOffset, CommitOrRollback: message.TransactionCommitType}, ErrWrongOffset},
		{EndRequest{ProducerGroup: "pg", TranStateTableOffset: 0, CommitLogOffset: a.PhysicalOffset + 1, CommitOrRollback: message.TransactionRollbackType}, ErrHalfNotFound},
	} {
		if _, err := svc.EndTransaction(tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%+v: err %v, want %v", tc.req, err, tc.want)
		}
	}
	if Remark(ErrWrongGroup) != "The producer group wrong" {
		t.Error("Remark")
	}
	// UNKNOWN does nothing.
	if res, err := svc.EndTransaction(EndRequest{ProducerGroup: "pg", TranStateTableOffset: a.QueueOffset, CommitLogOffset: a.PhysicalOffset}); res != nil || err != nil {
		t.Fatalf("unknown: %v %v", res, err)
	}
	if n := len(f.settled(OpTopic, 0)); n != 0 {
		t.Fatalf("%d op messages after refusals", n)
	}
	if n := len(f.settled("T", 0)); n != 0 {
		t.Fatalf("%d messages delivered after refusals", n)
	}
}

// Unknown at send time: checked once the timeout has passed, not before,
// and the checked commit delivers; an ended transaction is never checked.
func TestCheckThenCommit(t *testing.T) {
	f := newFixture(t)
	defer f.st.Close()
	rec := newRecorder()
	svc := f.service(rec.check, nil) // transactionTimeOut 300 ms
	done := f.sendHalf("T", 3, "ended", "pg", nil)
	commit(t, svc, "pg", done.QueueOffset, done.PhysicalOffset, message.TransactionCommitType, false)
	f.sendHalf("T", 3, "pending", "pg", nil)
	if st := f.scan(svc, 299*time.Millisecond); st.Checked != 0 || rec.count() != 0 {
		t.Fatalf("checked before the timeout: %+v", st)
	}
	if st := f.scan(svc, time.Millisecond); st.Checked != 1 {
		t.Fatalf("at the timeout: %+v", st)
	}
	req := rec.next(t)
	if req.ProducerGroup != "pg" || req.MsgID != "UNIQ-pending" || req.TransactionID != req.MsgID ||
		req.Msg.Topic != "T" || req.Msg.QueueID != 3 || string(req.Msg.Body) != "pending" ||
		req.Msg.Property(message.PropertyTransactionCheckTimes) != "1" || req.TranStateTableOffset != 2 ||
		req.OffsetMsgID != req.Msg.OffsetMsgID() {
		t.Fatalf("check request %+v msg %+v", req, req.Msg)
	}
	// Until the answer arrives every scan asks again (as Java).
	if st := f.scan(svc, time.Second); st.Checked != 1 {
		t.Fatalf("unanswered, next scan: %+v", st)
	}
	rec.next(t)
	commit(t, svc, req.ProducerGroup, req.TranStateTableOffset, req.CommitLogOffset, message.TransactionCommitType, true)
	got := f.settled("T", 3)
	if len(got) != 2 || string(got[1].Body) != "pending" {
		t.Fatalf("delivered %d, last %q", len(got), got[len(got)-1].Body)
	}
	// After it, never.
	for range 3 {
		if st := f.scan(svc, time.Second); st.Checked != 0 {
			t.Fatalf("checked again after the commit: %+v", st)
		}
	}
	if n := rec.count(); n != 2 {
		t.Fatalf("%d checks, want 2", n)
	}
	for _, r := range rec.reqs {
		if string(r.Msg.Body) != "pending" {
			t.Fatalf("checked %q", r.Msg.Body)
		}
	}
	if n := len(f.settled("T", 3)); n != 2 {
		t.Fatalf("%d delivered, want 2", n)
	}
}

// The loop runs the scan every CheckInterval on the real clock.
func TestCheckLoop(t *testing.T) {
	f := newFixture(t)
	defer f.st.Close()
	rec := newRecorder()
	start := time.Now()
	moving := func() time.Time { return f.clk.Now().Add(time.Since(start)) } // the store's clock stands still
	svc := New(f.st, f.offs, rec.check, Config{CheckInterval: 20 * time.Millisecond, TransactionTimeout: 50 * time.Millisecond, Now: moving, Logger: storetest.Logger(t)})
	svc.Start()
	defer svc.Close()
	f.sendHalf("T", 0, "looped", "pg", nil)
	if r := rec.next(t); string(r.Msg.Body) != "looped" {
		t.Fatalf("checked %q", r.Msg.Body)
	}
}

// A producer that never answers is asked CheckMax times, then the half
// message is discarded.
func TestCheckMaxDiscards(t *testing.T) {
	f := newFixture(t)
	defer f.st.Close()
	rec := newRecorder()
	svc := f.service(rec.check, func(c *Config) { c.TransactionTimeout, c.CheckMax = 100*time.Millisecond, 3 })
	f.sendHalf("T", 0, "orphan", "pg", nil)
	for i := 1; i <= 3; i++ {
		if st := f.scan(svc, 100*time.Millisecond); st.Checked != 1 {
			t.Fatalf("scan %d: %+v", i, st)
		}
		if got := rec.next(t).Msg.Property(message.PropertyTransactionCheckTimes); got != fmt.Sprint(i) {
			t.Fatalf("check %d has TRANSACTION_CHECK_TIMES %s", i, got)
		}
	}
	if st := f.scan(svc, 100*time.Millisecond); st.Checked != 0 || st.Discarded != 1 {
		t.Fatalf("after CheckMax checks: %+v", st)
	}
	if st := f.scan(svc, time.Second); st.Checked != 0 || st.Discarded != 0 {
		t.Fatalf("after the discard: %+v", st)
	}
	if n := rec.count(); n != 3 {
		t.Fatalf("%d checks, want 3", n)
	}
	if n := len(f.settled("T", 0)); n != 0 {
		t.Fatal("discarded message delivered")
	}
	if got := f.settled(DiscardTopic, 0); len(got) != 1 || string(got[0].Body) != "orphan" ||
		got[0].Property(message.PropertyTransactionCheckTimes) != "3" || got[0].Property(message.PropertyRealTopic) != "T" {
		t.Fatalf("discard topic holds %v", got)
	}
	if st := f.scan(svc, 0); st.HalfOffset != f.st.MaxOffsetInQueue(HalfTopic, 0) {
		t.Fatalf("after discard: %+v (half max %d)", st, f.st.MaxOffsetInQueue(HalfTopic, 0))
	}
}

// CHECK_IMMUNITY_TIME_IN_SECONDS delays the first check of its message
// without holding up the messages behind it.
func TestCheckImmunity(t *testing.T) {
	f := newFixture(t)
	defer f.st.Close()
	rec := newRecorder()
	svc := f.service(rec.check, nil) // transactionTimeOut 300 ms
	f.sendHalf("T", 0, "immune", "pg", map[string]string{message.PropertyCheckImmunityTimeInSecond: "1"})
	f.sendHalf("T", 0, "plain", "pg", nil)
	if st := f.scan(svc, 300*time.Millisecond); st.Checked != 1 {
		t.Fatalf("at 300 ms: %+v", st)
	}
	first := rec.next(t)
	if string(first.Msg.Body) != "plain" {
		t.Fatalf("first check %q", first.Msg.Body)
	}
	commit(t, svc, "pg", first.TranStateTableOffset, first.CommitLogOffset, message.TransactionRollbackType, true)
	if st := f.scan(svc, 699*time.Millisecond); st.Checked != 0 {
		t.Fatalf("immune message checked at 999 ms: %+v", st)
	}
	if st := f.scan(svc, time.Millisecond); st.Checked != 1 {
		t.Fatalf("at 1 s: %+v", st)
	}
	if second := rec.next(t); string(second.Msg.Body) != "immune" {
		t.Fatalf("second check %q", second.Msg.Body)
	}
}

// Pending half messages survive a restart and are checked afterwards;
// ended ones are neither checked nor delivered again.
func TestRestartKeepsPending(t *testing.T) {
	f := newFixture(t)
	rec := newRecorder()
	svc := f.service(rec.check, nil)
	a := f.sendHalf("T", 0, "ended", "pg", nil)
	commit(t, svc, "pg", a.QueueOffset, a.PhysicalOffset, message.TransactionCommitType, false)
	f.sendHalf("T", 0, "checked-once", "pg", nil)
	if st := f.scan(svc, 300*time.Millisecond); st.Checked != 1 {
		t.Fatalf("before the restart: %+v", st)
	}
	rec.next(t) // the producer's answer is lost in the restart
	f.sendHalf("T", 0, "young", "pg", nil)
	svc.Close()
	if err := f.offs.Persist(true); err != nil {
		t.Fatal(err)
	}
	if err := f.st.Close(); err != nil {
		t.Fatal(err)
	}

	f.open()
	defer f.st.Close()
	rec = newRecorder()
	svc = f.service(rec.check, nil)
	if st := f.scan(svc, 300*time.Millisecond); st.Checked != 2 {
		t.Fatalf("after the restart: %+v", st)
	}
	seen := map[string]*CheckRequest{}
	for range 2 {
		r := rec.next(t)
		seen[string(r.Msg.Body)] = r
	}
	if seen["checked-once"] == nil || seen["young"] == nil {
		t.Fatalf("checked after restart: %v", seen)
	}
	if got := seen["checked-once"].Msg.Property(message.PropertyTransactionCheckTimes); got != "2" {
		t.Fatalf("check times after restart %s, want 2", got)
	}
	for _, r := range seen {
		commit(t, svc, r.ProducerGroup, r.TranStateTableOffset, r.CommitLogOffset, message.TransactionCommitType, true)
	}
	for range 2 {
		if st := f.scan(svc, time.Second); st.Checked != 0 {
			t.Fatalf("checked again after the commits: %+v", st)
		}
	}
	bodies := map[string]int{}
	got := f.settled("T", 0)
	for _, m := range got {
		bodies[string(m.Body)]++
	}
	if len(got) != 3 || bodies["ended"] != 1 || bodies["checked-once"] != 1 || bodies["young"] != 1 {
		t.Fatalf("delivered %v", bodies)
	}
}

// A slow producer gets several checks, one per scan, each naming a new
// copy; its answers to all of them commit once, and no copy is checked
// after the first answer.
func TestSlowProducerCommitsOnce(t *testing.T) {
	f := newFixture(t)
	defer f.st.Close()
	rec := newRecorder()
	svc := f.service(rec.check, func(c *Config) { c.TransactionTimeout = 100 * time.Millisecond })
	f.sendHalf("T", 0, "slow", "pg", nil)
	var reqs []*CheckRequest
	for i := range 3 {
		if st := f.scan(svc, 100*time.Millisecond); st.Checked != 1 {
			t.Fatalf("scan %d: %+v", i, st)
		}
		reqs = append(reqs, rec.next(t))
	}
	r1, r2, r3 := reqs[0], reqs[1], reqs[2]
	if r1.CommitLogOffset == r2.CommitLogOffset || r2.CommitLogOffset == r3.CommitLogOffset {
		t.Fatal("checks name the same copy")
	}
	for _, r := range []*CheckRequest{r2, r1, r3} {
		if _, err := svc.EndTransaction(EndRequest{ProducerGroup: "pg", TranStateTableOffset: r.TranStateTableOffset,
			CommitLogOffset: r.CommitLogOffset, CommitOrRollback: message.TransactionCommitType, FromTransactionCheck: true}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if st := f.scan(svc, time.Second); st.Checked != 0 {
			t.Fatalf("checked after the answers: %+v", st)
		}
	}
	if got := f.settled("T", 0); len(got) != 1 {
		t.Fatalf("delivered %d times", len(got))
	}
}

// noFlush hides flush progress: the scan must not commit a position past
// half messages whose renewed copies are not durable.
type noFlush struct{ Store }

func (noFlush) FlushedOffset() int64 { return 0 }

func TestOffsetsWaitForFlush(t *testing.T) {
	f := newFixture(t)
	defer f.st.Close()
	rec := newRecorder()
	svc := New(noFlush{f.st}, f.offs, rec.check, Config{TransactionTimeout: 50 * time.Millisecond, Now: f.clk.Now, Logger: storetest.Logger(t)})
	f.sendHalf("T", 0, "x", "pg", nil)
	if s := f.scan(svc, 60*time.Millisecond); s.Checked != 1 || s.HalfOffset != 1 {
		t.Fatalf("scan %+v", s)
	}
	if got := f.offs.Query(SysGroup, HalfTopic, 0); got != -1 {
		t.Fatalf("committed %d before the copy was flushed", got)
	}
	svc.Close()
	if got := f.offs.Query(SysGroup, HalfTopic, 0); got != 1 {
		t.Fatalf("after Close committed %d, want 1", got)
	}
}
