package remoting

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

// fuzzMaxFrame keeps the fuzzer's frames small; the limit logic is the same at 16 MiB.
const fuzzMaxFrame = 64 << 10

// FuzzDecodeFrame feeds arbitrary bytes to the frame reader and both header decoders.
// Nothing may panic, every error must be one a connection can be closed for, and a
// decoded command must survive Encode and Decode unchanged.
func FuzzDecodeFrame(f *testing.F) {
	for _, fx := range fixtures {
		f.Add(readFixture(f, fx.name))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// As a stream of frames, the way a connection reads them.
		r := bufio.NewReader(bytes.NewReader(data))
		for {
			frame, err := ReadFrame(r, fuzzMaxFrame)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !isProtocolError(err) {
					t.Fatalf("ReadFrame error %v is neither EOF nor a protocol error", err)
				}
				break
			}
			if len(frame) < headerLenFieldSize || len(frame) > fuzzMaxFrame {
				t.Fatalf("ReadFrame returned %d bytes, limit %d", len(frame), fuzzMaxFrame)
			}
			checkDecode(t, frame)
		}
		// As one frame without its length field, so the header decoders see every input.
		checkDecode(t, data)
	})
}

func checkDecode(t *testing.T, frame []byte) {
	if len(frame) >= headerLenFieldSize && frame[0] == byte(JSON) {
		checkJSONFastPath(t, frame[headerLenFieldSize:])
	}
	c, err := Decode(frame)
	if err != nil {
		if !isProtocolError(err) {
			t.Fatalf("Decode error %v is not a protocol error", err)
		}
		return
	}
	checkJSONHeaderMatchesMarshal(t, c)
	enc, err := Encode(c)
	if err != nil {
		t.Fatalf("Encode of decoded %v: %v", c, err)
	}
	again, err := Decode(enc[lengthFieldSize:])
	if err != nil {
		t.Fatalf("Decode of re-encoded %v: %v", c, err)
	}
	if !reflect.DeepEqual(c, again) {
		t.Fatalf("re-encoding changed the command:\n first  %+v\n second %+v", c, again)
	}
	// A second round trip is byte-stable: the encoders are deterministic.
	enc2, err := Encode(again)
	if err != nil || !bytes.Equal(enc, enc2) {
		t.Fatalf("second encoding differs: %v\n%x\n%x", err, enc, enc2)
	}
}

// checkJSONFastPath fails unless the fast JSON decoder, where it takes an input, agrees
// with encoding/json. It reports whether the fast path took it.
func checkJSONFastPath(t *testing.T, header []byte) bool {
	t.Helper()
	fast, ok := decodeJSONHeaderFast(header, nil)
	if !ok {
		return false
	}
	std, err := decodeJSONHeaderStd(header)
	if err != nil {
		t.Fatalf("fast path took %q, which encoding/json refuses: %v", header, err)
	}
	if !reflect.DeepEqual(fast, std) {
		t.Fatalf("decoding %q\n fast          %+v\n encoding/json %+v", header, fast, std)
	}
	// Left unmapped, the same fields read the same, one by one and as a map.
	unmapped, ok := decodeJSONHeaderFast(header, []int16{std.Code})
	if !ok {
		t.Fatalf("fast path took %q, but not with its extFields unmapped", header)
	}
	for k, v := range std.ExtFields {
		if got, ok := unmapped.LookupField(k); !ok || got != v {
			t.Fatalf("decoding %q unmapped: field %q is %q, %v; encoding/json: %q", header, k, got, ok, v)
		}
	}
	if unmapped.Fields(); !reflect.DeepEqual(unmapped, std) {
		t.Fatalf("decoding %q unmapped\n fast          %+v\n encoding/json %+v", header, unmapped, std)
	}
	return true
}
