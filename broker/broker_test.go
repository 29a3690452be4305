package broker

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

type testBroker struct {
	*Broker
	t    *testing.T
	addr string
	cl   *remoting.Client
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func testConfig(t *testing.T, dir string) *config.Config {
	c := config.Default()
	c.BrokerName = "broker-test"
	c.BrokerIP1 = "127.0.0.1"
	c.ListenPort = freePort(t)
	c.StorePathRootDir = dir
	c.MappedFileSizeCommitLog = 8 << 20
	c.MappedFileSizeConsumeQueue = 1000 * 20
	c.MaxHashSlotNum = 1000
	c.MaxIndexNum = 4000
	// Tests under -race on a loaded machine must not meet flow control unless they
	// ask for it (flowcontrol_test.go).
	c.WaitTimeInSendQueue = 10 * time.Second
	c.OSPageCacheBusyTimeout = 10 * time.Second
	return c
}

// startBroker runs a broker on a loopback port with a small store in dir (a temp dir
// when empty); mutate adjusts the config first.
func startBroker(t *testing.T, dir string, mutate func(*config.Config)) *testBroker {
	t.Helper()
	return startBrokerWith(t, dir, mutate, Options{})
}

// startBrokerWith is startBroker with options (NoFastChannel is set, and a quiet logger
// unless opts has one).
func startBrokerWith(t *testing.T, dir string, mutate func(*config.Config), opts Options) *testBroker {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	c := testConfig(t, dir)
	if mutate != nil {
		mutate(c)
	}
	opts.NoFastChannel = true
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	b, err := New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	// The address it listens on, which is also the one it announces unless the test sets advertisedListenPort.
	listen := net.JoinHostPort(c.BrokerIP1, strconv.Itoa(c.ListenPort))
	tb := &testBroker{Broker: b, t: t, addr: listen, cl: remoting.NewClient(remoting.ClientConfig{})}
	t.Cleanup(tb.stop)
	return tb
}

func (tb *testBroker) stop() {
	tb.cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tb.Shutdown(ctx)
}

func (tb *testBroker) invoke(code int16, fields map[string]string, body []byte) *remoting.Command {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := tb.cl.Invoke(ctx, tb.addr, remoting.NewRequest(code, fields, body))
	if err != nil {
		tb.t.Fatalf("invoke %d: %v", code, err)
	}
	return resp
}

func (tb *testBroker) createTopic(topic string, queues int) {
	tb.t.Helper()
	resp := tb.invoke(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": strconv.Itoa(queues), "writeQueueNums": strconv.Itoa(queues), "perm": "6",
	}, nil)
	if resp.Code != remoting.Success {
		tb.t.Fatalf("create topic: %v", resp)
	}
}

// sendV2 sends one message as the Java producer does (SEND_MESSAGE_V2).
func (tb *testBroker) sendV2(topic string, qid int, tags, body string) *remoting.Command {
	tb.t.Helper()
	req := sendV2Request(topic, qid, tags, body)
	return tb.invoke(req.Code, req.ExtFields, req.Body)
}

// sendV2Request is the SEND_MESSAGE_V2 request of sendV2.
func sendV2Request(topic string, qid int, tags, body string) *remoting.Command {
	props, _ := message.EncodeProperties(map[string]string{message.PropertyTags: tags, message.PropertyKeys: "k-" + body, "WAIT": "true"})
	return remoting.NewRequest(remoting.SendMessageV2, map[string]string{
		"a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": strconv.Itoa(qid), "f": "0",
		"g": strconv.FormatInt(time.Now().UnixMilli(), 10), "h": "0", "i": props, "j": "0", "k": "false", "m": "false",
	}, []byte(body))
}

func pullFields(group, topic string, qid int, offset int64, sysFlag int, sub string) map[string]string {
	return map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(qid), "queueOffset": strconv.FormatInt(offset, 10),
		"maxMsgNums": "32", "sysFlag": strconv.Itoa(sysFlag), "commitOffset": "0", "suspendTimeoutMillis": "15000",
		"subscription": sub, "subVersion": "0", "expressionType": "TAG",
	}
}

func decodeAll(t *testing.T, body []byte) []*message.MessageExt {
	t.Helper()
	var out []*message.MessageExt
	for len(body) > 0 {
		m, err := message.DecodeRecord(body, true)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
		body = body[m.StoreSize:]
	}
	return out
}

func TestSendAndPullWithTagFilter(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("T1", 2)
	for i, tag := range []string{"a", "b", "a"} {
		resp := tb.sendV2("T1", 1, tag, "m"+strconv.Itoa(i))
		if resp.Code != remoting.Success {
			t.Fatalf("send: %v", resp)
		}
		if resp.Field("queueOffset") != strconv.Itoa(i) || resp.Field("queueId") != "1" || len(resp.Field("msgId")) != 32 {
			t.Fatalf("send response fields: %v", resp.ExtFields)
		}
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("T1", 1) == 3 })
	resp := tb.invoke(remoting.PullMessage, pullFields("g1", "T1", 1, 0, pullSubscription, "a"), nil)
	if resp.Code != remoting.Success {
		t.Fatalf("pull: %v", resp)
	}
	msgs := decodeAll(t, resp.Body)
	if len(msgs) != 2 || string(msgs[0].Body) != "m0" || string(msgs[1].Body) != "m2" || msgs[1].Property("KEYS") != "k-m2" {
		t.Fatalf("pulled %d messages", len(msgs))
	}
	if resp.Field("nextBeginOffset") != "3" || resp.Field("maxOffset") != "3" || resp.Field("suggestWhichBrokerId") != "0" {
		t.Fatalf("pull fields: %v", resp.ExtFields)
	}
	// At the end of the queue, without suspend: PULL_NOT_FOUND at once.
	if resp := tb.invoke(remoting.PullMessage, pullFields("g1", "T1", 1, 3, pullSubscription, "*"), nil); resp.Code != remoting.PullNotFound {
		t.Fatalf("pull at end: %v", resp)
	}
	// Beyond the end: OFFSET_MOVED.
	if resp := tb.invoke(remoting.PullMessage, pullFields("g1", "T1", 1, 9, pullSubscription, "*"), nil); resp.Code != remoting.PullOffsetMoved {
		t.Fatalf("pull beyond end: %v", resp)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A held pull is answered by the message's arrival, not found by the
// periodic re-check. The re-check runs every second, so it can win the race
// now and then: such a round is tried again, and three in a row fail.
func TestLongPollWakesOnArrival(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("T2", 1)
	for round := range 3 {
		before := tb.holder.Stats()
		done := make(chan *remoting.Command, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp, err := tb.cl.Invoke(ctx, tb.addr, remoting.NewRequest(remoting.PullMessage, pullFields("g", "T2", 0, int64(round), pullSuspend|pullSubscription, "*"), nil))
			if err != nil {
				t.Error(err)
			}
			done <- resp
		}()
		waitFor(t, func() bool { return tb.holder.Len() == 1 })
		tb.sendV2("T2", 0, "x", "hello")
		var resp *remoting.Command
		select {
		case resp = <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("held pull not answered")
		}
		if resp == nil || resp.Code != remoting.Success {
			t.Fatalf("held pull answered %v", resp)
		}
		st := tb.holder.Stats()
		if st.Woken == before.Woken+1 && st.Rechecked == before.Rechecked {
			return
		}
		t.Logf("round %d: answered by the re-check (%+v -> %+v)", round, before, st)
	}
	t.Fatal("held pulls were never woken by the arrival")
}

func TestLongPollTimesOut(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("T3", 1)
	f := pullFields("g", "T3", 0, 0, pullSuspend|pullSubscription, "*")
	f["suspendTimeoutMillis"] = "300"
	start := time.Now()
	resp := tb.invoke(remoting.PullMessage, f, nil)
	if resp.Code != remoting.PullNotFound {
		t.Fatalf("timed-out pull: %v", resp)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("answered after %v, before the 300 ms suspend timeout", d)
	}
}

func TestConsumerOffsets(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, nil)
	tb.createTopic("T4", 1)
	q := map[string]string{"consumerGroup": "g", "topic": "T4", "queueId": "0"}
	// A new group on a young queue starts at 0.
	if resp := tb.invoke(remoting.QueryConsumerOffset, q, nil); resp.Code != remoting.Success || resp.Field("offset") != "0" {
		t.Fatalf("query new group: %v", resp)
	}
	u := map[string]string{"consumerGroup": "g", "topic": "T4", "queueId": "0", "commitOffset": "7"}
	if resp := tb.invoke(remoting.UpdateConsumerOffset, u, nil); resp.Code != remoting.Success {
		t.Fatalf("update: %v", resp)
	}
	if resp := tb.invoke(remoting.QueryConsumerOffset, q, nil); resp.Field("offset") != "7" {
		t.Fatalf("query: %v", resp)
	}
	// Pull with the commit flag commits too.
	f := pullFields("g", "T4", 0, 0, pullSubscription|pullCommitOffset, "*")
	f["commitOffset"] = "9"
	tb.invoke(remoting.PullMessage, f, nil)
	if resp := tb.invoke(remoting.QueryConsumerOffset, q, nil); resp.Field("offset") != "9" {
		t.Fatalf("query after pull commit: %v", resp)
	}
	// Offsets survive a restart.
	tb.stop()
	tb2 := startBroker(t, dir, nil)
	if resp := tb2.invoke(remoting.QueryConsumerOffset, q, nil); resp.Field("offset") != "9" {
		t.Fatalf("query after restart: %v", resp)
	}
}

func TestSendRefusals(t *testing.T) {
	tb := startBroker(t, "", func(c *config.Config) { c.AutoCreateTopicEnable = false; c.MaxMessageSize = 1024 })
	if resp := tb.sendV2("NoSuchTopic", 0, "", "x"); resp.Code != remoting.TopicNotExist {
		t.Fatalf("unknown topic: %v", resp)
	}
	if resp := tb.sendV2("bad topic!", 0, "", "x"); resp.Code == remoting.Success {
		t.Fatalf("illegal topic accepted: %v", resp)
	}
	tb.createTopic("T5", 1)
	if resp := tb.sendV2("T5", 0, "", string(make([]byte, 2048))); resp.Code != remoting.MessageIllegal {
		t.Fatalf("large message: %v", resp)
	}
	tb.invoke(remoting.UpdateAndCreateTopic, map[string]string{"topic": "RO", "readQueueNums": "1", "writeQueueNums": "1", "perm": "4"}, nil)
	if resp := tb.sendV2("RO", 0, "", "x"); resp.Code != remoting.NoPermission {
		t.Fatalf("read-only topic: %v", resp)
	}
}

func TestAutoCreateTopicOnSend(t *testing.T) {
	tb := startBroker(t, "", nil)
	if resp := tb.sendV2("Fresh", 0, "", "x"); resp.Code != remoting.Success {
		t.Fatalf("send to a new topic: %v", resp)
	}
	tc, ok := tb.topics.Get("Fresh")
	if !ok || tc.WriteQueueNums != 4 {
		t.Fatalf("auto-created %+v %v", tc, ok)
	}
}

// With longPollingEnable=false a suspended pull is held for shortPollingTimeMills only.
func TestShortPolling(t *testing.T) {
	tb := startBroker(t, "", func(c *config.Config) { c.LongPollingEnable = false; c.ShortPollingTime = 200 * time.Millisecond })
	tb.createTopic("SP", 1)
	f := pullFields("g", "SP", 0, 0, pullSuspend|pullSubscription, "*")
	f["suspendTimeoutMillis"] = "3600000" // held for the short polling time, not this
	start := time.Now()
	resp := tb.invoke(remoting.PullMessage, f, nil)
	if resp.Code != remoting.PullNotFound {
		t.Fatalf("short poll: %v", resp)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("answered after %v, before the 200 ms short polling time", d)
	}
}

// Shutdown answers held pulls instead of dropping them.
func TestShutdownAnswersHeldPulls(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("SD", 1)
	done := make(chan *remoting.Command, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, _ := tb.cl.Invoke(ctx, tb.addr, remoting.NewRequest(remoting.PullMessage, pullFields("g", "SD", 0, 0, pullSuspend|pullSubscription, "*"), nil))
		done <- resp
	}()
	waitFor(t, func() bool { return tb.holder.Len() == 1 })
	go tb.Shutdown(context.Background())
	select {
	case resp := <-done:
		if resp == nil || resp.Code != remoting.PullNotFound {
			t.Fatalf("held pull at shutdown answered %v", resp)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("held pull not answered at shutdown")
	}
}

// Shutdown honours its context: with a name server that never answers and a context
// already done, the unregistration is not waited for (3 s otherwise), the context's
// error is returned, and the store is closed all the same.
func TestShutdownHonoursItsContext(t *testing.T) {
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	go func() {
		for {
			nc, err := mute.Accept()
			if err != nil {
				return
			}
			defer nc.Close() // held open, never answered
		}
	}()
	tb := startBroker(t, "", func(c *config.Config) {
		c.NamesrvAddr = mute.Addr().String()
		c.RegisterBrokerTimeout = 100 * time.Millisecond
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	err = tb.Shutdown(ctx)
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("Shutdown took %v with its context done", took)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown: %v, want context.Canceled", err)
	}
	if _, err := tb.store.PutMessage(&message.Message{Topic: "T", Body: []byte("x"), BornHost: netip.MustParseAddrPort("127.0.0.1:1")}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("store still open after Shutdown: %v", err)
	}
}
