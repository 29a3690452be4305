package message

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"maps"
	"net/netip"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// FuzzDecodeProperties feeds arbitrary property strings (a record's or a send
// header's) to the three readers. DecodeProperties must return only pairs
// EncodeProperties accepts, so decode, encode, decode is stable; a string
// ValidateProperties accepts must lose nothing; LookupProperty must agree
// with a plain split of the string.
func FuzzDecodeProperties(f *testing.F) {
	for _, s := range []string{
		"", "TAGS\x01TagA\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01AC1\x02", "a\x01b", "a\x01\x02c\x01d\x02",
		"a\x01b\x01c", "\x01v\x02", "a\x01b\x02a\x01c\x02", "\x02\x02\x01\x01",
	} {
		f.Add(s, "a")
	}
	f.Fuzz(func(t *testing.T, s, key string) {
		m := DecodeProperties(s)
		if len(m) > strings.Count(s, "\x01") {
			t.Fatalf("%q: %d pairs from %d separators", s, len(m), strings.Count(s, "\x01"))
		}
		enc, err := EncodeProperties(m)
		if err != nil {
			t.Fatalf("%q decodes to %q, which does not encode: %v", s, m, err)
		}
		if again := DecodeProperties(enc); !maps.Equal(again, m) {
			t.Fatalf("%q: decode(encode(%q)) = %q", s, m, again)
		}
		if len(enc) <= MaxPropertiesLength && ValidateProperties(enc) != nil {
			t.Fatalf("%q: encoded %q fails ValidateProperties", s, enc)
		}
		if ValidateProperties(s) == nil && len(m) != len(splitItems(s)) && !hasDuplicateKey(s) {
			t.Fatalf("%q is valid but decodes to %d of %d pairs", s, len(m), len(splitItems(s)))
		}
		for k, v := range m {
			// Lookup finds the first item with the key, Decode keeps the last.
			got, ok := LookupProperty([]byte(s), k)
			if !ok || (!hasDuplicateKey(s) && string(got) != v) {
				t.Fatalf("%q: LookupProperty(%q) = %q, %v; DecodeProperties has %q", s, k, got, ok, v)
			}
		}
		got, ok := LookupProperty([]byte(s), key)
		want, wantOK := lookupBySplit(s, key)
		if ok != wantOK || string(got) != want {
			t.Fatalf("LookupProperty(%q, %q) = %q, %v; want %q, %v", s, key, got, ok, want, wantOK)
		}
	})
}

func splitItems(s string) []string {
	items := strings.Split(s, "\x02")
	if items[len(items)-1] == "" {
		items = items[:len(items)-1]
	}
	return items
}

func hasDuplicateKey(s string) bool {
	seen := map[string]bool{}
	for _, it := range splitItems(s) {
		k, _, _ := strings.Cut(it, "\x01")
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	return false
}

// lookupBySplit is LookupProperty's definition: the value after the first
// separator of the first item whose key is key.
func lookupBySplit(s, key string) (string, bool) {
	for _, it := range strings.Split(s, "\x02") {
		if k, v, ok := strings.Cut(it, "\x01"); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// FuzzDecodeBatch splits arbitrary SEND_BATCH_MESSAGE bodies. An error must
// be ErrBadRecord; a split must account for every byte, and encoding the
// items again gives the body back (magic and body CRC, which the broker
// ignores and recomputes, aside).
func FuzzDecodeBatch(f *testing.F) {
	a := primitive.NewMessage("T", []byte("one"))
	a.WithTag("x")
	a.WithKeys([]string{"k1", "k2"})
	b := primitive.NewMessage("T", nil)
	f.Add(append(a.Marshal(), b.Marshal()...))
	f.Add(a.Marshal())
	f.Add(encodeBatch([]BatchItem{{Flag: -1, Body: bytes.Repeat([]byte{0}, 300), Properties: strings.Repeat("k\x01v\x02", 20)}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := DecodeBatch(body)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) || items != nil {
				t.Fatalf("DecodeBatch error %v (items %d) is not ErrBadRecord", err, len(items))
			}
			return
		}
		if len(items) > len(body)/22 {
			t.Fatalf("%d items from %d bytes", len(items), len(body))
		}
		enc := encodeBatch(items)
		if len(enc) != len(body) {
			t.Fatalf("items re-encode to %d bytes, body has %d", len(enc), len(body))
		}
		for p := 0; p < len(body); p += int(binary.BigEndian.Uint32(body[p:])) {
			copy(enc[p+4:p+12], body[p+4:p+12])
		}
		if !bytes.Equal(enc, body) {
			t.Fatalf("re-encoded batch differs:\n%x\n%x", body, enc)
		}
	})
}

// encodeBatch is the client's MessageBatch encoding, with magic and body CRC 0.
func encodeBatch(items []BatchItem) []byte {
	var out []byte
	be := binary.BigEndian
	for _, it := range items {
		size := 22 + len(it.Body) + len(it.Properties)
		out = be.AppendUint32(out, uint32(size))
		out = be.AppendUint32(out, 0)
		out = be.AppendUint32(out, 0)
		out = be.AppendUint32(out, uint32(it.Flag))
		out = be.AppendUint32(out, uint32(len(it.Body)))
		out = append(out, it.Body...)
		out = be.AppendUint16(out, uint16(len(it.Properties)))
		out = append(out, it.Properties...)
	}
	return out
}

// FuzzParseRecord feeds arbitrary bytes to the commitlog record readers, as
// recovery, the dispatcher, pulls and the admin lookups see them. Errors must
// be ErrBadRecord; a view must lie inside the input and add up to its total
// size; DecodeRecord must agree with the view; and encoding the decoded
// message must give the record back (exactly, when its hosts are in the form
// EncodeRecord writes).
func FuzzParseRecord(f *testing.F) {
	m := &Message{Topic: "TopicTest", QueueID: 3, Flag: 7, Body: []byte("hello"),
		Properties: "KEYS\x01k1\x02TAGS\x01a\x02", BornTimestamp: 1700000000123,
		BornHost: netip.MustParseAddrPort("10.0.0.9:51234"), ReconsumeTimes: 2, PreparedTransactionOffset: 99}
	for _, host := range []string{"192.168.1.2:10911", "[2001:db8::1]:10911"} {
		s := &Stamp{QueueOffset: 42, PhysicalOffset: 4096, StoreTimestamp: 1700000000999,
			StoreHost: netip.MustParseAddrPort(host), BodyCRC: BodyCRC(m.Body)}
		f.Add(encodeRecord(m, s))
	}
	f.Add(encodeRecord(&Message{Topic: "t"}, &Stamp{}))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseRecord(b)
		ext, derr := DecodeRecord(b, false)
		if (err == nil) != (derr == nil) {
			t.Fatalf("ParseRecord error %v, DecodeRecord error %v", err, derr)
		}
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("ParseRecord error %v is not ErrBadRecord", err)
			}
			return
		}
		if v.Size() > len(b) || len(v.Raw) != v.Size() {
			t.Fatalf("view of %d bytes (raw %d) from %d", v.Size(), len(v.Raw), len(b))
		}
		if n := RecordSize(v.SysFlag, len(v.Body()), len(v.Topic()), len(v.Properties())); n != v.Size() {
			t.Fatalf("fields add up to %d, total size %d", n, v.Size())
		}
		if _, err := DecodeRecord(b, true); (err == nil) != v.CheckCRC() {
			t.Fatalf("DecodeRecord with CRC check: %v, CheckCRC %v", err, v.CheckCRC())
		}
		if ext.Topic != string(v.Topic()) || !bytes.Equal(ext.Body, v.Body()) || ext.Properties != string(v.Properties()) ||
			ext.QueueOffset != v.QueueOffset() || ext.PhysicalOffset != v.PhysicalOffset() ||
			ext.StoreTimestamp != v.StoreTimestamp() || ext.BodyCRC != v.BodyCRC() || ext.QueueID != v.QueueID() ||
			int(ext.StoreSize) != v.Size() {
			t.Fatalf("DecodeRecord %+v disagrees with the view", ext)
		}
		enc := encodeRecord(&ext.Message, stampOf(ext))
		if canonicalHosts(v) && !bytes.Equal(enc, v.Raw) {
			t.Fatalf("re-encoded record differs:\n%x\n%x", v.Raw, enc)
		}
		// Otherwise one round normalises the hosts, and the second changes nothing.
		again, err := DecodeRecord(enc, false)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !bytes.Equal(encodeRecord(&again.Message, stampOf(again)), enc) {
			t.Fatalf("second encoding differs from the first")
		}
	})
}

func encodeRecord(m *Message, s *Stamp) []byte {
	sf := SysFlagFor(m.SysFlag, m.BornHost, s.StoreHost)
	buf := make([]byte, RecordSize(sf, len(m.Body), len(m.Topic), len(m.Properties)))
	EncodeRecord(buf, m, s)
	return buf
}

func stampOf(m *MessageExt) *Stamp {
	return &Stamp{QueueOffset: m.QueueOffset, PhysicalOffset: m.PhysicalOffset,
		StoreTimestamp: m.StoreTimestamp, StoreHost: m.StoreHost, BodyCRC: m.BodyCRC}
}

// canonicalHosts reports whether the record's hosts are as EncodeRecord
// writes them: ports below 65536, and a V6 flag only on a true IPv6 address.
func canonicalHosts(v RecordView) bool {
	ok := func(at int, v6 bool) bool {
		n := hostLen(v6)
		h := v.Raw[at : at+n]
		if binary.BigEndian.Uint16(h[n-4:]) != 0 {
			return false
		}
		return !v6 || !netip.AddrFrom16([16]byte(h[:16])).Is4In6()
	}
	return ok(OffBornHost, v.SysFlag&FlagBornHostV6 != 0) && ok(v.storeAt+8, v.SysFlag&FlagStoreHostV6 != 0)
}

// FuzzParseOffsetMsgID parses arbitrary message ids (VIEW_MESSAGE_BY_ID and
// the admin tools send them). A parsed id must print back as itself.
func FuzzParseOffsetMsgID(f *testing.F) {
	f.Add(CreateOffsetMsgID(netip.MustParseAddrPort("192.168.1.2:10911"), 0x1234))
	f.Add(CreateOffsetMsgID(netip.MustParseAddrPort("[2001:db8::1]:10911"), -1))
	f.Fuzz(func(t *testing.T, id string) {
		host, off, err := ParseOffsetMsgID(id)
		if err != nil {
			if !errors.Is(err, ErrBadMsgID) {
				t.Fatalf("ParseOffsetMsgID(%q) error %v is not ErrBadMsgID", id, err)
			}
			return
		}
		b, _ := hex.DecodeString(id)
		canonical := binary.BigEndian.Uint16(b[len(b)-12:]) == 0 && (len(b) == 16 || !host.Addr().Is4In6())
		if got := CreateOffsetMsgID(host, off); canonical && got != strings.ToUpper(id) {
			t.Fatalf("ParseOffsetMsgID(%q) = %v, %d, which prints as %s", id, host, off, got)
		}
	})
}
