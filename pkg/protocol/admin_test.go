package protocol

import (
	"reflect"
	"strings"
	"testing"
)

func TestConsumeStatsRoundTrip(t *testing.T) {
	in := ConsumeStats{
		OffsetTable: map[MessageQueue]OffsetWrapper{
			{Topic: "T", BrokerName: "broker-a", QueueID: 1}: {BrokerOffset: 10, ConsumerOffset: 7, LastTimestamp: 1700000000000},
			{Topic: "T", BrokerName: "broker-a", QueueID: 0}: {BrokerOffset: 3, ConsumerOffset: 3},
		},
	}
	b, err := in.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"brokerOffset":3,"consumerOffset":3,"lastTimestamp":0},{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"brokerOffset":10,"consumerOffset":7,"lastTimestamp":1700000000000}}}`
	if string(b) != want {
		t.Errorf("encoded\n%s\nwant\n%s", b, want)
	}
	out, err := DecodeConsumeStats(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("decoded %+v, want %+v", out, in)
	}
}

// A Java broker's body, as fastjson formats it (field order and spacing its own).
func TestDecodeJavaConsumeStats(t *testing.T) {
	java := `{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":2,"topic":"t"}:{"brokerOffset":5,"consumerOffset":4,"lastTimestamp":9},{"brokerName":"b","queueId":0,"topic":"t"}:{"brokerOffset":1,"consumerOffset":0,"lastTimestamp":0}}}`
	s, err := DecodeConsumeStats([]byte(java))
	if err != nil {
		t.Fatal(err)
	}
	if s.ConsumeTps != 1.5 || len(s.OffsetTable) != 2 {
		t.Fatalf("got %+v", s)
	}
	if w := s.OffsetTable[MessageQueue{Topic: "t", BrokerName: "b", QueueID: 2}]; w != (OffsetWrapper{5, 4, 9}) {
		t.Errorf("queue 2 = %+v", w)
	}
}

func TestResetOffsetBodyRoundTrip(t *testing.T) {
	in := ResetOffsetBody{OffsetTable: map[MessageQueue]int64{
		{Topic: "T", BrokerName: "a", QueueID: 0}: 42,
		{Topic: "T", BrokerName: "a", QueueID: 3}: 0,
	}}
	b, err := in.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// The Go client splits this text on ",{" and "}:" by hand: keep it compact.
	if strings.Contains(string(b), " ") || !strings.HasPrefix(string(b), `{"offsetTable":{{`) {
		t.Errorf("not in the compact fastjson form: %s", b)
	}
	out, err := DecodeResetOffsetBody(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("decoded %+v, want %+v", out, in)
	}
	empty, err := DecodeResetOffsetBody([]byte(`{"offsetTable":{}}`))
	if err != nil || len(empty.OffsetTable) != 0 || empty.OffsetTable == nil {
		t.Errorf("empty table: %+v, %v", empty, err)
	}
}

func TestDecodeMQTableRejectsMalformed(t *testing.T) {
	for _, in := range []string{
		``, `[]`, `{`, `{{"topic":"t"}`, `{{"topic":"t"}:}`, `{{"topic":"t"}:1`, `{{"topic":"t"}:1,}`,
		`{{"topic":"t"}:1}x`, `{"notAnObject":1}`, `{{"topic":"t"} 1}`, `{{"topic":"t":1}`,
	} {
		if _, err := DecodeMQTable[int64]([]byte(in)); err == nil {
			t.Errorf("%q: decoded without error", in)
		}
	}
}

func TestSubscriptionGroupConfigDefaults(t *testing.T) {
	var g SubscriptionGroupConfig
	if err := Decode([]byte(`{"groupName":"g","retryMaxTimes":3}`), &g); err != nil {
		t.Fatal(err)
	}
	want := NewSubscriptionGroupConfig("g")
	want.RetryMaxTimes = 3
	if g != want {
		t.Errorf("got %+v, want %+v", g, want)
	}
}
