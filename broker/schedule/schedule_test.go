package schedule

import (
	"github.com/openrmq/rocketmq-operator/pkg/atomicfile"

	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/broker/store/storetest"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

func TestToSchedule(t *testing.T) {
	for _, tc := range []struct {
		name      string
		delay     string
		sysFlag   int32
		wantOK    bool
		wantQueue int32
		wantLevel string
	}{
		{"level 1", "1", 0, true, 0, "1"},
		{"level 18", "18", 0, true, 17, "18"},
		{"clamped", "40", 0, true, 17, "18"},
		{"commit keeps delay", "3", message.TransactionCommitType, true, 2, "3"},
		{"no delay", "", 0, false, 5, ""},
		{"zero", "0", 0, false, 5, "0"},
		{"negative", "-1", 0, false, 5, "-1"},
		{"prepared", "3", message.TransactionPreparedType, false, 5, "3"},
		{"rollback", "3", message.TransactionRollbackType, false, 5, "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := map[string]string{message.PropertyTags: "t", "k": "v"}
			if tc.delay != "" {
				props[message.PropertyDelayTimeLevel] = tc.delay
			}
			m := storetest.Message("T", 5, "b", props)
			m.SysFlag = tc.sysFlag
			ok, err := ToSchedule(m, 18)
			if err != nil || ok != tc.wantOK {
				t.Fatalf("ToSchedule = %v, %v; want %v", ok, err, tc.wantOK)
			}
			if m.QueueID != tc.wantQueue || m.Property(message.PropertyDelayTimeLevel) != tc.wantLevel {
				t.Fatalf("queue %d level %q; want %d %q", m.QueueID, m.Property(message.PropertyDelayTimeLevel), tc.wantQueue, tc.wantLevel)
			}
			if !ok {
				if m.Topic != "T" {
					t.Fatalf("topic changed to %s", m.Topic)
				}
				return
			}
			if m.Topic != Topic || m.Property(message.PropertyRealTopic) != "T" || m.Property(message.PropertyRealQueueID) != "5" ||
				m.Property("k") != "v" || m.Property(message.PropertyTags) != "t" {
				t.Fatalf("schedule form %+v", m)
			}
		})
	}
}

// The store puts the delivery time into the consume-queue tag slot of
// SCHEDULE_TOPIC_XXXX entries; the service relies on it.
func TestStoreTagSlotIsDeliveryTime(t *testing.T) {
	root := t.TempDir()
	st := openStore(t, root)
	defer st.Close()
	r1 := putDelayed(t, st, "T", 0, "a", 2)
	r2 := putDelayed(t, st, "T", 0, "b", 9) // clamped to 3
	storetest.WaitQueue(t, st, Topic, 1, 1)
	storetest.WaitQueue(t, st, Topic, 2, 1)
	for _, c := range []struct {
		qid  int32
		want int64
	}{{1, r1.StoreTimestamp + 2000}, {2, r2.StoreTimestamp + 3000}} {
		var tag int64
		r := st.GetMessage(Topic, c.qid, 0, 1, 0, store.FilterFuncs{Tags: func(v int64) bool { tag = v; return true }})
		r.Release()
		if tag != c.want {
			t.Fatalf("queue %d tag slot %d, want delivery time %d", c.qid, tag, c.want)
		}
	}
}

func TestRestore(t *testing.T) {
	m := storetest.Message("T", 3, "body", map[string]string{message.PropertyDelayTimeLevel: "2", message.PropertyTags: "x",
		message.PropertyUniqClientMessageIDKey: "U", message.PropertyWaitStoreMsgOK: "true"})
	m.Flag, m.ReconsumeTimes = 7, 2
	if _, err := ToSchedule(m, 18); err != nil {
		t.Fatal(err)
	}
	scheduled := m.Properties
	in, err := Restore(&message.MessageExt{Message: *m})
	if err != nil {
		t.Fatal(err)
	}
	// As 4.9.7 stores it: the properties string of the scheduled copy, the
	// DELAY level and the producer's WAIT included.
	want := map[string]string{
		message.PropertyTags: "x", message.PropertyUniqClientMessageIDKey: "U", message.PropertyWaitStoreMsgOK: "true",
		message.PropertyDelayTimeLevel: "2", message.PropertyRealTopic: "T", message.PropertyRealQueueID: "3",
	}
	got := message.DecodeProperties(in.Properties)
	if fmt.Sprint(got) != fmt.Sprint(want) || in.Properties != scheduled || in.Topic != "T" || in.QueueID != 3 ||
		in.Flag != 7 || in.ReconsumeTimes != 2 || string(in.Body) != "body" {
		t.Fatalf("restored %+v props %v", in, got)
	}
	if _, err := Restore(&message.MessageExt{Message: message.Message{Topic: Topic, Properties: "a\x01b\x02"}}); err == nil {
		t.Fatal("Restore without REAL_TOPIC succeeded")
	}
}

// On the test's clock: a delayed message is not delivered a millisecond
// before its level's delay has passed, and is at that millisecond, stored
// at its due time in its real topic and queue with the properties it was
// sent with.
func TestDeliverAtDueTime(t *testing.T) {
	root := t.TempDir()
	clk := storetest.NewClock(testStart)
	st := openStoreAt(t, root, clk)
	defer st.Close()
	svc := newServiceAt(t, st, root, clk) // not started: the test runs deliver itself
	sent := putDelayed(t, st, "T", 1, "l2", 2)
	putDelayed(t, st, "T", 1, "clamped", 7) // level 3, the highest of testLevels
	storetest.WaitDispatched(t, st)
	l2, l3 := svc.levels[1], svc.levels[2]

	clk.Advance(1999 * time.Millisecond)
	if wait := svc.deliver(l2); wait != time.Millisecond {
		t.Fatalf("1 ms before due: deliver waits %v, want 1ms", wait)
	}
	if got := len(storetest.ReadQueue(t, st, "T", 1)); got != 0 {
		t.Fatalf("%d delivered early", got)
	}
	clk.Advance(time.Millisecond)
	if wait := svc.deliver(l2); wait != -1 {
		t.Fatalf("at due: deliver waits %v, want -1 (drained)", wait)
	}
	if wait := svc.deliver(l3); wait != time.Second {
		t.Fatalf("level 3 at 2 s: waits %v, want 1s", wait)
	}
	storetest.WaitDispatched(t, st)
	got := storetest.ReadQueue(t, st, "T", 1)
	if len(got) != 1 {
		t.Fatalf("delivered %d, want 1", len(got))
	}
	m := got[0]
	if string(m.Body) != "l2" || m.StoreTimestamp != sent.StoreTimestamp+2000 || m.QueueID != 1 ||
		m.Property(message.PropertyDelayTimeLevel) != "2" || m.Property(message.PropertyRealTopic) != "T" ||
		m.Property(message.PropertyRealQueueID) != "1" || m.Property(message.PropertyTags) != "TagA" {
		t.Fatalf("delivered %+v", m)
	}
	if o := svc.Offsets(); o[2] != 1 || o[3] != 0 {
		t.Fatalf("offsets %v", o)
	}

	// A clock set back by more than a level's delay delivers at once, as
	// RocketMQ does, rather than waiting for the old due time.
	putDelayed(t, st, "T", 2, "before-jump", 1)
	storetest.WaitDispatched(t, st)
	clk.Advance(-time.Hour)
	if wait := svc.deliver(svc.levels[0]); wait != -1 {
		t.Fatalf("after the clock went back: waits %v", wait)
	}
	if got := storetest.WaitQueue(t, st, "T", 2, 1); string(got[0].Body) != "before-jump" {
		t.Fatalf("delivered %q", got[0].Body)
	}
}

// On the real clock, for messages sent both before and after the service
// starts: each level's goroutine sleeps until the head is due or an arrival
// wakes it, and delivers never early (lateness is logged; its figure under
// load is a benchmark's, not this test's).
func TestDeliverOnRealClock(t *testing.T) {
	root := t.TempDir()
	st := openStore(t, root)
	defer st.Close()
	type sent struct {
		body string
		due  int64
	}
	var all []sent
	send := func(level int, body string) {
		r := putDelayed(t, st, "T", 1, body, level)
		d := min(level, 3)
		all = append(all, sent{body, r.StoreTimestamp + int64(d)*1000})
	}
	send(2, "early-2") // before Start: found by the initial walk
	svc := newService(t, st, root)
	svc.Start()
	defer svc.Close()
	time.Sleep(150 * time.Millisecond) // a later send lands while the level goroutines sleep
	send(1, "l1-a")
	time.Sleep(230 * time.Millisecond)
	send(1, "l1-b")
	send(7, "clamped") // level 3
	send(3, "l3")
	got := storetest.WaitQueue(t, st, "T", 1, len(all))
	byBody := map[string]*message.MessageExt{}
	for _, m := range got {
		byBody[string(m.Body)] = m
	}
	for _, s := range all {
		m := byBody[s.body]
		if m == nil {
			t.Fatalf("%s not delivered", s.body)
		}
		late := m.StoreTimestamp - s.due
		t.Logf("%-8s lateness %d ms", s.body, late)
		if late < 0 {
			t.Errorf("%s delivered %d ms early", s.body, -late)
		}
		if m.Property(message.PropertyRealTopic) != "T" || m.Property(message.PropertyTags) != "TagA" || m.QueueID != 1 {
			t.Errorf("%s delivered as %+v", s.body, m)
		}
	}
	if len(got) != len(all) {
		t.Fatalf("delivered %d, want %d", len(got), len(all))
	}
}

// Close the store and the service halfway, reopen: every message is
// delivered exactly once.
func TestRestartMidway(t *testing.T) {
	root := t.TempDir()
	clk := storetest.NewClock(testStart)
	st := openStoreAt(t, root, clk)
	svc := newServiceAt(t, st, root, clk)
	svc.Start()
	for i := 0; i < 5; i++ {
		putDelayed(t, st, "T", 0, fmt.Sprintf("l1-%d", i), 1)
		putDelayed(t, st, "T", 0, fmt.Sprintf("l3-%d", i), 3)
	}
	clk.Advance(time.Second) // level 1 due, level 3 pending
	storetest.WaitQueue(t, st, "T", 0, 5)
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, filepath.Join(root, "config", OffsetFile)), `{"offsetTable":{1:5,2:0,3:0}}`; got != want {
		t.Fatalf("offsets file %s, want %s", got, want)
	}

	st = openStoreAt(t, root, clk)
	defer st.Close()
	svc = newServiceAt(t, st, root, clk)
	svc.Start()
	clk.Advance(2 * time.Second) // level 3 due
	storetest.WaitQueue(t, st, "T", 0, 10)
	if err := svc.Close(); err != nil { // nothing is delivered after Close
		t.Fatal(err)
	}
	storetest.WaitDispatched(t, st)
	got := storetest.ReadQueue(t, st, "T", 0)
	seen := map[string]int{}
	for _, m := range got {
		seen[string(m.Body)]++
	}
	if len(got) != 10 || len(seen) != 10 {
		t.Fatalf("delivered %d messages, %d distinct: %v", len(got), len(seen), seen)
	}
	if o := svc.Offsets(); o[1] != 5 || o[3] != 5 {
		t.Fatalf("offsets %v", o)
	}
}

// noFlush hides flush progress: the service must not persist offsets of
// deliveries whose copies are not on disk yet.
type noFlush struct{ *store.Store }

func (noFlush) FlushedOffset() int64 { return 0 }

func TestPersistWaitsForFlush(t *testing.T) {
	root := t.TempDir()
	st := openStore(t, root)
	defer st.Close()
	svc := newService(t, noFlush{st}, root)
	svc.Start()
	defer svc.Close()
	putDelayed(t, st, "T", 0, "x", 1)
	storetest.WaitQueue(t, st, "T", 0, 1)
	if o := svc.Offsets(); o[1] != 1 {
		t.Fatalf("in-memory offsets %v", o)
	}
	// What the persister would write now: the delivery is not in it.
	if err := svc.Persist(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(root, "config", OffsetFile)); got != `{"offsetTable":{1:0,2:0,3:0}}` {
		t.Fatalf("offsets persisted before the delivered copy was flushed: %s", got)
	}
	// Once flushed (real FlushedOffset), the persister writes it.
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(root, "config", OffsetFile)); got != `{"offsetTable":{1:1,2:0,3:0}}` {
		t.Fatalf("after Close: %s", got)
	}
}

func TestPersistsAfterFlush(t *testing.T) {
	root := t.TempDir()
	st := openStore(t, root)
	defer st.Close()
	svc := newService(t, st, root)
	svc.Start()
	defer svc.Close()
	putDelayed(t, st, "T", 0, "x", 1)
	storetest.WaitQueue(t, st, "T", 0, 1)
	// The async flush (every 500 ms) then the persister (every 100 ms) write it.
	waitFile(t, filepath.Join(root, "config", OffsetFile), `{"offsetTable":{1:1,2:0,3:0}}`)
}

func TestOffsetsFile(t *testing.T) {
	if got := string(EncodeOffsets(map[int]int64{2: 0, 1: 12, 10: 3})); got != `{"offsetTable":{1:12,2:0,10:3}}` {
		t.Fatalf("encode: %s", got)
	}
	for _, in := range []string{`{"offsetTable":{1:12,2:0}}`, `{"offsetTable":{"1":12,"2":0}}`, "{\n\t\"offsetTable\":{1:12,2:0\n\t}\n}"} {
		got, err := DecodeOffsets([]byte(in))
		if err != nil || got[1] != 12 || got[2] != 0 || len(got) != 2 {
			t.Fatalf("decode %q = %v, %v", in, got, err)
		}
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "config", OffsetFile)
	if err := atomicfile.Write(p, EncodeOffsets(map[int]int64{1: 1})); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(p, EncodeOffsets(map[int]int64{1: 2})); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, p+".bak"); got != `{"offsetTable":{1:1}}` {
		t.Fatalf(".bak = %s", got)
	}
	// A torn main file falls back to .bak, said so, and is kept aside.
	os.WriteFile(p, []byte(`{"offsetTab`), 0o644)
	got, fb, err := loadOffsets(p)
	if err != nil || got[1] != 1 || fb == nil || fb.KeptAs == "" || readFile(t, fb.KeptAs) != `{"offsetTab` {
		t.Fatalf("load with torn file = %v, %v, fallback %v", got, err, fb)
	}
	// Nothing at all: empty table.
	if got, fb, err := loadOffsets(filepath.Join(dir, "none")); err != nil || len(got) != 0 || fb != nil {
		t.Fatalf("load missing = %v, %v, %v", got, fb, err)
	}
}

// A crash (no final offset write) may deliver recent messages again but
// never loses one.
func TestCrashRedeliversNeverLoses(t *testing.T) {
	root := t.TempDir()
	clk := storetest.NewClock(testStart)
	st := openStoreAt(t, root, clk)
	svc := newServiceAt(t, st, root, clk)
	svc.Start()
	for i := 0; i < 5; i++ {
		putDelayed(t, st, "T", 0, fmt.Sprintf("a-%d", i), 1)
	}
	clk.Advance(time.Second)
	storetest.WaitQueue(t, st, "T", 0, 5)
	waitFile(t, filepath.Join(root, "config", OffsetFile), `{"offsetTable":{1:5,2:0,3:0}}`) // flushed and persisted
	for i := 0; i < 5; i++ {
		putDelayed(t, st, "T", 0, fmt.Sprintf("b-%d", i), 1)
	}
	putDelayed(t, st, "T", 0, "pending", 3)
	clk.Advance(time.Second) // the b-* are due, pending is not
	storetest.WaitQueue(t, st, "T", 0, 10)
	svc.halt()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	persisted := readFile(t, filepath.Join(root, "config", OffsetFile))

	st = openStoreAt(t, root, clk)
	defer st.Close()
	svc = newServiceAt(t, st, root, clk)
	svc.Start()
	clk.Advance(2 * time.Second) // pending is due
	seen := map[string]int{}
	for deadline := time.Now().Add(storetest.Patience); seen["pending"] == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pending not delivered after the restart: %v", seen)
		}
		seen = map[string]int{}
		for _, m := range storetest.ReadQueue(t, st, "T", 0) {
			seen[string(m.Body)]++
		}
	}
	if err := svc.Close(); err != nil { // nothing is delivered after Close
		t.Fatal(err)
	}
	storetest.WaitDispatched(t, st)
	seen = map[string]int{}
	for _, m := range storetest.ReadQueue(t, st, "T", 0) {
		seen[string(m.Body)]++
	}
	for i := 0; i < 5; i++ {
		if seen[fmt.Sprintf("a-%d", i)] != 1 {
			t.Errorf("a-%d delivered %d times (persisted before the crash)", i, seen[fmt.Sprintf("a-%d", i)])
		}
		if n := seen[fmt.Sprintf("b-%d", i)]; n < 1 || n > 2 {
			t.Errorf("b-%d delivered %d times", i, n)
		}
	}
	if seen["pending"] != 1 {
		t.Errorf("pending delivered %d times", seen["pending"])
	}
	t.Logf("offsets at crash %s; deliveries %v", persisted, seen)
}
