package store

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

func TestPutGetAcrossSegments(t *testing.T) {
	cfg := testConfig(t)
	s := mustOpen(t, cfg)
	const n = 600 // ~70 KB of records: crosses a 64 KiB segment
	var last *PutResult
	for i := range n {
		r := mustPut(t, s, newMsg("T", int32(i%2), body(i)+strings.Repeat("x", 50), map[string]string{"TAGS": "a"}))
		if want := int64(i / 2); r.QueueOffset != want {
			t.Fatalf("message %d: queue offset %d, want %d", i, r.QueueOffset, want)
		}
		if last != nil && r.PhysicalOffset < last.PhysicalOffset+int64(last.Size) {
			t.Fatalf("physical offsets overlap: %d after %d+%d", r.PhysicalOffset, last.PhysicalOffset, last.Size)
		}
		last = r
	}
	waitDispatched(t, s)
	segs, _ := listNumbered(cfg.commitLogDir())
	if len(segs) < 2 || segs[1] != int64(cfg.MappedFileSizeCommitLog) {
		t.Fatalf("segments %v, want at least two named by start offset", segs)
	}
	if _, err := os.Stat(filepath.Join(cfg.commitLogDir(), "00000000000000065536")); err != nil {
		t.Fatalf("second segment name: %v", err)
	}
	// The first segment ends with a blank record RocketMQ-style.
	seg := s.cl.segment(0)
	var pos int
	for pos < seg.Size() {
		v, err := message.ParseRecord(seg.Data[pos:])
		if err != nil {
			break
		}
		pos += v.Size()
	}
	rest := seg.Size() - pos
	if got := int(int32(beUint32(seg.Data[pos:]))); got != rest || int32(beUint32(seg.Data[pos+4:])) != message.BlankMagicCode {
		t.Fatalf("blank at %d: size %d (want %d)", pos, got, rest)
	}
	seg.Release()
	for q := int32(0); q < 2; q++ {
		msgs := readAll(t, s, "T", q)
		if len(msgs) != n/2 {
			t.Fatalf("queue %d: %d messages, want %d", q, len(msgs), n/2)
		}
		for i, m := range msgs {
			if want := body(2*i + int(q)); !strings.HasPrefix(string(m.Body), want) || m.QueueOffset != int64(i) {
				t.Fatalf("queue %d offset %d: body %q qoff %d", q, i, m.Body[:12], m.QueueOffset)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Clean reopen: no scan, same content, appends continue the offsets.
	s = mustOpen(t, cfg)
	defer s.Close()
	if !s.CleanStart {
		t.Fatal("reopen after Close was not a clean start")
	}
	if got := len(readAll(t, s, "T", 1)); got != n/2 {
		t.Fatalf("after reopen: %d messages", got)
	}
	r := mustPut(t, s, newMsg("T", 1, "again", nil))
	if r.QueueOffset != n/2 || r.PhysicalOffset != last.PhysicalOffset+int64(last.Size) {
		t.Fatalf("append after reopen: qoff %d phy %d", r.QueueOffset, r.PhysicalOffset)
	}
}

func TestVerifyDetectsCorruption(t *testing.T) {
	s := mustOpen(t, testConfig(t))
	defer s.Close()
	r := mustPut(t, s, newMsg("V", 0, "payload", nil))
	mustPut(t, s, newMsg("V", 0, "payload2", nil))
	waitDispatched(t, s)
	if err := s.Verify(); err != nil {
		t.Fatalf("healthy store: %v", err)
	}
	seg := s.cl.segment(r.PhysicalOffset)
	seg.Data[int(r.PhysicalOffset-seg.Start)+88] ^= 1 // first body byte
	seg.Release()
	if err := s.Verify(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Verify after a body flip: %v", err)
	}
}

func beUint32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func TestPutResultAndLookup(t *testing.T) {
	s := mustOpen(t, testConfig(t))
	defer s.Close()
	r := mustPut(t, s, newMsg("T", 3, "hello", map[string]string{"KEYS": "k1 k2", "UNIQ_KEY": "U1", "TAGS": "tg"}))
	host, phy, err := message.ParseOffsetMsgID(r.MsgID())
	if err != nil || phy != r.PhysicalOffset || host != s.cfg.StoreHost {
		t.Fatalf("msgId %s -> %v %d %v", r.MsgID(), host, phy, err)
	}
	m, err := s.GetMessageByOffset(r.PhysicalOffset)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Body) != "hello" || m.Topic != "T" || m.QueueID != 3 || m.StoreTimestamp != r.StoreTimestamp ||
		m.Property("TAGS") != "tg" || m.OffsetMsgID() != r.MsgID() {
		t.Fatalf("decoded %+v", m)
	}
	if _, err := s.GetMessageByOffset(r.PhysicalOffset + 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("misaligned offset: %v", err)
	}
	if _, err := s.GetMessageByOffset(1 << 40); !errors.Is(err, ErrNotFound) {
		t.Fatalf("offset past tail: %v", err)
	}
}

func TestRefuseBadMessages(t *testing.T) {
	s := mustOpen(t, testConfig(t))
	defer s.Close()
	cases := map[string]*message.Message{
		"too large":   newMsg("T", 0, strings.Repeat("x", 17<<10), nil),
		"long topic":  newMsg(strings.Repeat("t", 128), 0, "b", nil),
		"bad props":   {Topic: "T", Body: []byte("b"), Properties: "k\x01v\x01w\x02"},
		"no value":    {Topic: "T", Body: []byte("b"), Properties: "kv\x02"},
		"empty topic": newMsg("", 0, "b", nil),
	}
	for name, m := range cases {
		_, err := s.PutMessage(m)
		if !errors.Is(err, ErrMessageTooLarge) && !errors.Is(err, ErrBadMessage) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if s.CommitLogMaxOffset() != 0 {
		t.Fatalf("refused messages wrote %d bytes", s.CommitLogMaxOffset())
	}
}

func TestBatchAppend(t *testing.T) {
	s := mustOpen(t, testConfig(t))
	defer s.Close()
	mustPut(t, s, newMsg("B", 0, "first", nil))
	batch := []*message.Message{newMsg("B", 0, "b0", nil), newMsg("B", 0, "b1", nil), newMsg("B", 0, "b2", nil)}
	r, err := s.PutMessages(batch)
	if err != nil {
		t.Fatal(err)
	}
	if r.QueueOffset != 1 || r.MsgCount != 3 || len(r.MsgIDs) != 3 {
		t.Fatalf("batch result %+v", r)
	}
	waitDispatched(t, s)
	msgs := readAll(t, s, "B", 0)
	if len(msgs) != 4 {
		t.Fatalf("%d messages", len(msgs))
	}
	phy := r.PhysicalOffset
	for i, m := range msgs[1:] {
		if string(m.Body) != batch[i].Topic[:0]+"b"+string(rune('0'+i)) || m.QueueOffset != int64(i+1) || m.PhysicalOffset != phy {
			t.Fatalf("batch item %d: %q qoff %d phy %d (want %d)", i, m.Body, m.QueueOffset, m.PhysicalOffset, phy)
		}
		if m.OffsetMsgID() != r.MsgIDs[i] {
			t.Fatalf("msgid %d mismatch", i)
		}
		phy += int64(m.StoreSize)
	}
	if phy != r.PhysicalOffset+int64(r.Size) {
		t.Fatalf("batch size %d does not cover records", r.Size)
	}
	if _, err := s.PutMessages([]*message.Message{newMsg("B", 0, "x", nil), newMsg("B", 1, "y", nil)}); !errors.Is(err, ErrBadMessage) {
		t.Fatalf("mixed batch: %v", err)
	}
}

// TestSpareSegment checks the next segment is created ahead of the roll,
// taken by the writer, and removed by a clean Close.
func TestSpareSegment(t *testing.T) {
	cfg := testConfig(t)
	s := mustOpen(t, cfg)
	mustPut(t, s, newMsg("S", 0, "x", nil))
	next := filepath.Join(cfg.commitLogDir(), "00000000000000065536")
	waitFile := func(want bool) {
		t.Helper()
		for range 500 {
			if _, err := os.Stat(next); (err == nil) == want {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		t.Fatalf("spare %s present=%v never reached", next, want)
	}
	waitFile(true)
	// The file is renamed into place before allocLoop maps it and hands it over.
	var spare *mmapfile.File
	for range 500 {
		s.cl.spareMu.Lock()
		spare = s.cl.spare
		s.cl.spareMu.Unlock()
		if spare != nil {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if spare == nil || spare.Start != 65536 {
		t.Fatal("no spare segment held")
	}
	for s.CommitLogMaxOffset() < 65536 {
		mustPut(t, s, newMsg("S", 0, strings.Repeat("y", 1000), nil))
	}
	if last := s.cl.lastSegment(); last != spare {
		t.Fatal("roll did not take the spare")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.commitLogDir(), "00000000000000131072")); !os.IsNotExist(err) {
		t.Fatalf("unused spare left after Close: %v", err)
	}
	s = mustOpen(t, cfg)
	defer s.Close()
	if !s.CleanStart {
		t.Fatal("not a clean start after Close")
	}
}

// A message without a born host (a client that sent none) is stored with 0.0.0.0 and
// must not poison the writer for the messages after it.
func TestPutWithoutBornHost(t *testing.T) {
	s := mustOpen(t, testConfig(t))
	defer s.Close()
	m := newMsg("NoHost", 0, "first", nil)
	m.BornHost = netip.AddrPort{}
	mustPut(t, s, m)
	mustPut(t, s, newMsg("NoHost", 0, "second", nil))
	waitDispatched(t, s)
	got := readAll(t, s, "NoHost", 0)
	if len(got) != 2 || string(got[0].Body) != "first" || string(got[1].Body) != "second" {
		t.Fatalf("read back %d messages: %v", len(got), got)
	}
	if got[0].BornHost.Addr() != netip.IPv4Unspecified() {
		t.Errorf("born host stored as %v, want 0.0.0.0", got[0].BornHost)
	}
}
