package protocol

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
	"reflect"
	"runtime"
	"testing"
)

// allocated returns the bytes fn allocates on the heap.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// compressedBody builds a compressed REGISTER_BROKER body from raw parts,
// so seeds can hold what Encode never writes.
func compressedBody(parts ...[]byte) []byte {
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	for _, p := range parts {
		zw.Write(p)
	}
	zw.Close()
	return buf.Bytes()
}

func be32(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

// FuzzDecodeRegisterBrokerBody decodes REGISTER_BROKER bodies from the
// network, in both forms. Decoding must fail cleanly; memory must follow the
// bytes that arrive, not the lengths a body announces (a compressed body
// inflates at most about 1000 times); and what decodes must encode in the
// same form and decode to the same body (after one round, for the
// compressed form, which does not carry topicSysFlag and order).
func FuzzDecodeRegisterBrokerBody(f *testing.F) {
	tc := NewTopicConfig("T")
	tc.Order, tc.TopicSysFlag = true, 1
	b := RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
		TopicConfigTable: map[string]*TopicConfig{"T": tc, "%RETRY%g": NewTopicConfig("%RETRY%g")},
		DataVersion:      DataVersion{Counter: 3, Timestamp: 1700000000000}},
		FilterServerList: []string{"10.0.0.1:45678"}}
	for _, c := range []bool{true, false} {
		data, _ := b.Encode(c)
		f.Add(data, c)
	}
	f.Add([]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":null},"dataVersion":{counter:1}}}`), false)
	f.Add(compressedBody(be32(2), []byte("{}"), be32(1), be32(15), []byte("T 8 8 6 MULTI_TAG"), be32(2), []byte("[]")), true)
	f.Fuzz(func(t *testing.T, data []byte, compressed bool) {
		var body *RegisterBrokerBody
		var err error
		if n := allocated(func() { body, err = DecodeRegisterBrokerBody(data, compressed) }); n > 1<<20+8192*uint64(len(data)) {
			t.Fatalf("decoding %d bytes allocated %d", len(data), n)
		}
		if err != nil {
			return
		}
		enc, err := body.Encode(compressed)
		if err != nil {
			t.Fatalf("Encode of decoded %+v: %v", body, err)
		}
		again, err := DecodeRegisterBrokerBody(enc, compressed)
		if err != nil {
			t.Fatalf("re-encoded body does not decode: %v", err)
		}
		if compressed {
			if len(again.TopicConfigSerializeWrapper.TopicConfigTable) != len(body.TopicConfigSerializeWrapper.TopicConfigTable) {
				t.Fatalf("re-encoding changed the topic count")
			}
			body = again
			enc, _ = body.Encode(true)
			if again, err = DecodeRegisterBrokerBody(enc, true); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(again, body) {
			t.Fatalf("re-encoding changed the body:\n first  %+v\n second %+v", body, again)
		}
	})
}

// Standard JSON has no bare keys: QuoteBareKeys must not change what it means.
func FuzzQuoteBareKeys(f *testing.F) {
	for _, s := range []string{`{"a":{"0":"x"}}`, `[1,{"k":"{0:1}"}]`, `{0:"a"}`, `"s"`, `{"a":[{},{"b":null}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want any
		if json.Unmarshal(data, &want) != nil {
			QuoteBareKeys(data) // must not panic
			return
		}
		var got any
		if err := json.Unmarshal(QuoteBareKeys(data), &got); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("QuoteBareKeys(%q) = %q (%v)", data, QuoteBareKeys(data), err)
		}
	})
}

// FuzzDecodeMQTable feeds the hand-written parser of fastjson's object-keyed
// tables (GET_CONSUME_STATS, reset-offset bodies) arbitrary bytes. Errors
// must be errMQTable or JSON errors; a decoded table must encode and decode
// back to itself.
func FuzzDecodeMQTable(f *testing.F) {
	mq := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}
	for _, v := range []map[MessageQueue]int64{{mq: 5, {Topic: "U"}: -1}, {}} {
		enc, _ := EncodeMQTable(v)
		f.Add(enc)
	}
	stats, _ := ConsumeStats{OffsetTable: map[MessageQueue]OffsetWrapper{mq: {BrokerOffset: 9, ConsumerOffset: 3}}, ConsumeTps: 1.5}.Encode()
	f.Add(stats)
	f.Add([]byte(`{{"brokerName":"b","queueId":0,"topic":"t"}:{"a":{0:1}}, "x" : [1,{"}":"]"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := DecodeConsumeStats(data); err != nil && !isDecodeError(err) {
			t.Fatalf("DecodeConsumeStats error %T %v", err, err)
		}
		table, err := DecodeMQTable[int64](data)
		if err != nil {
			if !isDecodeError(err) {
				t.Fatalf("DecodeMQTable error %T %v", err, err)
			}
			return
		}
		enc, err := EncodeMQTable(table)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeMQTable[int64](enc)
		if err != nil || !reflect.DeepEqual(again, table) {
			t.Fatalf("%s decodes to %v, which encodes to %s and decodes to %v (%v)", data, table, enc, again, err)
		}
	})
}

func isDecodeError(err error) bool {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.Is(err, errMQTable) || errors.As(err, &syntax) || errors.As(err, &typ)
}
