package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// TestRequestReply: the Go client's Request gets the answer a push consumer sends with
// the client's reply helper (SEND_REPLY_MESSAGE, then PUSH_REPLY_MESSAGE_TO_CLIENT to
// the requester), and the broker keeps a copy in <cluster>_REPLY_TOPIC.
func TestRequestReply(t *testing.T) {
	t.Parallel()
	// A cluster of its own: the reply topic then routes to this broker only, the one
	// the requester heartbeats to. Parallel tests' brokers would otherwise share it.
	const cluster, topic = "E2EReplyCluster", "E2EReplyRequests"
	replyTopic := cluster + "_REPLY_TOPIC"
	b := startTestBroker(t, "broker-reply", map[string]string{"brokerClusterName": cluster})
	createTopic(t, b, topic, 2)
	waitRoute(t, replyTopic, true)

	replier := newProducer(t, "E2EReplyReplierP")
	var mu sync.Mutex
	var replyErr error // the last reply that could not be sent, for the failure message
	col := newCollector()
	col.onMsg = func(m *primitive.MessageExt) {
		if consumer.GetReplyToClient(m) == "" {
			return
		}
		body := []byte("reply-to-" + string(m.Body))
		reply, err := consumer.CreateReplyMessage(m, body)
		if err == nil {
			// The helper parses body as properties instead of setting it; set it as
			// Java's MessageUtil.createReplyMessage does.
			reply.Body = body
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err = replier.SendSync(ctx, reply)
			cancel()
		}
		if err != nil {
			mu.Lock()
			replyErr = err
			mu.Unlock()
		}
	}
	startPush(t, "E2EReplyG", topic, pushOpts{from: consumer.ConsumeFromFirstOffset, collector: col})
	requester := newProducer(t, "E2EReplyRequesterP")
	request := func(body string, timeout time.Duration) (*primitive.Message, error) {
		return requester.Request(context.Background(), timeout, primitive.NewMessage(topic, []byte(body)))
	}
	lastReplyErr := func() error {
		mu.Lock()
		defer mu.Unlock()
		return replyErr
	}

	// The broker pushes a reply over the requester's producer connection, known from its
	// heartbeat. The Go client sends its first one 1 s after start to the brokers it
	// knows by then (Request does not when the topic exists), so let it learn the route
	// first and wait for the heartbeat (every 30 s after that).
	sendSync(t, requester, msg(topic, "route-warmup", ""))
	eventually(t, 45*time.Second, "the requester's producer heartbeat", func() bool {
		resp := invoke(t, b.addr, remoting.GetProducerConnectionList, map[string]string{"producerGroup": "E2EReplyRequesterP"}, nil)
		return resp.Code == remoting.Success
	})

	for i := range 3 {
		body := fmt.Sprintf("question-%d", i)
		reply, err := request(body, 20*time.Second)
		if err != nil {
			t.Fatalf("request %q: %v (last reply send error: %v)", body, err, lastReplyErr())
		}
		if string(reply.Body) != "reply-to-"+body || reply.Topic != replyTopic {
			t.Fatalf("request %q: reply %q on topic %q", body, reply.Body, reply.Topic)
		}
		if reply.GetProperty(primitive.PropertyCorrelationID) == "" || reply.GetProperty("PUSH_REPLY_TIME") == "" ||
			reply.GetProperty(primitive.PropertyMsgType) != "reply" {
			t.Fatalf("request %q: reply properties %v", body, reply.GetProperties())
		}
	}
	// Every reply pushed was stored too (storeReplyMessageEnable).
	eventually(t, 10*time.Second, "3 replies stored in "+replyTopic, func() bool {
		return sum(maxOffsets(t, b, replyTopic, 1)) == 3
	})
}
