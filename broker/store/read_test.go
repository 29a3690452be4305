package store

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

func TestGetMessageStatuses(t *testing.T) {
	s := mustOpen(t, testConfig(t))
	defer s.Close()
	check := func(name string, r *GetResult, st GetStatus, next int64) {
		t.Helper()
		defer r.Release()
		if r.Status != st || r.NextBeginOffset != next {
			t.Fatalf("%s: status %v next %d, want %v next %d", name, r.Status, r.NextBeginOffset, st, next)
		}
	}
	check("unknown queue", s.GetMessage("T", 0, 0, 32, 0, nil), NoMatchedLogicQueue, 0)
	for i := range 5 {
		mustPut(t, s, newMsg("T", 0, body(i), map[string]string{"TAGS": fmt.Sprintf("tag%d", i%2)}))
	}
	waitDispatched(t, s)
	check("overflow one", s.GetMessage("T", 0, 5, 32, 0, nil), OffsetOverflowOne, 5)
	check("overflow badly", s.GetMessage("T", 0, 9, 32, 0, nil), OffsetOverflowBadly, 0)
	r := s.GetMessage("T", 0, 1, 2, 0, nil)
	if len(r.Messages) != 2 || r.MinOffset != 0 || r.MaxOffset != 5 {
		t.Fatalf("found %d messages min %d max %d", len(r.Messages), r.MinOffset, r.MaxOffset)
	}
	check("found", r, Found, 3)

	// Tag-hash filter: only tag1 (offsets 1 and 3).
	r = s.GetMessage("T", 0, 0, 32, 0, TagsFilter(message.TagsCode("tag1")))
	if len(r.Messages) != 2 {
		t.Fatalf("filtered %d messages", len(r.Messages))
	}
	for _, b := range r.Messages {
		m, _ := message.DecodeRecord(b, true)
		if m.Property("TAGS") != "tag1" {
			t.Fatalf("filter let %q through", m.Property("TAGS"))
		}
	}
	check("filtered", r, Found, 5)
	check("no match", s.GetMessage("T", 0, 0, 32, 0, TagsFilter(42)), NoMatchedMessage, 5)
	// Record-level filter plugs in the same way.
	rec := FilterFuncs{Record: func(b []byte) bool { return strings.Contains(string(b), body(4)) }}
	r = s.GetMessage("T", 0, 0, 32, 0, rec)
	if len(r.Messages) != 1 {
		t.Fatalf("record filter: %d messages", len(r.Messages))
	}
	check("record filter", r, Found, 5)

	// A queue whose messages all sit in a dead head.
	mustPut(t, s, newMsg("Empty", 0, "x", nil))
	waitDispatched(t, s)
	check("too small", func() *GetResult {
		s.queue("Empty", 0).minOffset.Store(1)
		return s.GetMessage("Empty", 0, 0, 32, 0, nil)
	}(), OffsetTooSmall, 1)
}

func TestTransferLimits(t *testing.T) {
	cfg := testConfig(t)
	cfg.MappedFileSizeCommitLog = 1 << 20
	s := mustOpen(t, cfg)
	defer s.Close()
	big := strings.Repeat("b", 10<<10) // ~10 KB records
	for i := range 40 {
		mustPut(t, s, newMsg("L", 0, big, map[string]string{"i": fmt.Sprint(i)}))
	}
	waitDispatched(t, s)
	r := s.GetMessage("L", 0, 0, 64, 1<<20, nil)
	if n := len(r.Messages); n != 25 { // 256 KB limit: 25 records of ~10.1 KB
		t.Fatalf("in memory: %d messages, %d bytes", n, r.BufferTotalSize)
	}
	r.Release()
	r = s.GetMessage("L", 0, 0, 3, 1<<20, nil)
	if len(r.Messages) != 3 || r.NextBeginOffset != 3 {
		t.Fatalf("maxMsgs: %d next %d", len(r.Messages), r.NextBeginOffset)
	}
	r.Release()
	// Pretend RAM is tiny: everything is "on disk" -> 64 KB / 8 and suggest slave.
	s.memLimit = 1
	r = s.GetMessage("L", 0, 0, 64, 1<<20, nil)
	if n := len(r.Messages); n != 6 || !r.SuggestPullingFromSlave {
		t.Fatalf("in disk: %d messages, %d bytes, slave %v", n, r.BufferTotalSize, r.SuggestPullingFromSlave)
	}
	r.Release()
	s.memLimit = 1 << 40
	r = s.GetMessage("L", 0, 0, 64, 30<<10, nil)
	if n := len(r.Messages); n != 2 || r.SuggestPullingFromSlave {
		t.Fatalf("maxBytes: %d messages", n)
	}
	r.Release()
}

func TestTransactionAndScheduleDispatch(t *testing.T) {
	s := mustOpen(t, testConfig(t))
	defer s.Close()
	for i, tt := range []int32{message.TransactionPreparedType, message.TransactionNotType,
		message.TransactionRollbackType, message.TransactionCommitType} {
		m := newMsg("X", 0, body(i), map[string]string{"KEYS": fmt.Sprintf("key%d", i)})
		m.SysFlag = tt
		r := mustPut(t, s, m)
		if (tt == message.TransactionPreparedType || tt == message.TransactionRollbackType) && r.QueueOffset != 0 {
			t.Fatalf("prepared/rollback got queue offset %d", r.QueueOffset)
		}
	}
	waitDispatched(t, s)
	msgs := readAll(t, s, "X", 0)
	if len(msgs) != 2 || string(msgs[0].Body) != body(1) || string(msgs[1].Body) != body(3) || msgs[1].QueueOffset != 1 {
		t.Fatalf("queue holds %d messages", len(msgs))
	}
	// Prepared and rollback are still indexed.
	for i := range 4 {
		if got := s.QueryMessage("X", fmt.Sprintf("key%d", i), 10, 0, time.Now().UnixMilli()+1000); len(got) != 1 {
			t.Fatalf("key%d: %d hits", i, len(got))
		}
	}
	// Delayed message: the tag slot holds the delivery time.
	m := newMsg(ScheduleTopic, 2, "later", map[string]string{"DELAY": "3", "TAGS": "t"})
	r := mustPut(t, s, m)
	waitDispatched(t, s)
	e, ok := s.queue(ScheduleTopic, 2).entry(0)
	if !ok || e.tagsCode != r.StoreTimestamp+10000 {
		t.Fatalf("schedule tag slot %d, want store time + 10s = %d", e.tagsCode, r.StoreTimestamp+10000)
	}
	m = newMsg(ScheduleTopic, 17, "max", map[string]string{"DELAY": "40"})
	r = mustPut(t, s, m)
	waitDispatched(t, s)
	if e, _ := s.queue(ScheduleTopic, 17).entry(0); e.tagsCode != r.StoreTimestamp+2*3600*1000 {
		t.Fatalf("level above max: %d", e.tagsCode-r.StoreTimestamp)
	}
}

func TestArrivalCallback(t *testing.T) {
	s := mustOpen(t, testConfig(t))
	defer s.Close()
	got := make(chan Arrival, 100)
	s.OnArrival(func(a *Arrival) {
		c := *a
		c.Properties = nil
		got <- c
	})
	for i := range 50 {
		mustPut(t, s, newMsg("A", 1, body(i), map[string]string{"TAGS": "x"}))
		select {
		case a := <-got:
			if a.Topic != "A" || a.QueueID != 1 || a.QueueOffset != int64(i) || a.MaxOffset != int64(i+1) || a.TagsCode != message.TagsCode("x") {
				t.Fatalf("arrival %+v", a)
			}
			// The message is readable when the callback fires.
			r := s.GetMessage("A", 1, int64(i), 1, 0, nil)
			if r.Status != Found {
				t.Fatalf("not readable at arrival: %v", r.Status)
			}
			r.Release()
		case <-time.After(time.Second):
			t.Fatal("no arrival within 1s")
		}
	}
}

func TestTimeLookups(t *testing.T) {
	cfg := testConfig(t)
	clock := time.UnixMilli(1_700_000_000_000)
	cfg.Now = func() time.Time { return clock }
	s := mustOpen(t, cfg)
	defer s.Close()
	for i := range 10 {
		clock = time.UnixMilli(1_700_000_000_000 + int64(i)*1000)
		mustPut(t, s, newMsg("Q", 0, body(i), nil))
	}
	waitDispatched(t, s)
	base := int64(1_700_000_000_000)
	for _, c := range []struct{ ts, want int64 }{{base - 5, 0}, {base, 0}, {base + 1, 1}, {base + 4000, 4}, {base + 9000, 9}, {base + 99999, 10}} {
		if got := s.OffsetInQueueByTime("Q", 0, c.ts); got != c.want {
			t.Errorf("OffsetInQueueByTime(%d) = %d, want %d", c.ts-base, got, c.want)
		}
	}
	if got := s.EarliestMessageTime("Q", 0); got != base {
		t.Fatalf("earliest %d", got)
	}
	if got := s.MessageStoreTime("Q", 0, 3); got != base+3000 {
		t.Fatalf("store time of 3: %d", got)
	}
	if s.MessageStoreTime("Q", 0, 10) != -1 || s.MinOffsetInQueue("Q", 0) != 0 || s.MaxOffsetInQueue("Q", 0) != 10 {
		t.Fatal("offset bounds")
	}
	qs := s.Queues()
	if len(qs) != 1 || qs[0] != (QueueInfo{"Q", 0, 0, 10}) {
		t.Fatalf("queues %+v", qs)
	}
	if s.CommitLogMinOffset() != 0 || s.CommitLogMaxOffset() <= 0 {
		t.Fatal("commitlog bounds")
	}
}

func TestCheckInMemByConsumeOffset(t *testing.T) {
	s := mustOpen(t, testConfig(t))
	defer s.Close()
	for i := range 3 {
		mustPut(t, s, newMsg("M", 0, body(i), nil))
	}
	waitDispatched(t, s)
	if !s.CheckInMemByConsumeOffset("M", 0, 0, 1) || !s.CheckInMemByConsumeOffset("M", 0, 0, 32) {
		t.Fatal("offset 0 not in memory with the default RAM window")
	}
	if s.CheckInMemByConsumeOffset("M", 0, 3, 1) || s.CheckInMemByConsumeOffset("nope", 0, 0, 1) || s.CheckInMemByConsumeOffset("M", 0, -1, 1) {
		t.Fatal("in memory without an entry")
	}
	s.memLimit = 10
	if s.CheckInMemByConsumeOffset("M", 0, 0, 1) || s.CheckInMemByConsumeOffset("M", 0, 2, 1) {
		t.Fatal("offsets are far behind a 10-byte window")
	}
	phy2, _ := s.CommitLogOffsetInQueue("M", 0, 2)
	s.memLimit = s.CommitLogMaxOffset() - phy2
	if !s.CheckInMemByConsumeOffset("M", 0, 2, 1) || s.CheckInMemByConsumeOffset("M", 0, 1, 1) {
		t.Fatal("window boundary: the window's oldest byte is in memory, the one before is not")
	}
}

// TestFilteredGetCapsScan: a tag filter that matches nothing in a long
// queue must not scan to the end of the consume-queue file; like Java it
// gives up after maxFilterMessageCount entries with NO_MATCHED_MESSAGE and
// the next begin offset just past them, and a later pull from there finds
// the match.
func TestFilteredGetCapsScan(t *testing.T) {
	cfg := testConfig(t)
	cfg.MappedFileSizeCommitLog = 1 << 20
	cfg.MappedFileSizeConsumeQueue = 3000 * CQEntrySize // one file holds the whole queue
	s := mustOpen(t, cfg)
	defer s.Close()
	if DefaultConfig("x").MaxFilterScanEntries != 800 {
		t.Fatalf("default MaxFilterScanEntries %d, want 800 (Java: 16000 bytes)", DefaultConfig("x").MaxFilterScanEntries)
	}
	const n = 2000
	for i := range n {
		tag := "miss"
		if i == n-1 {
			tag = "hit"
		}
		mustPut(t, s, newMsg("F", 0, "b", map[string]string{"TAGS": tag}))
	}
	waitDispatched(t, s)
	hit := TagsFilter(message.TagsCode("hit"))
	var off int64
	for want := range []int64{800, 1600} {
		r := s.GetMessage("F", 0, off, 32, 0, hit)
		if r.Status != NoMatchedMessage || r.NextBeginOffset != off+800 {
			t.Fatalf("pull %d from %d: %v next %d, want NO_MATCHED_MESSAGE next %d", want, off, r.Status, r.NextBeginOffset, off+800)
		}
		r.Release()
		off = r.NextBeginOffset
	}
	r := s.GetMessage("F", 0, off, 32, 0, hit)
	if r.Status != Found || len(r.Messages) != 1 || r.NextBeginOffset != n {
		t.Fatalf("last pull from %d: %v %d messages next %d", off, r.Status, len(r.Messages), r.NextBeginOffset)
	}
	r.Release()
	// maxMsgs above the cap raises it, as Java's max(16000, maxMsgNums*20).
	r = s.GetMessage("F", 0, 0, 1500, 0, hit)
	if r.NextBeginOffset != 1500 {
		t.Fatalf("maxMsgs 1500: next %d, want 1500", r.NextBeginOffset)
	}
	r.Release()
	// Configurable.
	s.cfg.MaxFilterScanEntries = 100
	r = s.GetMessage("F", 0, 0, 32, 0, hit)
	if r.Status != NoMatchedMessage || r.NextBeginOffset != 100 {
		t.Fatalf("cap 100: %v next %d", r.Status, r.NextBeginOffset)
	}
	r.Release()
}

// TestOffsetInQueueByTimeFirstAtOrAfter pins where OffsetInQueueByTime
// differs from Java's getOffsetInQueueByTime: after the newest message it
// is the max offset (Java: max-1), between messages the later neighbour
// (Java: the closer one), among equal store times the first.
func TestOffsetInQueueByTimeFirstAtOrAfter(t *testing.T) {
	cfg := testConfig(t)
	base := int64(1_700_000_000_000)
	var clock int64
	cfg.Now = func() time.Time { return time.UnixMilli(base + clock) }
	s := mustOpen(t, cfg)
	defer s.Close()
	if got := s.OffsetInQueueByTime("T", 0, base); got != 0 {
		t.Fatalf("unknown queue: %d", got)
	}
	for _, at := range []int64{0, 1000, 1000, 3000} { // offsets 0..3
		clock = at
		mustPut(t, s, newMsg("T", 0, "b", nil))
	}
	waitDispatched(t, s)
	for _, c := range []struct {
		ts, want int64
		java     string
	}{
		{-1, 0, "0 (min)"},
		{0, 0, "0"},
		{1000, 1, "1 or 2"},
		{1100, 3, "1 or 2 (closer)"},
		{2900, 3, "3 (closer)"},
		{3000, 3, "3"},
		{3001, 4, "3 (max-1)"},
		{1 << 40, 4, "3 (max-1)"},
	} {
		if got := s.OffsetInQueueByTime("T", 0, base+c.ts); got != c.want {
			t.Errorf("OffsetInQueueByTime(base%+d) = %d, want %d (Java: %s)", c.ts, got, c.want, c.java)
		}
	}
}

// TestGetMessageHoldsEachSegmentOnce: a read keeps one reference per commitlog segment
// its records lie in, which keeps them mapped until Release.
func TestGetMessageHoldsEachSegmentOnce(t *testing.T) {
	s := mustOpen(t, testConfig(t)) // 64 KiB segments
	defer s.Close()
	big := strings.Repeat("x", 4<<10)
	for i := range 40 {
		mustPut(t, s, newMsg("T", 0, fmt.Sprintf("%02d%s", i, big), nil))
	}
	waitDispatched(t, s)
	r := s.GetMessage("T", 0, 0, 32, 0, nil)
	if r.Status != Found || len(r.Messages) != 32 {
		t.Fatalf("status %v, %d messages", r.Status, len(r.Messages))
	}
	for i, b := range r.Messages {
		if m, err := message.DecodeRecord(b, true); err != nil || string(m.Body[:2]) != fmt.Sprintf("%02d", i) {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	readers := s.CommitLogReaders()
	held := 0
	for _, n := range readers {
		if n > 1 {
			t.Fatalf("a segment held %d times by one read: %v", n, readers)
		}
		held += int(n)
	}
	if held != len(r.held) || held < 2 {
		t.Fatalf("readers %v, held %d segments; want the 32 records' 2+ segments once each", readers, len(r.held))
	}
	r.Release()
	for i, n := range s.CommitLogReaders() {
		if n != 0 {
			t.Fatalf("segment %d still held %d times after Release", i, n)
		}
	}
}
