package broker

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/broker/metadata"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// fakeRequester is a producer connection, as a requesting client's, that records the
// replies the broker pushes to it and answers them with code.
type fakeRequester struct {
	cl     *remoting.Client
	pushed chan *remoting.Command
}

func newFakeRequester(t *testing.T, tb *testBroker, clientID string, code int16) *fakeRequester {
	t.Helper()
	r := &fakeRequester{cl: remoting.NewClient(remoting.ClientConfig{}), pushed: make(chan *remoting.Command, 16)}
	t.Cleanup(func() { r.cl.Close() })
	r.cl.Handle(remoting.PushReplyMessageToClient, remoting.HandlerFunc(
		func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
			r.pushed <- req
			return req.NewResponse(code, "")
		}))
	hb, _ := json.Marshal(map[string]any{"clientID": clientID,
		"producerDataSet": []any{map[string]string{"groupName": "requesters"}}, "consumerDataSet": []any{}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := r.cl.Invoke(ctx, tb.addr, remoting.NewRequest(remoting.HeartBeat, nil, hb))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("requester heartbeat: %v %v", resp, err)
	}
	return r
}

// next returns the next pushed reply, failing after a deadline.
func (r *fakeRequester) next(t *testing.T) *remoting.Command {
	t.Helper()
	select {
	case cmd := <-r.pushed:
		return cmd
	case <-time.After(10 * time.Second):
		t.Fatal("no reply pushed to the requester within 10s")
		return nil
	}
}

// nothingPushed checks that no push is pending. The broker answers the replier only after
// the push's own answer, so a push would already be recorded.
func (r *fakeRequester) nothingPushed(t *testing.T) {
	t.Helper()
	select {
	case cmd := <-r.pushed:
		t.Fatalf("unexpected push: %v", cmd)
	default:
	}
}

func replyProps(t *testing.T, replyTo, correlation string) string {
	t.Helper()
	kv := map[string]string{"CORRELATION_ID": correlation, "MSG_TYPE": "reply", "TTL": "3", "origin": "replier"}
	if replyTo != "" {
		kv[propertyReplyToClient] = replyTo
	}
	p, err := message.EncodeProperties(kv)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sendReplyV1 sends SEND_REPLY_MESSAGE with the long header names, as the Go client does.
func (tb *testBroker) sendReplyV1(topic string, qid int, props, body string) *remoting.Command {
	tb.t.Helper()
	return tb.invoke(remoting.SendReplyMessage, map[string]string{
		"producerGroup": "repliers", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": strconv.Itoa(qid), "sysFlag": "0", "bornTimestamp": "1700000000000", "flag": "7",
		"properties": props, "reconsumeTimes": "0", "unitMode": "false", "batch": "false",
	}, []byte(body))
}

// sendReplyV2 sends SEND_REPLY_MESSAGE_V2 with the single-letter names, as Java does.
func (tb *testBroker) sendReplyV2(topic string, qid int, props, body string) *remoting.Command {
	tb.t.Helper()
	return tb.invoke(remoting.SendReplyMessageV2, map[string]string{
		"a": "repliers", "b": topic, "c": "TBW102", "d": "4", "e": strconv.Itoa(qid), "f": "0",
		"g": "1700000000001", "h": "0", "i": props, "j": "2", "k": "false", "m": "false",
	}, []byte(body))
}

func TestReplyPushedToRequesterAndStored(t *testing.T) {
	tb := startBroker(t, "", nil)
	topic := metadata.ReplyTopic("DefaultCluster")
	requester := newFakeRequester(t, tb, "requester-1", remoting.Success)
	replier, err := tb.cl.Conn(context.Background(), tb.addr)
	if err != nil {
		t.Fatal(err)
	}
	wantBornHost := replier.LocalAddr()

	before := time.Now().UnixMilli()
	resp := tb.sendReplyV1(topic, 0, replyProps(t, "requester-1", "c1"), "answer-1")
	if resp.Code != remoting.Success || resp.Remark != "" {
		t.Fatalf("reply V1: %v", resp)
	}
	// Stored, so the response names the stored message, not Java's "0" placeholders.
	if len(resp.Field("msgId")) != 32 || resp.Field("queueId") != "0" || resp.Field("queueOffset") != "0" ||
		resp.Field("MSG_REGION") != "DefaultRegion" || resp.Field("TRACE_ON") != "true" {
		t.Fatalf("reply V1 response fields: %v", resp.ExtFields)
	}
	push := requester.next(t)
	after := time.Now().UnixMilli()
	wantFields := map[string]string{"producerGroup": "repliers", "topic": topic, "defaultTopic": "TBW102",
		"defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0", "bornTimestamp": "1700000000000", "flag": "7",
		"reconsumeTimes": "0", "unitMode": "false", "bornHost": wantBornHost, "storeHost": tb.addr}
	for k, v := range wantFields {
		if got := push.Field(k); got != v {
			t.Errorf("push header %s = %q, want %q", k, got, v)
		}
	}
	if ts, _ := strconv.ParseInt(push.Field("storeTimestamp"), 10, 64); ts < before || ts > after {
		t.Errorf("push storeTimestamp %d not within [%d, %d]", ts, before, after)
	}
	if string(push.Body) != "answer-1" {
		t.Errorf("push body %q", push.Body)
	}
	props := message.DecodeProperties(push.Field("properties"))
	if props["CORRELATION_ID"] != "c1" || props[propertyReplyToClient] != "requester-1" || props["origin"] != "replier" {
		t.Errorf("push properties %v", props)
	}
	if ts, _ := strconv.ParseInt(props[propertyPushReplyTime], 10, 64); ts < before || ts > after {
		t.Errorf("PUSH_REPLY_TIME %q not within [%d, %d]", props[propertyPushReplyTime], before, after)
	}

	// V2: a queue the broker picks (-1) is pushed as asked and answered as picked.
	resp = tb.sendReplyV2(topic, -1, replyProps(t, "requester-1", "c2"), "answer-2")
	if resp.Code != remoting.Success || resp.Field("queueId") != "0" || resp.Field("queueOffset") != "1" {
		t.Fatalf("reply V2: %v", resp)
	}
	push = requester.next(t)
	if push.Field("queueId") != "-1" || push.Field("reconsumeTimes") != "2" || string(push.Body) != "answer-2" ||
		message.DecodeProperties(push.Field("properties"))["CORRELATION_ID"] != "c2" {
		t.Fatalf("V2 push: %v body %q", push.ExtFields, push.Body)
	}

	// The stored replies: the properties as sent (no push time, no CLUSTER stamp).
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue(topic, 0) == 2 })
	pulled := tb.invoke(remoting.PullMessage, pullFields("reply-reader", topic, 0, 0, pullSubscription, "*"), nil)
	msgs := decodeAll(t, pulled.Body)
	if len(msgs) != 2 {
		t.Fatalf("stored replies: %d", len(msgs))
	}
	for i, m := range msgs {
		want := "answer-" + strconv.Itoa(i+1)
		if string(m.Body) != want || m.Property("CORRELATION_ID") != "c"+strconv.Itoa(i+1) ||
			m.Property(propertyPushReplyTime) != "" || m.Property("CLUSTER") != "" || m.BornHost.String() != wantBornHost {
			t.Errorf("stored reply %d: body %q props %q bornHost %v", i, m.Body, m.Properties, m.BornHost)
		}
	}
	if msgs[0].Flag != 7 || msgs[1].ReconsumeTimes != 2 {
		t.Errorf("stored flag %d, reconsumeTimes %d", msgs[0].Flag, msgs[1].ReconsumeTimes)
	}
	requester.nothingPushed(t)
}

func TestReplyToUnknownRequester(t *testing.T) {
	tb := startBroker(t, "", nil)
	topic := metadata.ReplyTopic("DefaultCluster")
	requester := newFakeRequester(t, tb, "requester-1", remoting.Success)
	refuser := newFakeRequester(t, tb, "refuser", remoting.SystemError)

	resp := tb.sendReplyV1(topic, 0, replyProps(t, "nobody", "c1"), "lost")
	if resp.Code != remoting.SystemError || resp.Remark != "push reply message fail, channel of <nobody> not found." {
		t.Fatalf("reply to nobody: %v", resp)
	}
	// Java stores it even so, and the response says where.
	if len(resp.Field("msgId")) != 32 || resp.Field("queueOffset") != "0" {
		t.Fatalf("reply to nobody, response fields: %v", resp.ExtFields)
	}
	resp = tb.sendReplyV1(topic, 0, replyProps(t, "", "c2"), "anonymous")
	if resp.Code != remoting.SystemError || resp.Remark != "reply message properties[REPLY_TO_CLIENT] is null" {
		t.Fatalf("reply without REPLY_TO_CLIENT: %v", resp)
	}
	resp = tb.sendReplyV1(topic, 0, replyProps(t, "refuser", "c3"), "refused")
	if resp.Code != remoting.SystemError || resp.Remark != "push reply message to refuserfail." {
		t.Fatalf("reply the requester refused: %v", resp)
	}
	if string(refuser.next(t).Body) != "refused" {
		t.Fatal("refused push had the wrong body")
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue(topic, 0) == 3 })

	// A requester that has gone is not found either.
	requester.cl.Close()
	waitFor(t, func() bool { _, ok := tb.clients.ProducerByClientID("requester-1"); return !ok })
	resp = tb.sendReplyV1(topic, 0, replyProps(t, "requester-1", "c4"), "too-late")
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "<requester-1> not found") {
		t.Fatalf("reply to a closed requester: %v", resp)
	}
}

func TestReplyValidatedAsSends(t *testing.T) {
	tb := startBroker(t, "", func(c *config.Config) { c.MaxMessageSize = 64 })
	topic := metadata.ReplyTopic("DefaultCluster")
	requester := newFakeRequester(t, tb, "requester-1", remoting.Success)
	props := replyProps(t, "requester-1", "c1")

	for _, tc := range []struct {
		name, topic, body string
		qid               int
		code              int16
	}{
		{"system topic", "SCHEDULE_TOPIC_XXXX", "x", 0, remoting.NoPermission},
		{"illegal topic name", "bad topic!", "x", 0, remoting.SystemError},
		{"queue out of range", topic, "x", 5, remoting.SystemError},
		{"body over maxMessageSize", topic, strings.Repeat("b", 65), 0, remoting.MessageIllegal},
	} {
		resp := tb.sendReplyV1(tc.topic, tc.qid, props, tc.body)
		if resp.Code != tc.code || resp.Field("MSG_REGION") != "DefaultRegion" {
			t.Errorf("%s: got %d %q %v, want code %d", tc.name, resp.Code, resp.Remark, resp.ExtFields, tc.code)
		}
	}
	requester.nothingPushed(t)
	if n := tb.store.MaxOffsetInQueue(topic, 0); n != 0 {
		t.Fatalf("refused replies stored: %d", n)
	}
}

func TestReplyNotStoredWhenDisabled(t *testing.T) {
	tb := startBroker(t, "", func(c *config.Config) { c.StoreReplyMessageEnable = false })
	topic := metadata.ReplyTopic("DefaultCluster")
	requester := newFakeRequester(t, tb, "requester-1", remoting.Success)

	resp := tb.sendReplyV1(topic, 0, replyProps(t, "requester-1", "c1"), "pushed-only")
	// Not stored: the response keeps Java's placeholders.
	if resp.Code != remoting.Success || resp.Field("msgId") != "0" || resp.Field("queueOffset") != "0" {
		t.Fatalf("reply: %v %v", resp, resp.ExtFields)
	}
	if string(requester.next(t).Body) != "pushed-only" {
		t.Fatal("push had the wrong body")
	}
	// A plain send to the same queue lands at offset 0: nothing was stored before it.
	sent := tb.sendV2(topic, 0, "", "after")
	if sent.Code != remoting.Success || sent.Field("queueOffset") != "0" {
		t.Fatalf("send after the reply: %v %v", sent, sent.ExtFields)
	}
}
