package message

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

func sampleMessage(t *testing.T) *Message {
	t.Helper()
	props, err := EncodeProperties(map[string]string{
		PropertyTags: "TagA", PropertyKeys: "k1 k2", PropertyUniqClientMessageIDKey: "UNIQ123", "custom": "v",
	})
	if err != nil {
		t.Fatal(err)
	}
	return &Message{
		Topic: "TopicTest", QueueID: 3, Flag: 7, Body: []byte("hello body"), Properties: props,
		BornTimestamp: 1700000000123, BornHost: netip.MustParseAddrPort("10.0.0.9:51234"),
		ReconsumeTimes: 2, PreparedTransactionOffset: 99,
	}
}

func encode(t *testing.T, m *Message, s *Stamp) []byte {
	t.Helper()
	sf := SysFlagFor(m.SysFlag, m.BornHost, s.StoreHost)
	buf := make([]byte, RecordSize(sf, len(m.Body), len(m.Topic), len(m.Properties)))
	if n := EncodeRecord(buf, m, s); n != len(buf) {
		t.Fatalf("EncodeRecord wrote %d, want %d", n, len(buf))
	}
	return buf
}

func TestRecordRoundTrip(t *testing.T) {
	m := sampleMessage(t)
	s := &Stamp{QueueOffset: 42, PhysicalOffset: 4096, StoreTimestamp: 1700000000999,
		StoreHost: netip.MustParseAddrPort("192.168.1.2:10911"), BodyCRC: BodyCRC(m.Body)}
	buf := encode(t, m, s)
	got, err := DecodeRecord(buf, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.Topic != m.Topic || !bytes.Equal(got.Body, m.Body) || got.QueueOffset != 42 ||
		got.PhysicalOffset != 4096 || got.StoreHost != s.StoreHost || got.BornHost != m.BornHost ||
		got.ReconsumeTimes != 2 || got.PreparedTransactionOffset != 99 || got.Flag != 7 ||
		got.Properties != m.Properties || got.StoreTimestamp != s.StoreTimestamp || got.QueueID != 3 {
		t.Fatalf("round trip mismatch: %+v", got)
	}
	buf[len(buf)-len(m.Properties)-2-len(m.Topic)-1-1] ^= 0xff // flip a body byte
	if _, err := DecodeRecord(buf, true); !errors.Is(err, ErrBadRecord) {
		t.Fatalf("corrupt body: err = %v, want ErrBadRecord", err)
	}
}

func TestRecordIPv6(t *testing.T) {
	m := sampleMessage(t)
	m.BornHost = netip.MustParseAddrPort("[2001:db8::1]:4000")
	s := &Stamp{StoreHost: netip.MustParseAddrPort("[2001:db8::2]:10911"), BodyCRC: BodyCRC(m.Body)}
	buf := encode(t, m, s)
	got, err := DecodeRecord(buf, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.SysFlag&(FlagBornHostV6|FlagStoreHostV6) != FlagBornHostV6|FlagStoreHostV6 {
		t.Fatalf("sysflag %x lacks v6 bits", got.SysFlag)
	}
	if got.BornHost != m.BornHost || got.StoreHost != s.StoreHost {
		t.Fatalf("hosts %v %v", got.BornHost, got.StoreHost)
	}
	id := got.OffsetMsgID()
	h, off, err := ParseOffsetMsgID(id)
	if err != nil || h != s.StoreHost || off != 0 || len(id) != 56 {
		t.Fatalf("v6 msgid %q -> %v %d %v", id, h, off, err)
	}
}

// TestDecodeWithOfficialClient proves the official Go client parses our
// records as a pull body.
func TestDecodeWithOfficialClient(t *testing.T) {
	m := sampleMessage(t)
	store := netip.MustParseAddrPort("192.168.1.2:10911")
	var body []byte
	for i := range 2 {
		s := &Stamp{QueueOffset: int64(10 + i), PhysicalOffset: int64(1000 * (i + 1)), StoreTimestamp: 5,
			StoreHost: store, BodyCRC: BodyCRC(m.Body)}
		body = append(body, encode(t, m, s)...)
	}
	msgs := primitive.DecodeMessage(body)
	if len(msgs) != 2 {
		t.Fatalf("client decoded %d messages, want 2", len(msgs))
	}
	for i, cm := range msgs {
		if string(cm.Body) != "hello body" || cm.Topic != "TopicTest" || cm.GetTags() != "TagA" ||
			cm.GetKeys() != "k1 k2" || cm.GetProperty("custom") != "v" || cm.Queue.QueueId != 3 ||
			cm.QueueOffset != int64(10+i) || cm.CommitLogOffset != int64(1000*(i+1)) || cm.Flag != 7 {
			t.Fatalf("client view %d: %s", i, cm)
		}
		want := CreateOffsetMsgID(store, int64(1000*(i+1)))
		if cm.OffsetMsgId != want || cm.MsgId != "UNIQ123" {
			t.Fatalf("ids: client %s/%s, want %s/UNIQ123", cm.OffsetMsgId, cm.MsgId, want)
		}
		if cm.BornHost != "10.0.0.9:51234" || cm.StoreHost != "192.168.1.2:10911" {
			t.Fatalf("hosts: %s %s", cm.BornHost, cm.StoreHost)
		}
		if cm.BodyCRC != BodyCRC(m.Body) || cm.ReconsumeTimes != 2 {
			t.Fatalf("crc/reconsume: %d %d", cm.BodyCRC, cm.ReconsumeTimes)
		}
	}
	mid, err := primitive.UnmarshalMsgID([]byte(msgs[0].OffsetMsgId))
	if err != nil || mid.Offset != 1000 || mid.Port != 10911 || mid.Addr != "192.168.1.2" {
		t.Fatalf("client UnmarshalMsgID: %+v %v", mid, err)
	}
}

func TestProperties(t *testing.T) {
	s, err := EncodeProperties(map[string]string{"b": "2", "a": "1"})
	if err != nil || s != "a\x011\x02b\x012\x02" {
		t.Fatalf("encode: %q %v", s, err)
	}
	if m := DecodeProperties(s); len(m) != 2 || m["a"] != "1" || m["b"] != "2" {
		t.Fatalf("decode: %v", m)
	}
	if v, ok := LookupProperty([]byte(s), "b"); !ok || string(v) != "2" {
		t.Fatalf("lookup b: %q %v", v, ok)
	}
	if _, ok := LookupProperty([]byte(s), "c"); ok {
		t.Fatal("lookup c found")
	}
	// A string is searched where it is: every send looks up a few properties of the
	// string a producer sent, and a copy to bytes was an allocation each.
	long := strings.Repeat("x", 200)
	props := AppendProperty(s, "LONG", long)
	if n := testing.AllocsPerRun(100, func() {
		if v, ok := LookupProperty(props, "LONG"); !ok || v != long {
			t.Fatalf("lookup LONG: %.10q %v", v, ok)
		}
	}); n != 0 {
		t.Fatalf("LookupProperty of a string: %v allocations, want 0", n)
	}
	for _, bad := range []map[string]string{{"k\x01": "v"}, {"k": "v\x02"}, {"": "v"}} {
		if _, err := EncodeProperties(bad); !errors.Is(err, ErrBadProperties) {
			t.Fatalf("EncodeProperties(%q) err = %v", bad, err)
		}
	}
	for _, ok := range []string{"", "a\x01b", "a\x01b\x02", "a\x01\x02c\x01d\x02"} {
		if err := ValidateProperties(ok); err != nil {
			t.Fatalf("ValidateProperties(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"ab", "a\x01b\x01c", "\x01b", "a\x01b\x02\x02"} {
		if err := ValidateProperties(bad); !errors.Is(err, ErrBadProperties) {
			t.Fatalf("ValidateProperties(%q) = %v", bad, err)
		}
	}
}

func TestCheck(t *testing.T) {
	m := sampleMessage(t)
	m.Topic = string(bytes.Repeat([]byte("t"), 128))
	if err := m.Check(); !errors.Is(err, ErrTopicTooLong) {
		t.Fatalf("long topic: %v", err)
	}
	m.Topic = ""
	if err := m.Check(); !errors.Is(err, ErrEmptyTopic) {
		t.Fatalf("empty topic: %v", err)
	}
}

// Expected values are Java's String.hashCode, worked out with
// s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units in int32 arithmetic.
func TestTagsCode(t *testing.T) {
	tests := []struct {
		tag  string
		want int64
	}{
		{"", 0},
		{"a", 97},
		{"TagA", 2598919}, // 84*31^3 + 97*31^2 + 103*31 + 65
		{"TagB", 2598920},
		{"Aa", 2112},
		{"BB", 2112}, // collides with "Aa"
		{"hello", 99162322},
		{"hello world", 1794106052},         // wraps around int32
		{"polygenelubricants", -2147483648}, // Integer.MIN_VALUE, sign-extended
		{"f5a5a608", 0},                     // not only "" hashes to 0
		{"é", 233},                          // one UTF-16 unit, two UTF-8 bytes
		{"中文", 646394},                      // 0x4E2D*31 + 0x6587
		{"😀", 1772899},                      // surrogate pair 0xD83D*31 + 0xDE00
		{"a😀b", 57849694},                   // pair inside a string
		{"\xff", 65533},                     // invalid UTF-8 decodes to U+FFFD
		{"héllo", 103094734},
		{"zzzzzzzz", -1910022912},
		{"😀x", 54959989},
	}
	for _, tt := range tests {
		if got := TagsCode(tt.tag); got != tt.want {
			t.Errorf("TagsCode(%q) = %d, want %d", tt.tag, got, tt.want)
		}
	}
}

func TestOffsetMsgID(t *testing.T) {
	h := netip.MustParseAddrPort("127.0.0.1:10911")
	id := CreateOffsetMsgID(h, 0x1234)
	if id != "7F00000100002A9F0000000000001234" {
		t.Fatalf("id = %s", id)
	}
	gh, off, err := ParseOffsetMsgID(id)
	if err != nil || gh != h || off != 0x1234 {
		t.Fatalf("parse: %v %d %v", gh, off, err)
	}
	if _, _, err := ParseOffsetMsgID("zz"); !errors.Is(err, ErrBadMsgID) {
		t.Fatalf("bad id err = %v", err)
	}
}

func TestDecodeBatchFromClient(t *testing.T) {
	a := primitive.NewMessage("T", []byte("one"))
	a.WithTag("x")
	b := primitive.NewMessage("T", []byte("two"))
	body := append(a.Marshal(), b.Marshal()...)
	items, err := DecodeBatch(body)
	if err != nil || len(items) != 2 {
		t.Fatalf("DecodeBatch: %v %d", err, len(items))
	}
	if string(items[0].Body) != "one" || DecodeProperties(items[0].Properties)[PropertyTags] != "x" ||
		string(items[1].Body) != "two" {
		t.Fatalf("items %+v", items)
	}
	if _, err := DecodeBatch(body[:len(body)-1]); !errors.Is(err, ErrBadRecord) {
		t.Fatalf("truncated batch err = %v", err)
	}
}

// Properties edits decode once and encode once; AppendProperty and SetProperty keep the
// pairs a producer sent as they were when the key is new.
func TestPropertiesEdit(t *testing.T) {
	sent := "b\x01y\x02a\x01x" // the producer's order, no trailing separator
	if got := AppendProperty(sent, "CLUSTER", "c1"); got != sent+"\x02CLUSTER\x01c1\x02" {
		t.Errorf("AppendProperty: %q", got)
	}
	if got := AppendProperty(sent, "a", "z"); got != sent {
		t.Errorf("AppendProperty over a present key: %q", got)
	}
	if got := AppendProperty(sent, "k", ""); got != sent {
		t.Errorf("AppendProperty of an empty value: %q", got)
	}
	if got, err := SetProperty(sent, "c", "w"); err != nil || got != sent+"\x02c\x01w\x02" {
		t.Errorf("SetProperty of a new key: %q, %v", got, err)
	}
	if got, err := SetProperty(sent, "a", "z"); err != nil || got != "a\x01z\x02b\x01y\x02" {
		t.Errorf("SetProperty of a present key: %q, %v", got, err)
	}
	if got, err := DeleteProperty(sent, "b"); err != nil || got != "a\x01x\x02" {
		t.Errorf("DeleteProperty: %q, %v", got, err)
	}
	if got, err := DeleteProperty(sent, "zz"); err != nil || got != sent {
		t.Errorf("DeleteProperty of an absent key: %q, %v", got, err)
	}
	p := DecodeProperties(sent)
	p.Set("c", "w")
	p.Delete("b")
	if p.Get("a") != "x" || p.Get("b") != "" {
		t.Errorf("Get: %v", p)
	}
	if got, err := p.Encode(); err != nil || got != "a\x01x\x02c\x01w\x02" {
		t.Errorf("Encode: %q, %v", got, err)
	}
	p.Set("bad", "x\x02y")
	if _, err := p.Encode(); err == nil {
		t.Error("a separator in a value encoded")
	}
}

// TestCreateOffsetMsgIDAsJava: Java's MessageDecoder.createMessageId, upper-case hex of
// the store host's address, its port and the commitlog offset.
func TestCreateOffsetMsgIDAsJava(t *testing.T) {
	for _, tc := range []struct {
		host string
		off  int64
		want string
	}{
		{"192.168.1.2:10911", 0x1234, "C0A8010200002A9F0000000000001234"},
		{"[2001:db8::1]:10911", -1, "20010DB800000000000000000000000100002A9FFFFFFFFFFFFFFFFF"},
	} {
		if got := CreateOffsetMsgID(netip.MustParseAddrPort(tc.host), tc.off); got != tc.want {
			t.Errorf("CreateOffsetMsgID(%s, %d) = %s, want %s", tc.host, tc.off, got, tc.want)
		}
	}
}
