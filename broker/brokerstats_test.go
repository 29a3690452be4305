package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

func (tb *testBroker) commitOffset(group, topic string, qid int, offset int64) {
	tb.t.Helper()
	resp := tb.invoke(remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(qid), "commitOffset": strconv.FormatInt(offset, 10)}, nil)
	if resp.Code != remoting.Success {
		tb.t.Fatalf("commit offset: %v", resp)
	}
}

func (tb *testBroker) brokerStats(name, key string) (protocol.BrokerStatsData, *remoting.Command) {
	tb.t.Helper()
	resp := tb.invoke(remoting.ViewBrokerStatsData, map[string]string{"statsName": name, "statsKey": key}, nil)
	if resp.Code != remoting.Success {
		return protocol.BrokerStatsData{}, resp
	}
	d, err := protocol.DecodeBrokerStatsData(resp.Body)
	if err != nil {
		tb.t.Fatalf("%s %s: %v in %s", name, key, err, resp.Body)
	}
	return d, resp
}

// Sends and a group's consumption show in VIEW_BROKER_STATS_DATA, GET_CONSUME_STATS'
// consumeTps and GET_BROKER_CONSUME_STATS.
func TestBrokerStatsAfterSendsAndPulls(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("ST", 2)
	tb.createTopic("OTHER", 1)
	newFakeConsumer(t, tb, "c1", "sg", "ST", remoting.Version, func(*remoting.Conn, *remoting.Command) *remoting.Command { return nil })
	tb.commitOffset("sg", "ST", 0, 0)
	tb.commitOffset("sg", "OTHER", 0, 0) // not subscribed by the online group

	const n = 3
	for i := range n {
		if resp := tb.sendV2("ST", 0, "", "m"+strconv.Itoa(i)); resp.Code != remoting.Success {
			t.Fatalf("send: %v", resp)
		}
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("ST", 0) == n })
	pull := tb.invoke(remoting.PullMessage, pullFields("sg", "ST", 0, 0, pullSubscription, "*"), nil)
	if msgs := decodeAll(t, pull.Body); pull.Code != remoting.Success || len(msgs) != n {
		t.Fatalf("pull: %v with %d messages", pull, len(msgs))
	}
	tb.commitOffset("sg", "ST", 0, n)
	tb.stats.sample()

	put, resp := tb.brokerStats(statsTopicPutNums, "ST")
	// Not in the hour and day yet: those are sampled every 10 min and every hour.
	if resp.Code != remoting.Success || put.StatsMinute.Sum != n || put.StatsMinute.Tps <= 0 || put.StatsMinute.Avgpt != 1 {
		t.Errorf("TOPIC_PUT_NUMS ST: %v %+v", resp, put)
	}
	got, resp := tb.brokerStats(statsGroupGetNums, "ST@sg")
	if resp.Code != remoting.Success || got.StatsMinute.Sum != n || got.StatsMinute.Tps <= 0 || got.StatsMinute.Avgpt != n {
		t.Errorf("GROUP_GET_NUMS ST@sg: %v %+v", resp, got)
	}
	size, resp := tb.brokerStats(statsGroupGetSize, "ST@sg")
	if resp.Code != remoting.Success || size.StatsMinute.Sum <= int64(n*len("m0")) {
		t.Errorf("GROUP_GET_SIZE ST@sg: %v %+v", resp, size)
	}
	if _, resp := tb.brokerStats(statsTopicPutNums, "NOPE"); resp.Code != remoting.SystemError ||
		resp.Remark != "The stats <TOPIC_PUT_NUMS> <NOPE> not exist" {
		t.Errorf("unknown key: %v", resp)
	}
	if _, resp := tb.brokerStats("NO_SUCH_STATS", "ST"); resp.Code != remoting.SystemError {
		t.Errorf("unknown name: %v", resp)
	}

	cs := tb.invoke(remoting.GetConsumeStats, map[string]string{"consumerGroup": "sg", "topic": "ST"}, nil)
	st, err := protocol.DecodeConsumeStats(cs.Body)
	if cs.Code != remoting.Success || err != nil || st.ConsumeTps <= 0 || len(st.OffsetTable) != 2 {
		t.Errorf("GET_CONSUME_STATS after consumption: %v %+v (%v)", cs, st, err)
	}

	all := tb.invoke(remoting.GetBrokerConsumeStats, map[string]string{"isOrder": "false"}, nil)
	list, err := protocol.DecodeConsumeStatsList(all.Body)
	if all.Code != remoting.Success || err != nil {
		t.Fatalf("GET_BROKER_CONSUME_STATS: %v %s (%v)", all, all.Body, err)
	}
	var sg []protocol.ConsumeStats
	for _, m := range list.ConsumeStatsList {
		if len(m) != 1 {
			t.Errorf("an entry with %d groups: %v", len(m), m)
		}
		if l, ok := m["sg"]; ok {
			sg = l
		}
	}
	if list.BrokerAddr != tb.addr || list.TotalDiff != 0 || len(sg) != 1 || sg[0].ConsumeTps <= 0 ||
		sg[0].OffsetTable[protocol.MessageQueue{BrokerName: "broker-test", Topic: "ST", QueueID: 0}].ConsumerOffset != n {
		t.Errorf("GET_BROKER_CONSUME_STATS: %s", all.Body)
	}

	// Three more not consumed; only order topics asked for: none.
	for i := range n {
		tb.sendV2("ST", 1, "", "late"+strconv.Itoa(i))
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("ST", 1) == n })
	all = tb.invoke(remoting.GetBrokerConsumeStats, map[string]string{"isOrder": "false"}, nil)
	if list, err = protocol.DecodeConsumeStatsList(all.Body); err != nil || list.TotalDiff != n {
		t.Errorf("totalDiff with %d unconsumed: %s (%v)", n, all.Body, err)
	}
	all = tb.invoke(remoting.GetBrokerConsumeStats, map[string]string{"isOrder": "true"}, nil)
	if list, err = protocol.DecodeConsumeStatsList(all.Body); err != nil || list.TotalDiff != 0 {
		t.Errorf("isOrder=true without order topics: %s (%v)", all.Body, err)
	}
	if resp := tb.invoke(remoting.GetBrokerConsumeStats, nil, nil); resp.Code != remoting.SystemError {
		t.Errorf("without isOrder: %v", resp)
	}
}

// The windows follow Java's StatsItem: a first sample counts from zero one period back,
// the minute keeps seven samples, the hour is sampled every 10 minutes from the start.
func TestStatsWindows(t *testing.T) {
	s := newStats()
	start := s.hourAt
	it := s.item(statsTopicPutNums, "T")
	it.add(4)
	it.add(2)
	s.sampleItems(start.Add(10 * time.Second))
	d := it.data()
	if d.StatsMinute.Sum != 6 || d.StatsMinute.Tps != 0.6 || d.StatsMinute.Avgpt != 3 || d.StatsHour.Sum != 0 || d.StatsDay.Sum != 0 {
		t.Fatalf("after one sample: %+v", d)
	}
	for i := 2; i <= 8; i++ {
		it.add(1)
		s.sampleItems(start.Add(time.Duration(i) * 10 * time.Second))
	}
	d = it.data()
	// Seven samples, 60 s apart at the ends, of which the oldest holds the first two adds
	// and one more.
	if d.StatsMinute.Sum != 6 || d.StatsMinute.Tps != 0.1 || d.StatsHour.Sum != 0 || len(it.minute) != 7 {
		t.Fatalf("after eight samples: %+v (%d minute samples)", d, len(it.minute))
	}
	s.sampleItems(start.Add(10 * time.Minute))
	if d = it.data(); d.StatsHour.Sum != 13 || d.StatsHour.Avgpt != 13.0/9 || d.StatsDay.Sum != 0 {
		t.Fatalf("after the first hour sample: %+v", d)
	}
	if s.minuteTps(statsGroupGetNums, "none") != 0 {
		t.Fatal("a counter never counted has a rate")
	}
}
