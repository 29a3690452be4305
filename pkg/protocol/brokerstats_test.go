package protocol

import (
	"reflect"
	"testing"
)

func TestBrokerStatsDataEncoding(t *testing.T) {
	d := BrokerStatsData{
		StatsMinute: BrokerStatsItem{Sum: 3, Tps: 0.05, Avgpt: 1},
		StatsHour:   BrokerStatsItem{Sum: 3, Tps: 0.005, Avgpt: 1.5},
	}
	want := `{"statsDay":{"avgpt":0.0,"sum":0,"tps":0.0},"statsHour":{"avgpt":1.5,"sum":3,"tps":0.005},"statsMinute":{"avgpt":1.0,"sum":3,"tps":0.05}}`
	if got := string(d.Encode()); got != want {
		t.Errorf("encoded\n%s\nwant\n%s", got, want)
	}
	back, err := DecodeBrokerStatsData(d.Encode())
	if err != nil || back != d {
		t.Errorf("decoded %+v (%v), want %+v", back, err, d)
	}
	// As a Java broker writes it (fastjson, Double.toString).
	java, err := DecodeBrokerStatsData([]byte(`{"statsDay":{"avgpt":2.0,"sum":10,"tps":1.1574074074074075E-4},"statsHour":{"avgpt":0.0,"sum":0,"tps":0.0},"statsMinute":{"avgpt":0.0,"sum":0,"tps":0.0}}`))
	if err != nil || java.StatsDay.Sum != 10 || java.StatsDay.Avgpt != 2 || java.StatsDay.Tps <= 0 {
		t.Errorf("Java body decoded to %+v (%v)", java, err)
	}
}

func TestConsumeStatsListRoundTrip(t *testing.T) {
	mq := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}
	in := ConsumeStatsList{
		BrokerAddr: "127.0.0.1:10911",
		TotalDiff:  4,
		ConsumeStatsList: []map[string][]ConsumeStats{
			{"g1": {{OffsetTable: map[MessageQueue]OffsetWrapper{mq: {BrokerOffset: 5, ConsumerOffset: 1, LastTimestamp: 7}}, ConsumeTps: 0.5}}},
			{"TOOLS_CONSUMER": {}},
		},
	}
	b, err := in.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"brokerAddr":"127.0.0.1:10911","consumeStatsList":[{"g1":[{"consumeTps":0.5,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":5,"consumerOffset":1,"lastTimestamp":7}}}]},{"TOOLS_CONSUMER":[]}],"totalDiff":4}`
	if string(b) != want {
		t.Errorf("encoded\n%s\nwant\n%s", b, want)
	}
	out, err := DecodeConsumeStatsList(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("decoded %+v, want %+v", out, in)
	}
	if d := out.ConsumeStatsList[0]["g1"][0].TotalDiff(); d != 4 {
		t.Errorf("TotalDiff %d, want 4", d)
	}
	empty, err := DecodeConsumeStatsList([]byte(`{"brokerAddr":"a","consumeStatsList":[],"totalDiff":0}`))
	if err != nil || empty.BrokerAddr != "a" || len(empty.ConsumeStatsList) != 0 {
		t.Errorf("empty list decoded to %+v (%v)", empty, err)
	}
	for _, bad := range []string{`{"consumeStatsList":{}}`, `{"consumeStatsList":[{"g":[1,}]}`, `{"consumeStatsList":[{"g":[{"offsetTable":[]}]}]}`} {
		if _, err := DecodeConsumeStatsList([]byte(bad)); err == nil {
			t.Errorf("%s decoded without an error", bad)
		}
	}
}
