package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// fakeConsumer is a client connection that heartbeats as a consumer of group and
// answers the requests the broker forwards to it with answer.
type fakeConsumer struct {
	cl  *remoting.Client
	got chan *remoting.Command
}

func newFakeConsumer(t *testing.T, tb *testBroker, clientID, group, topic string, version int16,
	answer func(conn *remoting.Conn, req *remoting.Command) *remoting.Command) *fakeConsumer {
	t.Helper()
	fc := &fakeConsumer{cl: remoting.NewClient(remoting.ClientConfig{}), got: make(chan *remoting.Command, 8)}
	t.Cleanup(func() { fc.cl.Close() })
	h := remoting.HandlerFunc(func(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
		fc.got <- req
		return answer(conn, req)
	})
	fc.cl.Handle(remoting.GetConsumerRunningInfo, h)
	fc.cl.Handle(remoting.ConsumeMessageDirectly, h)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := remoting.NewRequest(remoting.HeartBeat, nil, heartbeat(clientID, group, topic, "*", 1))
	req.Version = version
	if resp, err := fc.cl.Invoke(ctx, tb.addr, req); err != nil || resp.Code != remoting.Success {
		t.Fatalf("heartbeat of %s: %v %v", clientID, resp, err)
	}
	return fc
}

// forwarded returns the request the broker forwarded to the fake consumer.
func (fc *fakeConsumer) forwarded(t *testing.T) *remoting.Command {
	t.Helper()
	select {
	case req := <-fc.got:
		return req
	case <-time.After(10 * time.Second):
		t.Fatal("the broker forwarded nothing to the consumer")
		return nil
	}
}

func TestConsumerRunningInfoForwarded(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("CR", 1)
	fc := newFakeConsumer(t, tb, "10.0.0.1@c1", "crg", "CR", remoting.Version, func(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
		resp := req.NewResponse(remoting.Success, "from the client")
		resp.Body = []byte(`{"properties":{"consumeType":"CONSUME_PASSIVELY"}}`)
		resp.SetField("answeredBy", "c1")
		return resp
	})

	resp := tb.invoke(remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "crg", "clientId": "10.0.0.1@c1", "jstackEnable": "true"}, []byte("b"))
	fwd := fc.forwarded(t)
	if fwd.Code != remoting.GetConsumerRunningInfo || fwd.Field("consumerGroup") != "crg" || fwd.Field("clientId") != "10.0.0.1@c1" ||
		fwd.Field("jstackEnable") != "true" || string(fwd.Body) != "b" {
		t.Errorf("forwarded request: %v fields %v body %q", fwd, fwd.ExtFields, fwd.Body)
	}
	if resp.Code != remoting.Success || resp.Remark != "from the client" || resp.Field("answeredBy") != "c1" ||
		!strings.Contains(string(resp.Body), "CONSUME_PASSIVELY") {
		t.Errorf("relayed response: %v fields %v body %s", resp, resp.ExtFields, resp.Body)
	}

	resp = tb.invoke(remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "crg", "clientId": "nobody"}, nil)
	if resp.Code != remoting.SystemError || resp.Remark != "The Consumer <crg> <nobody> not online" {
		t.Errorf("unknown client: %v", resp)
	}
	resp = tb.invoke(remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "crg"}, nil)
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "clientId") {
		t.Errorf("without clientId: %v", resp)
	}

	// A 3.0 client cannot answer; Java refuses before asking it.
	newFakeConsumer(t, tb, "old", "crg", "CR", 10, func(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
		t.Error("the broker forwarded to a client too old for it")
		return req.NewResponse(remoting.Success, "")
	})
	resp = tb.invoke(remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "crg", "clientId": "old"}, nil)
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "too low to finish") {
		t.Errorf("old client: %v", resp)
	}

	// A client that hangs up instead of answering.
	newFakeConsumer(t, tb, "gone", "crg", "CR", remoting.Version, func(conn *remoting.Conn, _ *remoting.Command) *remoting.Command {
		conn.Close()
		return nil
	})
	resp = tb.invoke(remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "crg", "clientId": "gone"}, nil)
	if resp.Code != remoting.SystemError || !strings.HasPrefix(resp.Remark, "invoke consumer <crg> <gone> Exception: ") {
		t.Errorf("client closed its connection: %v", resp)
	}
}

func TestConsumeMessageDirectlyForwardsTheStoredMessage(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("CD", 1)
	sent := tb.sendV2("CD", 0, "tg", "direct body")
	msgID := sent.Field(fieldMsgID)
	if sent.Code != remoting.Success || msgID == "" {
		t.Fatalf("send: %v", sent)
	}
	fc := newFakeConsumer(t, tb, "c2", "cdg", "CD", remoting.Version, func(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
		resp := req.NewResponse(remoting.Success, "")
		resp.Body = []byte(`{"autoCommit":true,"consumeResult":"CR_SUCCESS","order":false,"spentTimeMills":1}`)
		return resp
	})

	resp := tb.invoke(remoting.ConsumeMessageDirectly, map[string]string{"consumerGroup": "cdg", "clientId": "c2", "msgId": msgID}, nil)
	fwd := fc.forwarded(t)
	if fwd.Code != remoting.ConsumeMessageDirectly || fwd.Field("msgId") != msgID || fwd.Field("consumerGroup") != "cdg" ||
		fwd.Field("brokerName") != "broker-test" {
		t.Errorf("forwarded request: %v fields %v", fwd, fwd.ExtFields)
	}
	if msgs := decodeAll(t, fwd.Body); len(msgs) != 1 || string(msgs[0].Body) != "direct body" || msgs[0].Topic != "CD" ||
		msgs[0].OffsetMsgID() != msgID {
		t.Errorf("forwarded body holds %d messages: %+v", len(msgs), msgs)
	}
	if resp.Code != remoting.Success || !strings.Contains(string(resp.Body), "CR_SUCCESS") {
		t.Errorf("relayed response: %v %s", resp, resp.Body)
	}

	_, phy, _ := message.ParseOffsetMsgID(msgID)
	missing := message.CreateOffsetMsgID(tb.storeHost, phy+1<<20)
	resp = tb.invoke(remoting.ConsumeMessageDirectly, map[string]string{"consumerGroup": "cdg", "clientId": "c2", "msgId": missing}, nil)
	if resp.Code != remoting.SystemError {
		t.Errorf("msgId past the commit log: %v", resp)
	}
	resp = tb.invoke(remoting.ConsumeMessageDirectly, map[string]string{"consumerGroup": "cdg", "clientId": "other", "msgId": msgID}, nil)
	if resp.Code != remoting.SystemError || resp.Remark != "The Consumer <cdg> <other> not online" {
		t.Errorf("unknown client: %v", resp)
	}
}
