package broker

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

func (tb *testBroker) queryCQ(topic string, qid int, index int64, count int, group string) (*remoting.Command, queryConsumeQueueBody) {
	tb.t.Helper()
	fields := map[string]string{"topic": topic, "queueId": strconv.Itoa(qid), "index": strconv.FormatInt(index, 10), "count": strconv.Itoa(count)}
	if group != "" {
		fields["consumerGroup"] = group
	}
	resp := tb.invoke(remoting.QueryConsumeQueue, fields, nil)
	var body queryConsumeQueueBody
	if resp.Code == remoting.Success {
		if err := json.Unmarshal(resp.Body, &body); err != nil {
			tb.t.Fatalf("queryCq body %q: %v", resp.Body, err)
		}
	}
	return resp, body
}

func TestQueryConsumeQueue(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("QCQ", 1)
	var offsets []int64
	for i := range 3 {
		resp := tb.sendV2("QCQ", 0, "tag-q", "m"+strconv.Itoa(i))
		_, phy, err := message.ParseOffsetMsgID(resp.Field("msgId"))
		if resp.Code != remoting.Success || err != nil {
			t.Fatalf("send: %v %v", resp, err)
		}
		offsets = append(offsets, phy)
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("QCQ", 0) == 3 })

	resp, body := tb.queryCQ("QCQ", 0, 1, 5, "")
	if resp.Code != remoting.Success || body.MinQueueIndex != 0 || body.MaxQueueIndex != 3 || len(body.QueueData) != 2 ||
		body.SubscriptionData != nil || body.FilterData != "" {
		t.Fatalf("queryCq from 1: %v %s", resp, resp.Body)
	}
	for i, e := range body.QueueData {
		if e.PhysicOffset != offsets[i+1] || e.PhysicSize <= 0 || e.TagsCode != int64(message.JavaStringHash("tag-q")) {
			t.Errorf("entry %d: %+v, want offset %d", i+1, e, offsets[i+1])
		}
	}

	// A group named: its subscription, or that it is not online.
	if _, body := tb.queryCQ("QCQ", 0, 0, 1, "nobody"); body.FilterData != "nobody@QCQ is not online!" || body.SubscriptionData != nil {
		t.Errorf("offline group: %+v", body)
	}
	newFakeConsumer(t, tb, "c1", "qcq-group", "QCQ", remoting.Version, func(*remoting.Conn, *remoting.Command) *remoting.Command { return nil })
	if _, body := tb.queryCQ("QCQ", 0, 0, 1, "qcq-group"); body.SubscriptionData == nil || body.SubscriptionData.Topic != "QCQ" || body.FilterData != "null" {
		t.Errorf("online group: %+v", body)
	}

	if resp, body := tb.queryCQ("QCQ", 0, 7, 1, ""); resp.Code != remoting.Success || resp.Remark != "Index 7 of 0@QCQ is not exist!" || len(body.QueueData) != 0 {
		t.Errorf("index beyond the end: %v", resp)
	}
	if resp, _ := tb.queryCQ("QCQ", 3, 0, 1, ""); resp.Code != remoting.SystemError || resp.Remark != "3@QCQ is not exist!" {
		t.Errorf("a queue never written: %v", resp)
	}
}

func TestCleanUnusedTopic(t *testing.T) {
	tb := startBroker(t, "", nil)
	for _, topic := range []string{"USED", "UNUSED"} {
		tb.createTopic(topic, 1)
		if resp := tb.sendV2(topic, 0, "", "x"); resp.Code != remoting.Success {
			t.Fatalf("send: %v", resp)
		}
	}
	waitFor(t, func() bool {
		return tb.store.MaxOffsetInQueue("USED", 0) == 1 && tb.store.MaxOffsetInQueue("UNUSED", 0) == 1
	})
	// The config goes, the queues stay (as after a topic deleted while its broker was down).
	if _, err := tb.topics.Delete("UNUSED"); err != nil {
		t.Fatal(err)
	}
	if resp := tb.invoke(remoting.CleanUnusedTopic, nil, nil); resp.Code != remoting.Success {
		t.Fatalf("cleanUnusedTopic: %v", resp)
	}
	if _, _, _, ok := tb.store.ConsumeQueueEntries("UNUSED", 0, 0, 1); ok {
		t.Error("UNUSED's queue is still there")
	}
	if tb.store.MaxOffsetInQueue("USED", 0) != 1 {
		t.Error("USED's queue is gone")
	}
	if resp := tb.invoke(remoting.CleanExpiredConsumeQueue, nil, nil); resp.Code != remoting.Success || tb.store.MaxOffsetInQueue("USED", 0) != 1 {
		t.Errorf("cleanExpiredCQ with every message stored: %v", resp)
	}
}
