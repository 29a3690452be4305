package protocol

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Bodies come from the network: decoding must fail cleanly, never panic.
func FuzzDecodeRegisterBrokerBody(f *testing.F) {
	b := RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
		TopicConfigTable: map[string]*TopicConfig{"T": NewTopicConfig("T")}}}
	for _, c := range []bool{true, false} {
		data, _ := b.Encode(c)
		f.Add(data, c)
	}
	f.Fuzz(func(t *testing.T, data []byte, compressed bool) {
		DecodeRegisterBrokerBody(data, compressed)
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
