package remoting

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

type pullHeader struct {
	ConsumerGroup string `rmq:"consumerGroup,required"`
	QueueID       int32  `rmq:"queueId,required"`
	QueueOffset   int64  `rmq:"queueOffset"`
	Suspend       bool   `rmq:"suspend"`
	SubVersion    *int64 `rmq:"subVersion"`
	ExpressionTag *string
}

func TestHeaderRoundTrip(t *testing.T) {
	sub := int64(1700000000000)
	in := pullHeader{ConsumerGroup: "g", QueueID: -1, QueueOffset: 1 << 40, Suspend: true, SubVersion: &sub}
	fields := EncodeHeader(&in)
	want := map[string]string{"consumerGroup": "g", "queueId": "-1", "queueOffset": "1099511627776", "suspend": "true", "subVersion": "1700000000000"}
	if !reflect.DeepEqual(fields, want) {
		t.Fatalf("EncodeHeader = %v, want %v", fields, want)
	}
	if got := EncodeHeader(pullHeader{ConsumerGroup: "g"}); got["subVersion"] != "" || len(got) != 4 {
		t.Errorf("nil pointer encoded: %v", got)
	}
	var out pullHeader
	if err := DecodeHeader(&Command{ExtFields: fields}, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("DecodeHeader = %+v, want %+v", out, in)
	}
}

func TestDecodeHeaderValues(t *testing.T) {
	for _, tc := range []struct {
		fields map[string]string
		check  func(pullHeader) bool
	}{
		{map[string]string{"consumerGroup": "g", "queueId": " 7 "}, func(h pullHeader) bool { return h.QueueID == 7 }},
		{map[string]string{"consumerGroup": "g", "queueId": "0", "suspend": "TRUE"}, func(h pullHeader) bool { return h.Suspend }},
		{map[string]string{"consumerGroup": "g", "queueId": "0", "suspend": "yes"}, func(h pullHeader) bool { return !h.Suspend }},
		{map[string]string{"consumerGroup": "", "queueId": "0"}, func(h pullHeader) bool { return h.SubVersion == nil }},
	} {
		var h pullHeader
		if err := DecodeHeader(&Command{ExtFields: tc.fields}, &h); err != nil || !tc.check(h) {
			t.Errorf("%v decoded as %+v, %v", tc.fields, h, err)
		}
	}
}

func TestDecodeHeaderErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields map[string]string
		field  string
	}{
		{"missing required string", map[string]string{"queueId": "1"}, "<consumerGroup> is null"},
		{"missing required int", map[string]string{"consumerGroup": "g"}, "<queueId> is null"},
		{"not a number", map[string]string{"consumerGroup": "g", "queueId": "one"}, "<queueId> is invalid"},
		{"out of range for int32", map[string]string{"consumerGroup": "g", "queueId": "2147483648"}, "<queueId> is invalid"},
		{"bad optional pointer", map[string]string{"consumerGroup": "g", "queueId": "1", "subVersion": "x"}, "<subVersion> is invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h pullHeader
			err := DecodeHeader(&Command{ExtFields: tc.fields}, &h)
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("DecodeHeader error %v, want one containing %q", err, tc.field)
			}
		})
	}
}

// TestRenamedHeader: fields sent under their renamed names (SEND_MESSAGE_V2's letters)
// are read from there, others under their own names; errors name the field; the
// renaming does not leak into DecodeHeader of the same type.
func TestRenamedHeader(t *testing.T) {
	dec := NewRenamedHeader(pullHeader{}, map[string]string{"consumerGroup": "a", "queueId": "b", "subVersion": "c"})
	var h pullHeader
	if err := dec.Decode(&Command{ExtFields: map[string]string{"a": "g", "b": "3", "queueOffset": "9", "": "x"}}, &h); err != nil {
		t.Fatal(err)
	}
	if want := (pullHeader{ConsumerGroup: "g", QueueID: 3, QueueOffset: 9}); !reflect.DeepEqual(h, want) {
		t.Fatalf("Decode = %+v, want %+v", h, want)
	}
	// A renamed field sent under its own name is still found; the renamed one wins.
	h = pullHeader{}
	if err := dec.Decode(&Command{ExtFields: map[string]string{"consumerGroup": "g", "b": "1", "queueId": "2"}}, &h); err != nil || h.ConsumerGroup != "g" || h.QueueID != 1 {
		t.Fatalf("Decode = %+v, %v", h, err)
	}
	// Unmapped, as a server leaves sends, alike in any order; of a name sent twice the
	// last counts.
	for _, fs := range [][]field{
		{{"consumerGroup", "g"}, {"b", "1"}, {"queueId", "2"}},
		{{"b", "0"}, {"queueId", "2"}, {"consumerGroup", "g"}, {"b", "1"}},
	} {
		h = pullHeader{}
		if err := dec.Decode(&Command{fieldList: fs}, &h); err != nil || h.ConsumerGroup != "g" || h.QueueID != 1 {
			t.Fatalf("Decode of unmapped %v = %+v, %v", fs, h, err)
		}
	}
	err := dec.Decode(&Command{ExtFields: map[string]string{"a": "g", "b": "one"}}, &h)
	if err == nil || !strings.Contains(err.Error(), "<queueId> is invalid") {
		t.Fatalf("Decode error %v, want one naming <queueId>", err)
	}
	if err := DecodeHeader(&Command{ExtFields: map[string]string{"a": "g", "b": "3"}}, &h); err == nil || !strings.Contains(err.Error(), "<consumerGroup> is null") {
		t.Fatalf("DecodeHeader of letters: %v, want <consumerGroup> is null", err)
	}
	type other struct {
		Topic string `rmq:"topic"`
	}
	if err := dec.Decode(&Command{}, &other{}); err == nil {
		t.Fatal("Decode into another type: no error")
	}
}

func TestDecodeHeaderBadDestination(t *testing.T) {
	type unexported struct {
		topic string `rmq:"topic"`
	}
	type unsupported struct {
		Ratio float64 `rmq:"ratio"`
	}
	c := &Command{ExtFields: map[string]string{"topic": "t", "ratio": "0.5"}}
	for _, tc := range []struct {
		name string
		dst  any
		want string
	}{
		{"struct value", pullHeader{}, "pointer to a struct"},
		{"nil pointer", (*pullHeader)(nil), "pointer to a struct"},
		{"pointer to int", new(int), "pointer to a struct"},
		{"unexported field", &unexported{topic: ""}, "topic"},
		{"unsupported kind", &unsupported{}, "<ratio>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 { // the second time from the cached fields of the type
				err := DecodeHeader(c, tc.dst)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("DecodeHeader error %v, want one containing %q", err, tc.want)
				}
			}
		})
	}
}

func TestEncodeHeaderPanicNamesTheField(t *testing.T) {
	type unsupported struct {
		Topic string  `rmq:"topic"`
		Ratio float64 `rmq:"ratio"`
	}
	for _, tc := range []struct {
		name string
		src  any
		want string
	}{
		{"unsupported kind", unsupported{}, "Ratio (ratio)"},
		{"not a struct", 42, "not int"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				p := recover()
				if msg, _ := p.(string); !strings.Contains(msg, tc.want) {
					t.Fatalf("panic %v, want one containing %q", p, tc.want)
				}
			}()
			EncodeHeader(tc.src)
		})
	}
}

// parseInt's fast path agrees with strconv.ParseInt of the trimmed text on every input,
// at every width: bounds, signs, white space, leading zeros and plus signs included.
func TestParseIntAgreesWithStrconv(t *testing.T) {
	inputs := []string{"0", "-0", "7", "-7", "127", "128", "-128", "-129", "32767", "32768", "-32769",
		"2147483647", "2147483648", "-2147483648", "-2147483649", "1700000000123",
		"999999999999999999", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"0012", "+5", " 42 ", "\t-3", "", "-", "1e3", "12a", "٣", "1_000"}
	for _, in := range inputs {
		for _, bits := range []int{8, 16, 32, 64} {
			want, wantErr := strconv.ParseInt(strings.TrimSpace(in), 10, bits)
			got, err := parseInt(in, bits)
			gotBytes, errBytes := parseInt([]byte(in), bits)
			if got != want || (err == nil) != (wantErr == nil) || gotBytes != got || (errBytes == nil) != (err == nil) {
				t.Errorf("parseInt(%q, %d) = %d, %v (bytes: %d, %v); strconv: %d, %v", in, bits, got, err, gotBytes, errBytes, want, wantErr)
			}
		}
	}
}

// plainRun stops where a byte-by-byte scan for a quote, a backslash, a control or a
// non-ASCII byte does, give or take the last eight bytes it leaves to its callers.
func TestPlainRunAgreesWithByteScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("azAZ09 ~!#\"\\\x00\x1f\x7f\x80\xff{}:,")
	for range 20000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			if rng.IntN(6) == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				b[i] = byte('a' + rng.IntN(26))
			}
		}
		from := rng.IntN(len(b) + 1)
		want := from
		for want < len(b) && b[want] >= 0x20 && b[want] < 0x80 && b[want] != '"' && b[want] != '\\' {
			want++
		}
		got := plainRun(b, from)
		if got > want || want-got >= 8 && got+8 <= len(b) {
			t.Fatalf("plainRun(%q, %d) = %d, the plain run ends at %d", b, from, got, want)
		}
	}
}
