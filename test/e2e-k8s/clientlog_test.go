//go:build k8s

package e2ek8s

import (
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// The failover spec relies on clientLog recognising the client's own report of a queue
// it could not take, in the form consumer/consumer.go logs it.
func TestClientLogRecordsQueuesNotTaken(t *testing.T) {
	l := newClientLog("fatal")
	mq := primitive.MessageQueue{Topic: "E2EFailover", BrokerName: "broker-a", QueueId: 2}
	l.Warning("do defaultConsumer, add a new mq failed", map[string]any{
		rlog.LogKeyMessageQueue: mq.String(), rlog.LogKeyConsumerGroup: "e2e-ha-1"})
	l.Warning("another warning", map[string]any{
		rlog.LogKeyMessageQueue:  (&primitive.MessageQueue{Topic: "E2EFailover", BrokerName: "broker-a", QueueId: 3}).String(),
		rlog.LogKeyConsumerGroup: "e2e-ha-1"})
	if !l.failedToTake("e2e-ha-1", mq) {
		t.Errorf("queue %s of group e2e-ha-1 not recorded", mq.String())
	}
	if l.failedToTake("e2e-ha-pull-1", mq) {
		t.Errorf("queue %s recorded for another group", mq.String())
	}
	if l.failedToTake("e2e-ha-1", primitive.MessageQueue{Topic: "E2EFailover", BrokerName: "broker-a", QueueId: 3}) {
		t.Error("a queue recorded from another warning")
	}
}
