package broker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/lock"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

func lockBody(group, clientID string, queues ...int32) []byte {
	var mqs []lock.MessageQueue
	for _, q := range queues {
		mqs = append(mqs, lock.MessageQueue{Topic: "L", BrokerName: "broker-test", QueueID: q})
	}
	b, _ := json.Marshal(lock.LockBatchRequestBody{ConsumerGroup: group, ClientID: clientID, MQSet: mqs})
	return b
}

func lockedQueues(t *testing.T, resp *remoting.Command) int {
	t.Helper()
	if resp.Code != remoting.Success {
		t.Fatalf("lock: %v", resp)
	}
	var body lock.LockBatchResponseBody
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		t.Fatal(err)
	}
	return len(body.LockOKMQSet)
}

// An orderly consumer whose connection closes (it crashed) gives its queues up at
// once; another client of the group need not wait for the 60 s lock expiry.
func TestLocksReleasedWhenConnectionCloses(t *testing.T) {
	tb := startBroker(t, "", nil)
	other := remoting.NewClient(remoting.ClientConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := other.Invoke(ctx, tb.addr, remoting.NewRequest(remoting.LockBatchMQ, nil, lockBody("lg", "A", 0, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if n := lockedQueues(t, resp); n != 2 {
		t.Fatalf("A locked %d queues, want 2", n)
	}
	if n := lockedQueues(t, tb.invoke(remoting.LockBatchMQ, nil, lockBody("lg", "B", 0, 1))); n != 0 {
		t.Fatalf("B locked %d of A's queues", n)
	}
	other.Close()
	waitFor(t, func() bool {
		return lockedQueues(t, tb.invoke(remoting.LockBatchMQ, nil, lockBody("lg", "B", 0, 1))) == 2
	})

	// UNREGISTER_CLIENT of the group also gives the locks up.
	tb.invoke(remoting.UnregisterClient, map[string]string{"clientID": "B", "consumerGroup": "lg"}, nil)
	if n := lockedQueues(t, tb.invoke(remoting.LockBatchMQ, nil, lockBody("lg", "C", 0, 1))); n != 2 {
		t.Fatalf("C locked %d queues after B unregistered, want 2", n)
	}
}
