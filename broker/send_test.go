package broker

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// encodeBatch builds a SEND_BATCH_MESSAGE body as the clients do.
func encodeBatch(bodies []string, props string) []byte {
	var out []byte
	for _, b := range bodies {
		size := 4 + 4 + 4 + 4 + 4 + len(b) + 2 + len(props)
		item := make([]byte, size)
		binary.BigEndian.PutUint32(item[0:], uint32(size))
		binary.BigEndian.PutUint32(item[16:], uint32(len(b)))
		copy(item[20:], b)
		binary.BigEndian.PutUint16(item[20+len(b):], uint16(len(props)))
		copy(item[22+len(b):], props)
		out = append(out, item...)
	}
	return out
}

func TestSendBatchAndV1(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("B", 1)
	props, _ := message.EncodeProperties(map[string]string{"KEYS": "bk"})
	resp := tb.invoke(remoting.SendBatchMessage, map[string]string{
		"a": "pg", "b": "B", "c": "TBW102", "d": "4", "e": "0", "f": "0",
		"g": strconv.FormatInt(time.Now().UnixMilli(), 10), "h": "0", "i": "", "j": "0", "k": "false", "m": "true",
	}, encodeBatch([]string{"b0", "b1", "b2"}, props))
	if resp.Code != remoting.Success {
		t.Fatalf("batch: %v", resp)
	}
	if ids := strings.Split(resp.Field("msgId"), ","); len(ids) != 3 || resp.Field("queueOffset") != "0" {
		t.Fatalf("batch response: %v", resp.ExtFields)
	}
	// SEND_MESSAGE (10) with the long header names, as older Go clients send.
	resp = tb.invoke(remoting.SendMessage, map[string]string{
		"producerGroup": "pg", "topic": "B", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "queueId": "0",
		"sysFlag": "0", "bornTimestamp": "1", "flag": "0", "properties": props, "reconsumeTimes": "0",
		"unitMode": "false", "batch": "false",
	}, []byte("v1"))
	if resp.Code != remoting.Success || resp.Field("queueOffset") != "3" {
		t.Fatalf("v1 send: %v", resp)
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("B", 0) == 4 })
	pulled := tb.invoke(remoting.PullMessage, pullFields("g", "B", 0, 0, pullSubscription, "*"), nil)
	msgs := decodeAll(t, pulled.Body)
	if len(msgs) != 4 || string(msgs[2].Body) != "b2" || msgs[3].Property("KEYS") != "bk" || msgs[0].Property("CLUSTER") != "DefaultCluster" {
		t.Fatalf("pulled %d", len(msgs))
	}
	// VIEW_MESSAGE_BY_ID by the commitlog offset from the message id.
	_, phy, err := message.ParseOffsetMsgID(resp.Field("msgId"))
	if err != nil {
		t.Fatal(err)
	}
	view := tb.invoke(remoting.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(phy, 10)}, nil)
	if m := decodeAll(t, view.Body); view.Code != remoting.Success || len(m) != 1 || string(m[0].Body) != "v1" {
		t.Fatalf("view by id: %v", view)
	}
}

func TestDelayedMessageGoesToScheduleTopic(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("D", 1)
	props, _ := message.EncodeProperties(map[string]string{"DELAY": "3"})
	resp := tb.invoke(remoting.SendMessageV2, map[string]string{
		"a": "pg", "b": "D", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0", "i": props, "j": "0", "k": "false", "m": "false",
	}, []byte("later"))
	if resp.Code != remoting.Success || resp.Field("queueId") != "0" {
		t.Fatalf("delayed send: %v", resp)
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("SCHEDULE_TOPIC_XXXX", 2) == 1 })
	if tb.store.MaxOffsetInQueue("D", 0) != 0 {
		t.Fatal("delayed message visible in its topic at once")
	}
}

func TestQueryMessageByKey(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("Q", 1)
	tb.sendV2("Q", 0, "", "one") // KEYS k-one
	tb.sendV2("Q", 0, "", "two")
	q := map[string]string{"topic": "Q", "key": "k-two", "maxNum": "32", "beginTimestamp": "0",
		"endTimestamp": strconv.FormatInt(math.MaxInt64, 10)}
	var resp *remoting.Command
	waitFor(t, func() bool {
		resp = tb.invoke(remoting.QueryMessage, q, nil)
		return resp.Code == remoting.Success
	})
	if m := decodeAll(t, resp.Body); len(m) != 1 || string(m[0].Body) != "two" {
		t.Fatalf("query by key: %d messages", len(m))
	}
	q["key"] = "nothing"
	if resp := tb.invoke(remoting.QueryMessage, q, nil); resp.Code != remoting.QueryNotFound {
		t.Fatalf("query unknown key: %v", resp)
	}
}

func TestSendBackGoesToRetryThenDLQ(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("SB", 1)
	resp := tb.sendV2("SB", 0, "", "fail-me")
	_, phy, _ := message.ParseOffsetMsgID(resp.Field("msgId"))
	back := func(offset int64, maxTimes string) *remoting.Command {
		return tb.invoke(remoting.ConsumerSendMsgBack, map[string]string{"offset": strconv.FormatInt(offset, 10),
			"group": "sbg", "delayLevel": "0", "originMsgId": resp.Field("msgId"), "originTopic": "SB",
			"unitMode": "false", "maxReconsumeTimes": maxTimes}, nil)
	}
	if r := back(phy, "16"); r.Code != remoting.Success {
		t.Fatalf("send back: %v", r)
	}
	// First retry: delay level 3, queue 2 of SCHEDULE_TOPIC_XXXX, bound for %RETRY%sbg.
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("SCHEDULE_TOPIC_XXXX", 2) == 1 })
	if _, ok := tb.topics.Get("%RETRY%sbg"); !ok {
		t.Fatal("retry topic not created")
	}
	if r := back(phy, "0"); r.Code != remoting.Success {
		t.Fatalf("send back past the limit: %v", r)
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("%DLQ%sbg", 0) == 1 })
}

func TestTransactionCommitAndRollback(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("TX", 1)
	half := func(body string) (qoff string, phy int64) {
		props, _ := message.EncodeProperties(map[string]string{"TRAN_MSG": "true", "PGROUP": "txp", "UNIQ_KEY": "id-" + body})
		resp := tb.invoke(remoting.SendMessageV2, map[string]string{
			"a": "txp", "b": "TX", "c": "TBW102", "d": "4", "e": "0", "f": strconv.Itoa(int(message.TransactionPreparedType)),
			"g": "1", "h": "0", "i": props, "j": "0", "k": "false", "m": "false"}, []byte(body))
		if resp.Code != remoting.Success {
			t.Fatalf("half send: %v", resp)
		}
		_, phy, _ = message.ParseOffsetMsgID(resp.Field("msgId"))
		return resp.Field("queueOffset"), phy
	}
	end := func(qoff string, phy int64, how int32) *remoting.Command {
		return tb.invoke(remoting.EndTransaction, map[string]string{"producerGroup": "txp", "tranStateTableOffset": qoff,
			"commitLogOffset": strconv.FormatInt(phy, 10), "commitOrRollback": strconv.Itoa(int(how)),
			"fromTransactionCheck": "false", "msgId": "x"}, nil)
	}
	q1, p1 := half("commit-me")
	q2, p2 := half("roll-me-back")
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("RMQ_SYS_TRANS_HALF_TOPIC", 0) == 2 })
	if tb.store.MaxOffsetInQueue("TX", 0) != 0 {
		t.Fatal("half message visible before the commit")
	}
	if r := end(q1, p1, message.TransactionCommitType); r.Code != remoting.Success {
		t.Fatalf("commit: %v", r)
	}
	if r := end(q2, p2, message.TransactionRollbackType); r.Code != remoting.Success {
		t.Fatalf("rollback: %v", r)
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("TX", 0) == 1 })
	pulled := tb.invoke(remoting.PullMessage, pullFields("g", "TX", 0, 0, pullSubscription, "*"), nil)
	if m := decodeAll(t, pulled.Body); len(m) != 1 || string(m[0].Body) != "commit-me" {
		t.Fatalf("after commit and rollback: %d messages", len(m))
	}
	if r := end(q1, p1+1, message.TransactionCommitType); r.Code != remoting.SystemError {
		t.Fatalf("commit of a wrong offset: %v", r)
	}
}

// A client that cannot send a message back sends it to %RETRY%<group> itself with
// reconsumeTimes already incremented (the Go client's sendMessageBackAsNormal, Java's
// sendMessageBack fallback): it is dead once that reaches maxReconsumeTimes.
func TestSendToRetryTopicPastLimitGoesToDLQ(t *testing.T) {
	tb := startBroker(t, "", nil)
	send := func(reconsumeTimes, maxTimes string) {
		t.Helper()
		props, _ := message.EncodeProperties(map[string]string{"DELAY": "3", "RETRY_TOPIC": "RT"})
		resp := tb.invoke(remoting.SendMessageV2, map[string]string{
			"a": "CLIENT_INNER_PRODUCER", "b": "%RETRY%rtg", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0",
			"i": props, "j": reconsumeTimes, "k": "false", "l": maxTimes, "m": "false",
		}, []byte("retry-"+reconsumeTimes))
		if resp.Code != remoting.Success {
			t.Fatalf("send to the retry topic: %v", resp)
		}
	}
	send("1", "2") // below the limit: delayed, bound for %RETRY%rtg
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("SCHEDULE_TOPIC_XXXX", 2) == 1 })
	send("2", "2") // reached it: dead
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("%DLQ%rtg", 0) == 1 })
	if tb.store.MaxOffsetInQueue("SCHEDULE_TOPIC_XXXX", 2) != 1 {
		t.Fatal("a message at the limit was scheduled for another retry")
	}
}

// Without maxReconsumeTimes in the header (clients before V3_4_9) the group's
// retryMaxTimes is the limit.
func TestSendBackHonoursGroupRetryMaxTimes(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("GR", 1)
	if r := tb.invoke(remoting.UpdateAndCreateSubscriptionGroup, nil, []byte(`{"groupName":"grg","retryMaxTimes":1}`)); r.Code != remoting.Success {
		t.Fatalf("create group: %v", r)
	}
	props, _ := message.EncodeProperties(map[string]string{"UNIQ_KEY": "gr-1"})
	resp := tb.invoke(remoting.SendMessageV2, map[string]string{
		"a": "pg", "b": "GR", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0", "i": props, "j": "1", "k": "false", "m": "false",
	}, []byte("retried-once"))
	_, phy, _ := message.ParseOffsetMsgID(resp.Field("msgId"))
	r := tb.invoke(remoting.ConsumerSendMsgBack, map[string]string{"offset": strconv.FormatInt(phy, 10),
		"group": "grg", "delayLevel": "0", "originTopic": "GR", "unitMode": "false"}, nil)
	if r.Code != remoting.Success {
		t.Fatalf("send back: %v", r)
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("%DLQ%grg", 0) == 1 })
}

// Under SYNC_FLUSH a send is answered once its record is durable, and the wait for the
// group commit does not hold the send worker: with one worker, 64 concurrent sends are
// all answered SUCCESS and stored.
func TestSyncFlushSendsShareGroupCommits(t *testing.T) {
	tb := startBroker(t, "", func(c *config.Config) {
		c.FlushDiskType = store.SyncFlush
		c.SendMessageThreadPoolNums = 1
	})
	tb.createTopic("SyncT", 1)
	const n = 64
	var wg sync.WaitGroup
	codes := make(chan int16, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- tb.sendV2("SyncT", 0, "", fmt.Sprintf("m%d", i)).Code
		}()
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != remoting.Success {
			t.Fatalf("send answered %d, want SUCCESS", code)
		}
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("SyncT", 0) == n })
}
