package broker

import (
	"encoding/json"
	"testing"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// TestOffsetMovedEvent: a pull beyond the end of a queue is answered PULL_OFFSET_MOVED
// with the corrected offset, and the correction is recorded in OFFSET_MOVED_EVENT as
// 4.9.7 records it.
func TestOffsetMovedEvent(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("OM1", 1)
	for _, body := range []string{"m0", "m1"} {
		if resp := tb.sendV2("OM1", 0, "t", body); resp.Code != remoting.Success {
			t.Fatalf("send: %v", resp)
		}
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("OM1", 0) == 2 })

	resp := tb.invoke(remoting.PullMessage, pullFields("om-group", "OM1", 0, 9, pullSubscription, "*"), nil)
	// 4.9.7 sends a reader beyond the end back to the minimum while that is 0.
	if resp.Code != remoting.PullOffsetMoved || resp.Field("nextBeginOffset") != "0" {
		t.Fatalf("pull beyond the end: %v %v", resp, resp.ExtFields)
	}

	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue(protocol.OffsetMovedEventTopic, 0) == 1 })
	resp = tb.invoke(remoting.PullMessage, pullFields("om-reader", protocol.OffsetMovedEventTopic, 0, 0, pullSubscription, "om-group"), nil)
	if resp.Code != remoting.Success {
		t.Fatalf("pull the event: %v", resp)
	}
	msgs := decodeAll(t, resp.Body)
	if len(msgs) != 1 || msgs[0].Property("TAGS") != "om-group" || msgs[0].Property("KEYS") != "om-group" {
		t.Fatalf("event records: %d, first %+v", len(msgs), msgs)
	}
	var ev map[string]any
	if err := json.Unmarshal(msgs[0].Body, &ev); err != nil {
		t.Fatalf("event body %q: %v", msgs[0].Body, err)
	}
	mq, _ := ev["messageQueue"].(map[string]any)
	if ev["consumerGroup"] != "om-group" || ev["offsetRequest"] != 9.0 || ev["offsetNew"] != 0.0 ||
		mq["topic"] != "OM1" || mq["queueId"] != 0.0 || mq["brokerName"] != tb.cfg.Get().BrokerName {
		t.Fatalf("event body: %s", msgs[0].Body)
	}

	// A pull that only waits at the end records nothing.
	if resp := tb.invoke(remoting.PullMessage, pullFields("om-group", "OM1", 0, 2, pullSubscription, "*"), nil); resp.Code != remoting.PullNotFound {
		t.Fatalf("pull at the end: %v", resp)
	}
	if n := tb.store.MaxOffsetInQueue(protocol.OffsetMovedEventTopic, 0); n != 1 {
		t.Fatalf("%d offset moved events, want 1", n)
	}
}

// TestOffsetMovedOnSlave: a slave does not move a consumer unless offsetCheckInSlave is
// set (it may only be behind its master), and never writes an event to its own store.
func TestOffsetMovedOnSlave(t *testing.T) {
	s := startBroker(t, "", func(c *config.Config) {
		c.BrokerRole, c.BrokerID, c.SlaveReadEnable = config.Slave, 1, true
	})
	s.createTopic("OM2", 1)
	waitFor(t, func() bool { _, ok := s.topics.Get("OM2"); return ok })

	resp := s.invoke(remoting.PullMessage, pullFields("om-group", "OM2", 0, 5, pullSubscription, "*"), nil)
	if resp.Code != remoting.PullRetryImmediately || resp.Field("suggestWhichBrokerId") != "0" || resp.Field("nextBeginOffset") != "5" {
		t.Fatalf("pull beyond the end on a slave: %v %v", resp, resp.ExtFields)
	}
	s.cfg.Update(map[string]string{"offsetCheckInSlave": "true"})
	resp = s.invoke(remoting.PullMessage, pullFields("om-group", "OM2", 0, 5, pullSubscription, "*"), nil)
	if resp.Code != remoting.PullOffsetMoved || resp.Field("nextBeginOffset") != "0" {
		t.Fatalf("pull beyond the end on a slave with offsetCheckInSlave: %v %v", resp, resp.ExtFields)
	}
	if n := s.store.CommitLogMaxOffset(); n != 0 {
		t.Fatalf("the slave wrote %d bytes to its own commitlog", n)
	}
}
