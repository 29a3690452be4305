package transaction

import (
	"errors"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/schedule"
	"github.com/openrmq/rocketmq-operator/broker/store/storetest"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

func quickConfig(t testing.TB) Config {
	return Config{CheckInterval: 50 * time.Millisecond, TransactionTimeout: 300 * time.Millisecond, CheckMax: 15, Logf: t.Logf}
}

func TestHalfForm(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	r := sendHalf(t, st, "T", 2, "a", "pg", nil)
	got := storetest.WaitQueue(t, st, HalfTopic, 0, 1, time.Second)
	h := got[0]
	if h.QueueOffset != r.QueueOffset || h.QueueID != 0 || message.TransactionType(h.SysFlag) != message.TransactionNotType ||
		h.Property(message.PropertyRealTopic) != "T" || h.Property(message.PropertyRealQueueID) != "2" ||
		h.Property(message.PropertyTransactionPrepared) != "true" || h.Property(message.PropertyProducerGroup) != "pg" {
		t.Fatalf("half message %+v", h)
	}
	if n := len(storetest.ReadQueue(t, st, "T", 2)); n != 0 {
		t.Fatalf("real topic has %d messages before commit", n)
	}
}

func TestCommitDeliversRollbackNever(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	svc := New(st, loadOffsets(t, t.TempDir()), nil, quickConfig(t))
	a := sendHalf(t, st, "T", 1, "commit-me", "pg", map[string]string{"k": "v"})
	b := sendHalf(t, st, "T", 1, "roll-me", "pg", nil)
	res := commit(t, svc, "pg", a.QueueOffset, a.PhysicalOffset, message.TransactionCommitType, false)
	if res == nil {
		t.Fatal("commit returned no put result")
	}
	if res := commit(t, svc, "pg", b.QueueOffset, b.PhysicalOffset, message.TransactionRollbackType, false); res != nil {
		t.Fatal("rollback put something")
	}
	got := storetest.WaitQueue(t, st, "T", 1, 1, time.Second)
	m := got[0]
	if string(m.Body) != "commit-me" || message.TransactionType(m.SysFlag) != message.TransactionCommitType ||
		m.PreparedTransactionOffset != a.PhysicalOffset || m.Property(message.PropertyRealTopic) != "" ||
		m.Property(message.PropertyRealQueueID) != "" || m.Property("k") != "v" || m.Property(message.PropertyTags) != "tx" ||
		m.Property(message.PropertyUniqClientMessageIDKey) != "UNIQ-commit-me" {
		t.Fatalf("committed message %+v", m)
	}
	ops := storetest.WaitQueue(t, st, OpTopic, 0, 2, time.Second)
	for i, want := range []string{"0", "1"} {
		if string(ops[i].Body) != want || ops[i].Property(message.PropertyTags) != RemoveTag {
			t.Fatalf("op %d = %q tags %q", i, ops[i].Body, ops[i].Property(message.PropertyTags))
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(storetest.ReadQueue(t, st, "T", 1)); n != 1 {
		t.Fatalf("real topic has %d messages, want 1", n)
	}
}

func TestCommitWithDelay(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	svc := New(st, loadOffsets(t, t.TempDir()), nil, quickConfig(t))
	a := sendHalf(t, st, "T", 0, "later", "pg", map[string]string{message.PropertyDelayTimeLevel: "3"})
	commit(t, svc, "pg", a.QueueOffset, a.PhysicalOffset, message.TransactionCommitType, false)
	got := storetest.WaitQueue(t, st, schedule.Topic, 2, 1, time.Second)
	if got[0].Property(message.PropertyRealTopic) != "T" {
		t.Fatalf("scheduled commit %+v", got[0])
	}
}

func TestEndTransactionRefusals(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	svc := New(st, loadOffsets(t, t.TempDir()), nil, quickConfig(t))
	a := sendHalf(t, st, "T", 0, "x", "pg", nil)
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
	time.Sleep(30 * time.Millisecond)
	if n := len(storetest.ReadQueue(t, st, OpTopic, 0)); n != 0 {
		t.Fatalf("%d op messages after refusals", n)
	}
}

// Unknown at send time: checked after the timeout, and the checked commit
// delivers; an ended transaction is never checked.
func TestCheckThenCommit(t *testing.T) {
	root := t.TempDir()
	st := openStore(t, root)
	defer st.Close()
	rec := newRecorder()
	svc := New(st, loadOffsets(t, root), rec.check, quickConfig(t))
	svc.Start()
	defer svc.Close()
	done := sendHalf(t, st, "T", 3, "ended", "pg", nil)
	commit(t, svc, "pg", done.QueueOffset, done.PhysicalOffset, message.TransactionCommitType, false)
	sent := time.Now()
	sendHalf(t, st, "T", 3, "pending", "pg", nil)
	req := rec.next(t, 2*time.Second)
	if wait := time.Since(sent); wait < 299*time.Millisecond || wait > 600*time.Millisecond {
		t.Errorf("checked after %v, want 300 ms + at most one interval", wait)
	}
	if req.ProducerGroup != "pg" || req.MsgID != "UNIQ-pending" || req.TransactionID != req.MsgID ||
		req.Msg.Topic != "T" || req.Msg.QueueID != 3 || string(req.Msg.Body) != "pending" ||
		req.Msg.Property(message.PropertyTransactionCheckTimes) != "1" || req.TranStateTableOffset != 2 ||
		req.OffsetMsgID != req.Msg.OffsetMsgID() {
		t.Fatalf("check request %+v msg %+v", req, req.Msg)
	}
	commit(t, svc, req.ProducerGroup, req.TranStateTableOffset, req.CommitLogOffset, message.TransactionCommitType, true)
	got := storetest.WaitQueue(t, st, "T", 3, 2, time.Second)
	if string(got[1].Body) != "pending" {
		t.Fatalf("delivered %q", got[1].Body)
	}
	// Until the answer arrives every scan asks again (as Java); after it, never.
	time.Sleep(100 * time.Millisecond)
	n := rec.count()
	time.Sleep(400 * time.Millisecond)
	if rec.count() != n {
		t.Fatalf("checked again after the commit (%d -> %d checks)", n, rec.count())
	}
	for _, r := range rec.reqs {
		if string(r.Msg.Body) != "pending" {
			t.Fatalf("checked %q", r.Msg.Body)
		}
	}
	if n := len(storetest.ReadQueue(t, st, "T", 3)); n != 2 {
		t.Fatalf("%d delivered, want 2", n)
	}
}

// A producer that never answers is asked CheckMax times, then the half
// message is discarded.
func TestCheckMaxDiscards(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	rec := newRecorder()
	cfg := quickConfig(t)
	cfg.TransactionTimeout, cfg.CheckMax = 100*time.Millisecond, 3
	svc := New(st, loadOffsets(t, t.TempDir()), rec.check, cfg)
	svc.Start()
	defer svc.Close()
	sendHalf(t, st, "T", 0, "orphan", "pg", nil)
	for i := 1; i <= 3; i++ {
		if got := rec.next(t, 2*time.Second).Msg.Property(message.PropertyTransactionCheckTimes); got != string(rune('0'+i)) {
			t.Fatalf("check %d has TRANSACTION_CHECK_TIMES %s", i, got)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if n := rec.count(); n != 3 {
		t.Fatalf("%d checks, want 3", n)
	}
	if n := len(storetest.ReadQueue(t, st, "T", 0)); n != 0 {
		t.Fatal("discarded message delivered")
	}
	if got := storetest.ReadQueue(t, st, DiscardTopic, 0); len(got) != 1 || string(got[0].Body) != "orphan" ||
		got[0].Property(message.PropertyTransactionCheckTimes) != "3" || got[0].Property(message.PropertyRealTopic) != "T" {
		t.Fatalf("discard topic holds %v", got)
	}
	stats, err := svc.Check()
	if err != nil || stats.HalfOffset != st.MaxOffsetInQueue(HalfTopic, 0) {
		t.Fatalf("after discard: %+v %v (half max %d)", stats, err, st.MaxOffsetInQueue(HalfTopic, 0))
	}
}

// CHECK_IMMUNITY_TIME_IN_SECONDS delays the first check of its message
// without holding up the messages behind it.
func TestCheckImmunity(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	rec := newRecorder()
	svc := New(st, loadOffsets(t, t.TempDir()), rec.check, quickConfig(t))
	svc.Start()
	defer svc.Close()
	sent := time.Now()
	sendHalf(t, st, "T", 0, "immune", "pg", map[string]string{message.PropertyCheckImmunityTimeInSecond: "1"})
	sendHalf(t, st, "T", 0, "plain", "pg", nil)
	first := rec.next(t, 2*time.Second)
	if string(first.Msg.Body) != "plain" || time.Since(sent) > 700*time.Millisecond {
		t.Fatalf("first check %q after %v", first.Msg.Body, time.Since(sent))
	}
	commit(t, svc, "pg", first.TranStateTableOffset, first.CommitLogOffset, message.TransactionRollbackType, true)
	second := rec.next(t, 3*time.Second)
	if string(second.Msg.Body) != "immune" || time.Since(sent) < time.Second {
		t.Fatalf("second check %q after %v", second.Msg.Body, time.Since(sent))
	}
}

// Pending half messages survive a restart and are checked afterwards;
// ended ones are neither checked nor delivered again.
func TestRestartKeepsPending(t *testing.T) {
	root := t.TempDir()
	st := openStore(t, root)
	offs := loadOffsets(t, root)
	rec := newRecorder()
	svc := New(st, offs, rec.check, quickConfig(t))
	svc.Start()
	a := sendHalf(t, st, "T", 0, "ended", "pg", nil)
	commit(t, svc, "pg", a.QueueOffset, a.PhysicalOffset, message.TransactionCommitType, false)
	sendHalf(t, st, "T", 0, "checked-once", "pg", nil)
	rec.next(t, 2*time.Second) // checked; the producer's answer is lost in the restart
	sendHalf(t, st, "T", 0, "young", "pg", nil)
	svc.Close()
	if err := offs.Persist(true); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = openStore(t, root)
	defer st.Close()
	rec = newRecorder()
	svc = New(st, loadOffsets(t, root), rec.check, quickConfig(t))
	svc.Start()
	defer svc.Close()
	seen := map[string]*CheckRequest{}
	for len(seen) < 2 {
		r := rec.next(t, 3*time.Second)
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
	got := storetest.WaitQueue(t, st, "T", 0, 3, time.Second)
	time.Sleep(300 * time.Millisecond)
	got = storetest.ReadQueue(t, st, "T", 0)
	bodies := map[string]int{}
	for _, m := range got {
		bodies[string(m.Body)]++
	}
	if len(got) != 3 || bodies["ended"] != 1 || bodies["checked-once"] != 1 || bodies["young"] != 1 {
		t.Fatalf("delivered %v", bodies)
	}
	n := rec.count()
	time.Sleep(300 * time.Millisecond)
	if rec.count() != n {
		t.Fatal("checked again after the commits")
	}
	for _, r := range rec.reqs {
		if string(r.Msg.Body) == "ended" {
			t.Fatal("ended transaction checked")
		}
	}
}

// A slow producer gets several checks, one per scan, each naming a new
// copy; its answers to all of them commit once, and no copy is checked
// after the first answer.
func TestSlowProducerCommitsOnce(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	rec := newRecorder()
	cfg := quickConfig(t)
	cfg.TransactionTimeout = 100 * time.Millisecond
	svc := New(st, loadOffsets(t, t.TempDir()), rec.check, cfg)
	svc.Start()
	defer svc.Close()
	sendHalf(t, st, "T", 0, "slow", "pg", nil)
	r1 := rec.next(t, 2*time.Second)
	r2 := rec.next(t, 2*time.Second)
	r3 := rec.next(t, 2*time.Second)
	if r1.CommitLogOffset == r2.CommitLogOffset || r2.CommitLogOffset == r3.CommitLogOffset {
		t.Fatal("checks name the same copy")
	}
	for _, r := range []*CheckRequest{r2, r1, r3} {
		if _, err := svc.EndTransaction(EndRequest{ProducerGroup: "pg", TranStateTableOffset: r.TranStateTableOffset,
			CommitLogOffset: r.CommitLogOffset, CommitOrRollback: message.TransactionCommitType, FromTransactionCheck: true}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond) // a scan running during the answers may still ask once
	n := rec.count()
	time.Sleep(300 * time.Millisecond)
	if rec.count() != n {
		t.Fatalf("checked after the answers: %d -> %d", n, rec.count())
	}
	if got := storetest.ReadQueue(t, st, "T", 0); len(got) != 1 {
		t.Fatalf("delivered %d times", len(got))
	}
}

// noFlush hides flush progress: the scan must not commit a position past
// half messages whose renewed copies are not durable.
type noFlush struct{ Store }

func (noFlush) FlushedOffset() int64 { return 0 }

func TestOffsetsWaitForFlush(t *testing.T) {
	root := t.TempDir()
	st := openStore(t, root)
	defer st.Close()
	offs := loadOffsets(t, root)
	rec := newRecorder()
	cfg := quickConfig(t)
	cfg.TransactionTimeout = 50 * time.Millisecond
	svc := New(noFlush{st}, offs, rec.check, cfg)
	sendHalf(t, st, "T", 0, "x", "pg", nil)
	time.Sleep(60 * time.Millisecond)
	if s, err := svc.Check(); err != nil || s.Checked != 1 || s.HalfOffset != 1 {
		t.Fatalf("scan %+v %v", s, err)
	}
	if got := offs.Query(SysGroup, HalfTopic, 0); got != -1 {
		t.Fatalf("committed %d before the copy was flushed", got)
	}
	svc.Close()
	if got := offs.Query(SysGroup, HalfTopic, 0); got != 1 {
		t.Fatalf("after Close committed %d, want 1", got)
	}
}
