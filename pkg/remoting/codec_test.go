package remoting

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// readFixture returns the bytes of testdata/name.hex: hex digits, with whitespace and
// '#' comments ignored.
func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", name+".hex"))
	if err != nil {
		t.Fatal(err)
	}
	var digits strings.Builder
	for line := range strings.Lines(string(text)) {
		line, _, _ = strings.Cut(line, "#")
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatalf("%s.hex: %v", name, err)
	}
	return b
}

// sendHeaderFields is the SEND_MESSAGE_V2 header in the go_*_send and java_json_send
// fixtures (testdata/gen/main.go writes the same values).
var sendHeaderFields = map[string]string{
	"a": "please_rename_unique_group_name",
	"b": "TopicTest",
	"c": "TBW102",
	"d": "4",
	"e": "3",
	"f": "0",
	"g": "1700000000123",
	"h": "0",
	"i": "KEYS\x01order-42\x02TAGS\x01TagA\x02UNIQ_KEY\x017F0000010001\x02WAIT\x01true\x02",
	"j": "0",
	"k": "false",
	"m": "false",
}

var fixtures = []struct {
	name string
	want Command
	// exact: Encode(want) reproduces the fixture byte for byte. Other encoders write
	// extFields in map order (Go's random, Java's HashMap) and the Go client's JSON
	// has other keys, so only these are compared as bytes.
	exact bool
}{
	{
		name: "go_json_request",
		want: Command{Code: GetRouteInfoByTopic, Language: Go, Version: 317, Opaque: 7,
			ExtFields: map[string]string{"topic": "TopicTest"}, Serialize: JSON},
	},
	{
		name: "go_json_response",
		want: Command{Code: Success, Language: Go, Version: 317, Opaque: 7, Flag: 1, Remark: "ok",
			ExtFields: map[string]string{}, Body: []byte(`{"brokerDatas":[]}`), Serialize: JSON},
	},
	{
		name: "go_binary_request",
		want: Command{Code: GetRouteInfoByTopic, Language: Go, Version: 317, Opaque: 7,
			ExtFields: map[string]string{"topic": "TopicTest"}, Serialize: Binary},
		exact: true,
	},
	{
		name: "go_binary_response",
		want: Command{Code: TopicNotExist, Language: Go, Version: 317, Opaque: -2, Flag: 1,
			Remark:    "No topic route info in name server for the topic: TopicTest",
			ExtFields: map[string]string{}, Body: []byte{0, 1, 2, 0xff}, Serialize: Binary},
		exact: true,
	},
	{
		name: "go_json_send",
		want: Command{Code: SendMessageV2, Language: Go, Version: 317, Opaque: 42,
			ExtFields: sendHeaderFields, Body: bytes.Repeat([]byte("x"), 1024), Serialize: JSON},
	},
	{
		name: "go_binary_send",
		want: Command{Code: SendMessageV2, Language: Go, Version: 317, Opaque: 42,
			ExtFields: sendHeaderFields, Body: bytes.Repeat([]byte("x"), 1024), Serialize: Binary},
	},
	{
		name: "java_json_send",
		want: Command{Code: SendMessageV2, Language: Java, Version: 433, Opaque: 42,
			ExtFields: sendHeaderFields, Body: []byte("Hello RocketMQ 0"), Serialize: JSON},
		exact: true, // our JSON is fastjson's when HashMap order is sorted order
	},
	{
		name: "java_json_response",
		want: Command{Code: Success, Language: Java, Version: 433, Opaque: 42, Flag: 1,
			ExtFields: map[string]string{"msgId": "7F00000100002A9F0000000000000064", "queueId": "3", "queueOffset": "100"},
			Serialize: JSON},
	},
	{
		name: "java_binary_request",
		want: Command{Code: GetRouteInfoByTopic, Language: Java, Version: 433, Opaque: 5,
			ExtFields: map[string]string{"topic": "TopicTest"}, Serialize: Binary},
		exact: true,
	},
	{
		name: "java_binary_response",
		want: Command{Code: TopicNotExist, Language: Java, Version: 433, Opaque: 2147483646, Flag: 1,
			Remark: "no such tpk", ExtFields: map[string]string{"a": "1", "zones": "上海"},
			Body: []byte{0xab, 0xcd, 0xef}, Serialize: Binary},
		exact: true,
	},
}

func TestDecodeFixtures(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			raw := readFixture(t, fx.name)
			frame, err := ReadFrame(bufio.NewReader(bytes.NewReader(raw)), DefaultMaxFrameSize)
			if err != nil {
				t.Fatalf("ReadFrame: %v", err)
			}
			if len(frame) != len(raw)-4 {
				t.Fatalf("ReadFrame returned %d bytes of a %d-byte fixture", len(frame), len(raw))
			}
			got, err := Decode(frame)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(*got, fx.want) {
				t.Errorf("Decode:\n got  %+v\n want %+v", *got, fx.want)
			}
		})
	}
}

func TestEncodeFixtures(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			want := fx.want
			enc, err := Encode(&want)
			if err != nil {
				t.Fatal(err)
			}
			if fx.exact {
				if raw := readFixture(t, fx.name); !bytes.Equal(enc, raw) {
					t.Errorf("Encode:\n got  %x\n want %x", enc, raw)
				}
			}
			// Whatever the bytes, they decode to the same command.
			got, err := Decode(enc[4:])
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, fx.want) {
				t.Errorf("Decode(Encode):\n got  %+v\n want %+v", *got, fx.want)
			}
		})
	}
}

// TestEncodeJSONJavaShape pins the JSON Java parses: language as the enum name, the
// serializeTypeCurrentRPC Java 4.9 writes, remark left out when empty.
func TestEncodeJSONJavaShape(t *testing.T) {
	c := &Command{Code: SendMessageV2, Language: Java, Version: 433, Opaque: 42,
		ExtFields: map[string]string{"b": "TopicTest", "a": "g"}}
	frame, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"code":310,"extFields":{"a":"g","b":"TopicTest"},"flag":0,"language":"JAVA","opaque":42,"serializeTypeCurrentRPC":"JSON","version":433}`
	if got := string(frame[8:]); got != want {
		t.Errorf("header\n got  %s\n want %s", got, want)
	}
	if n := binary.BigEndian.Uint32(frame); int(n) != len(frame)-4 {
		t.Errorf("length field %d, frame has %d bytes after it", n, len(frame)-4)
	}
	if mark := binary.BigEndian.Uint32(frame[4:]); mark != uint32(len(want)) {
		t.Errorf("serialize mark %#x, want JSON<<24|%d", mark, len(want))
	}
}

func TestDecodeJSONLanguage(t *testing.T) {
	for _, tc := range []struct {
		language string
		want     LanguageCode
	}{
		{`"JAVA"`, Java},
		{`"GO"`, Go},
		{`"RUST"`, Rust},
		{`"COBOL"`, Other},
		{`9`, Go},      // an ordinal
		{`null`, Java}, // absent: Java's default
	} {
		header := `{"code":10,"language":` + tc.language + `,"opaque":1}`
		c, err := Decode(jsonFrame(header))
		if err != nil {
			t.Errorf("language %s: %v", tc.language, err)
			continue
		}
		if c.Language != tc.want {
			t.Errorf("language %s decoded as %v, want %v", tc.language, c.Language, tc.want)
		}
	}
}

// jsonFrame returns a frame, without its length field, around a JSON header.
// encoding/json decodes null into a struct without complaint; a header that is not a
// JSON object must not become a request with code 0.
func TestDecodeRefusesJSONHeaderNotAnObject(t *testing.T) {
	for _, header := range []string{"null", " null ", "[]", "34", `"x"`, "true", ""} {
		if c, err := Decode(jsonFrame(header)); !errors.Is(err, ErrBadHeader) {
			t.Errorf("header %q decoded as %v, %v; want ErrBadHeader", header, c, err)
		}
	}
}

func jsonFrame(header string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(header)))
	return append(b, header...)
}

// binaryFrame returns a frame, without its length field, around a binary header.
func binaryFrame(header []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 1<<24|uint32(len(header)))
	return append(b, header...)
}

func TestDecodeErrors(t *testing.T) {
	good := binaryFrame(readFixture(t, "java_binary_request")[8:])
	fixed := good[4 : 4+17] // code .. remark length, remark empty
	for _, tc := range []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty", nil, ErrFrameTooShort},
		{"three bytes", []byte{0, 0, 0}, ErrFrameTooShort},
		{"header longer than frame", []byte{0, 0, 0, 5, '{', '}'}, ErrHeaderTooLarge},
		{"unknown serialize type", []byte{2, 0, 0, 0}, ErrSerializeType},
		{"empty JSON header", jsonFrame(""), ErrBadHeader},
		{"garbage JSON", jsonFrame("{\"code\":10,"), ErrBadHeader},
		{"JSON array", jsonFrame("[1,2]"), ErrBadHeader},
		{"JSON code out of range", jsonFrame(`{"code":70000}`), ErrBadHeader},
		{"JSON language object", jsonFrame(`{"code":1,"language":{}}`), ErrBadHeader},
		{"JSON field not a string", jsonFrame(`{"code":1,"extFields":{"a":1}}`), ErrBadHeader},
		{"binary empty", binaryFrame(nil), ErrBadHeader},
		{"binary truncated fixed part", binaryFrame(fixed[:10]), ErrBadHeader},
		{"binary no extFields length", binaryFrame(fixed), ErrBadHeader},
		{"binary remark past end", binaryFrame(append(append([]byte{}, fixed[:13]...), 0, 0, 0, 9, 'a')), ErrBadHeader},
		{"binary negative remark length", binaryFrame(append(append([]byte{}, fixed[:13]...), 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0)), ErrBadHeader},
		{"binary extFields past end", binaryFrame(append(append([]byte{}, fixed...), 0, 0, 0, 50)), ErrBadHeader},
		{"binary key past extFields", binaryFrame(append(append([]byte{}, fixed...), 0, 0, 0, 3, 0, 9, 'k')), ErrBadHeader},
		{"binary value length missing", binaryFrame(append(append([]byte{}, fixed...), 0, 0, 0, 3, 0, 1, 'k')), ErrBadHeader},
		{"binary value past extFields", binaryFrame(append(append([]byte{}, fixed...), 0, 0, 0, 8, 0, 1, 'k', 0, 0, 0, 2, 'v')), ErrBadHeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Decode(tc.frame)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode = %v, %v; want error %v", c, err, tc.want)
			}
		})
	}
	if _, err := Decode(good); err != nil {
		t.Fatalf("the frame the bad ones are cut from does not decode: %v", err)
	}
}

func TestReadFrame(t *testing.T) {
	frame := func(n uint32, rest ...byte) []byte { return append(binary.BigEndian.AppendUint32(nil, n), rest...) }
	for _, tc := range []struct {
		name  string
		input []byte
		max   int
		want  error
	}{
		{"clean EOF", nil, 100, io.EOF},
		{"EOF inside the length", []byte{0, 0}, 100, io.ErrUnexpectedEOF},
		{"EOF inside the frame", frame(10, 0, 0, 0, 4), 100, io.ErrUnexpectedEOF},
		{"EOF before the frame", frame(10), 100, io.ErrUnexpectedEOF},
		{"over the maximum", frame(101), 100, ErrFrameTooLarge},
		{"over a default-sized maximum", frame(DefaultMaxFrameSize + 1), DefaultMaxFrameSize, ErrFrameTooLarge},
		{"length 0xffffffff", frame(0xffffffff), DefaultMaxFrameSize, ErrFrameTooLarge},
		{"shorter than the header length field", frame(3, 0, 0, 0), 100, ErrFrameTooShort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadFrame(bufio.NewReader(bytes.NewReader(tc.input)), tc.max)
			if !errors.Is(err, tc.want) {
				t.Fatalf("ReadFrame = %x, %v; want error %v", got, err, tc.want)
			}
		})
	}

	// Exactly the maximum is accepted, and frames follow one another.
	two := append(frame(8, 0, 0, 0, 0, 1, 2, 3, 4), frame(4, 0, 0, 0, 0)...)
	r := bufio.NewReader(bytes.NewReader(two))
	for i, want := range [][]byte{{0, 0, 0, 0, 1, 2, 3, 4}, {0, 0, 0, 0}} {
		got, err := ReadFrame(r, 8)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("frame %d: %x, %v; want %x", i, got, err, want)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  Command
		want error
	}{
		{"unknown serialize type", Command{Serialize: 7}, ErrSerializeType},
		{"binary key longer than a short", Command{Serialize: Binary,
			ExtFields: map[string]string{strings.Repeat("k", 1<<15): "v"}}, ErrFieldTooLong},
		{"binary header over 16 MiB", Command{Serialize: Binary, Remark: strings.Repeat("r", 1<<24)}, ErrHeaderTooLarge},
		{"JSON header over 16 MiB", Command{Serialize: JSON, Remark: strings.Repeat("r", 1<<24)}, ErrHeaderTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Encode(&tc.cmd); !errors.Is(err, tc.want) {
				t.Fatalf("Encode error %v, want %v", err, tc.want)
			}
		})
	}
	// The longest key Java can read still encodes.
	c := &Command{Serialize: Binary, ExtFields: map[string]string{strings.Repeat("k", 1<<15-1): "v"}}
	if _, err := Encode(c); err != nil {
		t.Fatalf("key of %d bytes: %v", 1<<15-1, err)
	}
}

func TestNewResponse(t *testing.T) {
	req := NewRequest(PullMessage, map[string]string{"topic": "t"}, nil)
	req.Serialize = Binary
	next := NewRequest(PullMessage, nil, nil)
	if next.Opaque == req.Opaque {
		t.Errorf("two requests share opaque %d", req.Opaque)
	}
	if next.ExtFields == nil || next.Language != Go || next.Version != Version {
		t.Errorf("NewRequest = %+v", next)
	}
	resp := req.NewResponse(PullNotFound, "no message")
	if !resp.IsResponse() || resp.IsOneway() || resp.Opaque != req.Opaque || resp.Serialize != Binary ||
		resp.Code != PullNotFound || resp.Remark != "no message" {
		t.Errorf("NewResponse = %+v", resp)
	}
	req.MarkOneway()
	if !req.IsOneway() || req.IsResponse() {
		t.Errorf("after MarkOneway flag = %d", req.Flag)
	}
}

// A response's fields are a list, not a map: SetField in any order, a name set twice
// keeping its last value, encodes to the bytes of the same fields as ExtFields, in both
// serializations, and reads back alike.
func TestResponseFieldList(t *testing.T) {
	for _, ser := range []SerializeType{JSON, Binary} {
		req := NewRequest(SendMessageV2, nil, nil)
		req.Serialize = ser
		listed := req.NewResponse(Success, "")
		listed.SetField("queueOffset", "9")
		listed.SetField("msgId", "first")
		listed.SetField("queueId", "3")
		listed.SetField("msgId", "C0A8")
		if listed.ExtFields != nil || listed.Field("msgId") != "C0A8" {
			t.Fatalf("%v: response fields %v, msgId %q: want a list, msgId C0A8", ser, listed.ExtFields, listed.Field("msgId"))
		}
		mapped := req.NewResponse(Success, "")
		mapped.ExtFields = map[string]string{"msgId": "C0A8", "queueId": "3", "queueOffset": "9"}
		got, err := Encode(listed)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Encode(mapped)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%v: listed fields encode to\n%q\nmapped ones to\n%q", ser, got, want)
		}
		back, err := Decode(got[4:])
		if err != nil || !maps.Equal(back.ExtFields, mapped.ExtFields) {
			t.Errorf("%v: decoded %v, %v; want %v", ser, back, err, mapped.ExtFields)
		}
		if fields := listed.Fields(); !maps.Equal(fields, mapped.ExtFields) {
			t.Errorf("%v: Fields() = %v, want %v", ser, fields, mapped.ExtFields)
		}
	}
}

// marshalJSONHeader is the reference for encodeJSONHeader: encoding/json's bytes.
func marshalJSONHeader(c *Command) ([]byte, error) {
	h := jsonHeader{
		Code:      c.Code,
		ExtFields: c.ExtFields,
		Flag:      c.Flag,
		Language:  json.RawMessage(strconv.Quote(c.Language.String())),
		Opaque:    c.Opaque,
		Serialize: "JSON",
		Version:   c.Version,
	}
	if c.Remark != "" {
		h.Remark = &c.Remark
	}
	return json.Marshal(&h)
}

// checkJSONHeaderMatchesMarshal fails unless encodeJSONHeader writes encoding/json's bytes.
func checkJSONHeaderMatchesMarshal(t *testing.T, c *Command) {
	t.Helper()
	got, err := encodeJSONHeader(c)
	if err != nil {
		t.Fatal(err)
	}
	want, err := marshalJSONHeader(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("JSON header of %+v\n got  %s\n want %s", c, got, want)
	}
}

func TestEncodeJSONHeaderMatchesMarshal(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quote" back\slash`, "\x00\x01\x1f\x7f", "\b\f\n\r\t", "<html>&amp;",
		"上海 😀", "bad \xff utf-8 \xe4\xb8", "\u2028 \u2029", "KEYS\x01k\x02",
	} {
		checkJSONHeaderMatchesMarshal(t, &Command{Code: -1, Language: Rust, Version: -433, Opaque: -2147483648, Flag: 3,
			Remark: s, ExtFields: map[string]string{s: s, "z": "1", "a": s}})
	}
	checkJSONHeaderMatchesMarshal(t, &Command{})
	checkJSONHeaderMatchesMarshal(t, sendCommand(JSON))
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		checkJSONHeaderMatchesMarshal(t, &Command{Remark: string(b), ExtFields: map[string]string{string(b): string(b[len(b)/2:])}})
	}
}

func TestJSONFastPath(t *testing.T) {
	// Every JSON header we have seen from a client takes the fast path.
	for _, fx := range fixtures {
		if fx.want.Serialize != JSON {
			continue
		}
		raw := readFixture(t, fx.name)
		header := raw[8 : 8+binary.BigEndian.Uint32(raw[4:])&maxHeaderLength]
		if !checkJSONFastPath(t, header) {
			t.Errorf("%s: fast path refused it", fx.name)
		}
	}
	for _, tc := range []struct {
		header string
		fast   bool // whether the fast path takes it; either way the result is encoding/json's
	}{
		{`{}`, true},
		{` { "code" : -0 , "flag":2147483647,"opaque":-2147483648 } `, true},
		{`{"code":1,"language":null,"remark":null,"extFields":null,"serializeTypeCurrentRPC":null}`, true},
		{`{"language":12}`, true},
		{`{"language":255}`, true},
		{`{"remark":"\"\\\/\b\f\n\r\t\u0041\u00e9\u4e0a\uFFFF"}`, true},
		{`{"extFields":{"a":"1","a":"2"}}`, true}, // last wins, as in encoding/json
		{`{"remark":"上海"}`, true},
		{`{"language":256}`, false},
		{`{"language":-0}`, false},
		{`{"code":32768}`, false},
		{`{"code":1.0}`, false},
		{`{"code":1e2}`, false},
		{`{"code":01}`, false},
		{`{"code":null}`, false},
		{`{"code":1,"code":2}`, false},
		{`{"Code":1}`, false}, // encoding/json matches keys case-insensitively
		{`{"unknown":[1,{"x":null}]}`, false},
		{`{"remark":"\ud83d\ude00"}`, false},
		{`{"remark":"\ud83d"}`, false},
		{"{\"remark\":\"\xff\"}", false},
		{"{\"remark\":\"a\tb\"}", false},
		{`{"extFields":{"a":1}}`, false},
		{`{"extFields":{"a":null}}`, false},
		{`{"code":1}x`, false},
		{`{"code":1,}`, false},
		{`{"remark":"\x"}`, false},
		{`{"remark":"\u12"}`, false},
		{`{"code":1`, false},
		{`nul`, false},
	} {
		if got := checkJSONFastPath(t, []byte(tc.header)); got != tc.fast {
			t.Errorf("%s: fast path took it: %v, want %v", tc.header, got, tc.fast)
		}
	}
}

// A peer that announces a large frame and sends only its start costs memory for what it
// sent, not for what it announced.
func TestReadFrameAllocatesWhatArrives(t *testing.T) {
	announced := DefaultMaxFrameSize
	data := make([]byte, 4+1000)
	binary.BigEndian.PutUint32(data, uint32(announced))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ReadFrame(bufio.NewReaderSize(bytes.NewReader(data), 4096), DefaultMaxFrameSize)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated frame: err %v, want io.ErrUnexpectedEOF", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("reading 1000 bytes of an announced %d-byte frame allocated %d bytes", announced, got)
	}

	// A whole large frame still arrives intact across chunks.
	body := bytes.Repeat([]byte("0123456789abcdef"), (3*frameReadChunk+77)/16)
	frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	got, err := ReadFrame(bufio.NewReader(bytes.NewReader(frame)), DefaultMaxFrameSize)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("large frame: %d bytes, err %v; want %d bytes back", len(got), err, len(body))
	}
}

// TestDecodeMapHintIsBounded: the extFields map is made at a size taken from the
// peer's bytes, never beyond maxFieldsHint: a header of a million colons or of a million
// empty entries buys no map of a million slots. Headers with more fields than the hint
// still decode whole.
func TestDecodeMapHintIsBounded(t *testing.T) {
	const big = 1 << 20
	if n := jsonFieldCount([]byte(`"k":"` + strings.Repeat(":", big) + `"}}`)); n != maxFieldsHint {
		t.Errorf("JSON hint for %d colons: %d, want %d", big, n, maxFieldsHint)
	}
	if n := jsonFieldCount([]byte(`"a":"1","b":"2"},"flag":0}`)); n != 2 {
		t.Errorf("JSON hint for two fields: %d", n)
	}
	if n := binaryFieldCount(make([]byte, big/6*6)); n != maxFieldsHint { // entries of key "" and value ""
		t.Errorf("binary hint for %d empty entries: %d, want %d", big/6, n, maxFieldsHint)
	}
	two := []byte{0, 1, 'a', 0, 0, 0, 1, '1', 0, 1, 'b', 0, 0, 0, 0}
	if n := binaryFieldCount(two); n != 2 {
		t.Errorf("binary hint for two fields: %d", n)
	}
	if n := binaryFieldCount(append(two, 0, 9, 'x')); n != 2 { // a cut entry is not counted
		t.Errorf("binary hint for two fields and a cut one: %d", n)
	}

	fields := map[string]string{}
	for i := range 3 * maxFieldsHint {
		fields[fmt.Sprintf("f%d", i)] = strconv.Itoa(i)
	}
	for _, ser := range []SerializeType{JSON, Binary} {
		frame, err := Encode(&Command{Code: 10, ExtFields: fields, Serialize: ser})
		if err != nil {
			t.Fatal(err)
		}
		c, err := Decode(frame[4:])
		if err != nil || !maps.Equal(c.ExtFields, fields) {
			t.Errorf("%s: %d fields decoded of %d, %v", ser, len(c.ExtFields), len(fields), err)
		}
	}
}
