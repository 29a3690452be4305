package broker

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

func heartbeat(clientID, group, topic, sub string, subVersion int64) []byte {
	b, _ := json.Marshal(map[string]any{
		"clientID":        clientID,
		"producerDataSet": []any{},
		"consumerDataSet": []any{map[string]any{
			"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
			"consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": false,
			"subscriptionDataSet": []any{map[string]any{
				"classFilterMode": false, "topic": topic, "subString": sub, "tagsSet": []string{sub},
				"codeSet": []int{97}, "subVersion": subVersion, "expressionType": "TAG",
			}},
		}},
	})
	return b
}

// A Java push consumer pulls without the subscription flag: the broker uses the one its
// heartbeat registered, and refuses pulls before it or with a newer version.
func TestPullUsesHeartbeatSubscription(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("HB", 1)
	tb.sendV2("HB", 0, "a", "m-a")
	tb.sendV2("HB", 0, "b", "m-b")
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("HB", 0) == 2 })
	f := pullFields("hbg", "HB", 0, 0, 0, "")
	if resp := tb.invoke(remoting.PullMessage, f, nil); resp.Code != remoting.SubscriptionNotExist {
		t.Fatalf("pull before heartbeat: %v", resp)
	}
	if resp := tb.invoke(remoting.HeartBeat, nil, heartbeat("c1", "hbg", "HB", "a", 100)); resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %v", resp)
	}
	if _, ok := tb.topics.Get("%RETRY%hbg"); !ok {
		t.Fatal("heartbeat did not create the retry topic")
	}
	f["subVersion"] = "100"
	resp := tb.invoke(remoting.PullMessage, f, nil)
	if resp.Code != remoting.Success {
		t.Fatalf("pull after heartbeat: %v", resp)
	}
	if msgs := decodeAll(t, resp.Body); len(msgs) != 1 || string(msgs[0].Body) != "m-a" {
		t.Fatalf("filtered by the registered subscription: got %d messages", len(msgs))
	}
	f["subVersion"] = "200"
	if resp := tb.invoke(remoting.PullMessage, f, nil); resp.Code != remoting.SubscriptionNotLatest {
		t.Fatalf("pull with a newer subscription: %v", resp)
	}
	list := tb.invoke(remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": "hbg"}, nil)
	if list.Code != remoting.Success || string(list.Body) != `{"consumerIdList":["c1"]}` {
		t.Fatalf("consumer list: %v %s", list, list.Body)
	}
}

// A second consumer joining a group makes the broker notify the first one.
func TestNotifyConsumerIDsChanged(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("N", 1)
	notified := make(chan string, 4)
	first := remoting.NewClient(remoting.ClientConfig{})
	defer first.Close()
	first.Handle(remoting.NotifyConsumerIDsChanged, remoting.HandlerFunc(func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		notified <- req.Field("consumerGroup")
		return nil
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := first.Invoke(ctx, tb.addr, remoting.NewRequest(remoting.HeartBeat, nil, heartbeat("c1", "ng", "N", "*", 1))); err != nil {
		t.Fatal(err)
	}
	drain := func() {
		for {
			select {
			case <-notified:
			case <-time.After(100 * time.Millisecond):
				return
			}
		}
	}
	drain() // its own arrival
	second := remoting.NewClient(remoting.ClientConfig{})
	if _, err := second.Invoke(ctx, tb.addr, remoting.NewRequest(remoting.HeartBeat, nil, heartbeat("c2", "ng", "N", "*", 1))); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-notified:
		if g != "ng" {
			t.Fatalf("notified for %q", g)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("first consumer not notified of the second")
	}
	// The second leaves by closing its connection: the first is told again.
	second.Close()
	select {
	case <-notified:
	case <-time.After(5 * time.Second):
		t.Fatal("first consumer not notified of the departure")
	}
	waitFor(t, func() bool {
		g, ok := tb.clients.Consumer("ng")
		return ok && len(g.Channels) == 1
	})
}

func TestResetOffsetOffline(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("R", 1)
	for i := range 4 {
		tb.sendV2("R", 0, "", "m"+strconv.Itoa(i))
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("R", 0) == 4 })
	tb.offsets.Commit("rg", "R", 0, 4)
	resp := tb.invoke(remoting.InvokeBrokerToResetOffset, map[string]string{"topic": "R", "group": "rg", "timestamp": "0", "isForce": "true"}, nil)
	if resp.Code != remoting.Success {
		t.Fatalf("reset: %v", resp)
	}
	if got := tb.offsets.Query("rg", "R", 0); got != 0 {
		t.Fatalf("offset after reset to 0: %d", got)
	}
	if want := `{"offsetTable":{{"brokerName":"broker-test","queueId":0,"topic":"R"}:0}}`; string(resp.Body) != want {
		t.Fatalf("reset body %s, want %s", resp.Body, want)
	}
	stats := tb.invoke(remoting.GetConsumeStats, map[string]string{"consumerGroup": "rg", "topic": "R"}, nil)
	if stats.Code != remoting.Success {
		t.Fatalf("consume stats: %v", stats)
	}
	if want := `{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-test","queueId":0,"topic":"R"}:{"brokerOffset":4,"consumerOffset":0,"lastTimestamp":0}}}`; string(stats.Body) != want {
		t.Fatalf("consume stats %s", stats.Body)
	}
}

func TestUpdateBrokerConfig(t *testing.T) {
	tb := startBroker(t, "", nil)
	resp := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte("namesrvAddr=127.0.0.1:1\nlongPollingEnable=false\n"))
	if resp.Code != remoting.Success {
		t.Fatalf("update: %v", resp)
	}
	if c := tb.Config(); c.NamesrvAddr != "127.0.0.1:1" || c.LongPollingEnable {
		t.Fatalf("config not updated: %+v", c)
	}
	if resp := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte("listenPort=1\n")); resp.Code == remoting.Success {
		t.Fatal("listenPort changed live")
	}
	got := tb.invoke(remoting.GetBrokerConfig, nil, nil)
	if got.Code != remoting.Success || !containsLine(string(got.Body), "namesrvAddr=127.0.0.1:1") {
		t.Fatalf("get config: %v %s", got, got.Body)
	}
}

func containsLine(s, line string) bool {
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		if s[:i] == line {
			return true
		}
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return false
}

func TestProducerConnectionsAndRuntimeInfo(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("RI", 1)
	hb, _ := json.Marshal(map[string]any{"clientID": "p1", "producerDataSet": []any{map[string]string{"groupName": "pg1"}}, "consumerDataSet": []any{}})
	if resp := tb.invoke(remoting.HeartBeat, nil, hb); resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %v", resp)
	}
	resp := tb.invoke(remoting.GetProducerConnectionList, map[string]string{"producerGroup": "pg1"}, nil)
	if resp.Code != remoting.Success || !json.Valid(resp.Body) {
		t.Fatalf("producer connections: %v", resp)
	}
	tb.sendV2("RI", 0, "", "x")
	info := tb.invoke(remoting.GetBrokerRuntimeInfo, nil, nil)
	var kv struct {
		Table map[string]string `json:"table"`
	}
	if err := json.Unmarshal(info.Body, &kv); err != nil {
		t.Fatal(err)
	}
	if kv.Table["msgPutTotalTodayNow"] != "1" || kv.Table["putTps"] == "" || kv.Table["brokerVersionDesc"] != "V4_9_7" {
		t.Fatalf("runtime info %v", kv.Table)
	}
}
