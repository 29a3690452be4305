package retry

import (
	"net/netip"
	"testing"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

func orig(reconsume int32, props map[string]string) *message.MessageExt {
	p, err := message.EncodeProperties(props)
	if err != nil {
		panic(err)
	}
	m := &message.MessageExt{PhysicalOffset: 4096, StoreHost: netip.MustParseAddrPort("127.0.0.1:10911")}
	m.Topic, m.QueueID, m.Body, m.Properties, m.Flag, m.SysFlag = "Orders", 3, []byte("body"), p, 5, message.FlagCompressed
	m.ReconsumeTimes, m.BornTimestamp = reconsume, 1234
	m.BornHost = netip.MustParseAddrPort("10.0.0.9:5555")
	return m
}

func i32(v int32) *int32 { return &v }

// Cases follow Java 4.9.7 SendMessageProcessor.consumerSendMsgBack.
func TestBuild(t *testing.T) {
	const offID = "7F00000100002A9F0000000000001000" // 127.0.0.1:10911, offset 4096
	for _, tc := range []struct {
		name       string
		reconsume  int32
		props      map[string]string
		req        Request
		wantTopic  string
		wantDelay  string
		wantRetry  string // RETRY_TOPIC
		wantOrigin string
	}{
		{"first failure", 0, nil, Request{Group: "g"}, "%RETRY%g", "3", "Orders", offID},
		{"fifth failure", 4, nil, Request{Group: "g"}, "%RETRY%g", "7", "Orders", offID},
		{"requested level", 4, nil, Request{Group: "g", DelayLevel: 2}, "%RETRY%g", "2", "Orders", offID},
		{"level above max left to the store clamp", 20, nil, Request{Group: "g", RetryMaxTimes: 30}, "%RETRY%g", "23", "Orders", offID},
		{"negative level: DLQ", 0, nil, Request{Group: "g", DelayLevel: -1}, "%DLQ%g", "", "Orders", offID},
		{"group max reached", 16, nil, Request{Group: "g"}, "%DLQ%g", "", "Orders", offID},
		{"group max 3", 3, nil, Request{Group: "g", RetryMaxTimes: 3}, "%DLQ%g", "", "Orders", offID},
		{"header max overrides group", 3, nil, Request{Group: "g", RetryMaxTimes: 3, MaxReconsumeTimes: i32(5)}, "%RETRY%g", "6", "Orders", offID},
		{"header max 0: DLQ at once", 0, nil, Request{Group: "g", MaxReconsumeTimes: i32(0)}, "%DLQ%g", "", "Orders", offID},
		{"already retried keeps RETRY_TOPIC and origin", 1,
			map[string]string{message.PropertyRetryTopic: "First", message.PropertyOriginMessageID: "ORIG", message.PropertyDelayTimeLevel: "3"},
			Request{Group: "g"}, "%RETRY%g", "4", "First", "ORIG"},
		{"DLQ drops a stale DELAY", 16, map[string]string{message.PropertyDelayTimeLevel: "3"}, Request{Group: "g"}, "%DLQ%g", "", "Orders", offID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := map[string]string{message.PropertyTags: "A", message.PropertyUniqClientMessageIDKey: "U1"}
			for k, v := range tc.props {
				props[k] = v
			}
			o := orig(tc.reconsume, props)
			res, err := Build(o, tc.req, func(n int32) int32 { return n - 1 })
			if err != nil {
				t.Fatal(err)
			}
			m := res.Message
			if res.Topic != tc.wantTopic || m.Topic != tc.wantTopic || res.DLQ != (tc.wantTopic[1] == 'D') {
				t.Fatalf("topic %s (%s, DLQ %v), want %s", m.Topic, res.Topic, res.DLQ, tc.wantTopic)
			}
			if res.DLQ && (res.QueueNums != 1 || m.QueueID != 0) {
				t.Fatalf("DLQ queues %d queue %d", res.QueueNums, m.QueueID)
			}
			if got := m.Property(message.PropertyDelayTimeLevel); got != tc.wantDelay {
				t.Errorf("DELAY %q, want %q", got, tc.wantDelay)
			}
			if got := m.Property(message.PropertyRetryTopic); got != tc.wantRetry {
				t.Errorf("RETRY_TOPIC %q, want %q", got, tc.wantRetry)
			}
			if got := m.Property(message.PropertyOriginMessageID); got != tc.wantOrigin {
				t.Errorf("ORIGIN_MESSAGE_ID %q, want %q", got, tc.wantOrigin)
			}
			if m.ReconsumeTimes != tc.reconsume+1 || string(m.Body) != "body" || m.Flag != 5 || m.SysFlag != message.FlagCompressed ||
				m.BornTimestamp != 1234 || m.BornHost != o.BornHost || m.Property(message.PropertyTags) != "A" ||
				m.Property(message.PropertyUniqClientMessageIDKey) != "U1" || m.Property(message.PropertyWaitStoreMsgOK) != "false" {
				t.Errorf("copied fields wrong: %+v", m)
			}
		})
	}
}

func TestBuildQueuesAndDrop(t *testing.T) {
	res, err := Build(orig(0, nil), Request{Group: "g", RetryQueueNums: 4}, func(n int32) int32 { return 2 })
	if err != nil || res.QueueNums != 4 || res.Message.QueueID != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	res, _ = Build(orig(0, nil), Request{Group: "g"}, nil)
	if res.QueueNums != 1 || res.Message.QueueID != 0 {
		t.Fatalf("default queues %+v", res)
	}
	if res, _ := Build(orig(0, nil), Request{Group: "g", RetryDisabled: true}, nil); !res.Drop || res.Message != nil {
		t.Fatalf("disabled: %+v", res)
	}
	if _, err := Build(orig(0, nil), Request{}, nil); err == nil {
		t.Fatal("empty group accepted")
	}
	if RetryTopic("g") != "%RETRY%g" || DLQTopic("g") != "%DLQ%g" {
		t.Fatal("topic names")
	}
}
