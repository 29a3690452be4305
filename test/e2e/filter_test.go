package e2e

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"

	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// pullSubscription is PullSysFlag's SUBSCRIPTION bit: the pull carries its expression.
const pullSubscription = 4

// rawPull reads one queue from offset 0 to its end with PULL_MESSAGE requests that carry
// the expression, as a pull consumer sends them, and returns the bodies that crossed the
// network. A non-SUCCESS answer other than "nothing (more) here" fails the test.
func rawPull(t *testing.T, b *brokerProc, group, topic string, qid int, exprType, expr string) []string {
	t.Helper()
	var bodies []string
	offset := int64(0)
	for range 100 {
		resp := invoke(t, b.addr, remoting.PullMessage, map[string]string{
			"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(qid),
			"queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": "4", "sysFlag": strconv.Itoa(pullSubscription),
			"commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": expr, "subVersion": "0",
			"expressionType": exprType,
		}, nil)
		switch resp.Code {
		case remoting.Success:
			for body := resp.Body; len(body) > 0; {
				m, err := message.DecodeRecord(body, true)
				if err != nil {
					t.Fatalf("pull body: %v", err)
				}
				bodies = append(bodies, string(m.Body))
				body = body[m.StoreSize:]
			}
		case remoting.PullRetryImmediately: // a read that matched nothing: go on
		case remoting.PullNotFound, remoting.PullOffsetMoved:
			return bodies
		default:
			t.Fatalf("pull %s %q from %d: %d %s", exprType, expr, offset, resp.Code, resp.Remark)
		}
		next, err := strconv.ParseInt(resp.Field("nextBeginOffset"), 10, 64)
		if err != nil || next <= offset {
			return bodies
		}
		offset = next
	}
	t.Fatal("more than 100 pulls for one queue")
	return nil
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

// TestFiltersRunOnTheBroker: tag expressions ("TagA || TagB", "*") and SQL92 are
// evaluated by the broker: the pull responses carry exactly the matching messages, so
// unmatched ones never cross the network. A push consumer of the official client with
// the same tag expression receives the same messages.
func TestFiltersRunOnTheBroker(t *testing.T) {
	t.Parallel()
	topic := runName(t, "E2EBrokerFilter")
	createTopic(t, shared, topic, 1)
	p := newProducer(t, "E2EBrokerFilterP")
	var all []string
	for i := range 12 {
		tag := []string{"TagA", "TagB", "TagC"}[i%3]
		body := fmt.Sprintf("%s-%02d", tag, i)
		m := msg(topic, body, tag)
		m.WithProperty("n", strconv.Itoa(i))
		sendSync(t, p, m)
		all = append(all, body)
	}
	eventually(t, 10*time.Second, "12 messages stored", func() bool {
		return len(rawPull(t, shared, runName(t, "E2EBrokerFilterAll"), topic, 0, "TAG", "*")) == 12
	})

	want := func(keep func(i int, tag string) bool) []string {
		var out []string
		for i, body := range all {
			if keep(i, body[:4]) {
				out = append(out, body)
			}
		}
		return out
	}
	for _, tc := range []struct {
		exprType, expr string
		want           []string
	}{
		{"TAG", "*", all},
		{"TAG", "TagA || TagB", want(func(_ int, tag string) bool { return tag != "TagC" })},
		{"TAG", "TagC", want(func(_ int, tag string) bool { return tag == "TagC" })},
		{"SQL92", "n >= 6 AND TAGS <> 'TagB'", want(func(i int, tag string) bool { return i >= 6 && tag != "TagB" })},
		{"SQL92", "n IN ('1', '2') OR (TAGS = 'TagC' AND n BETWEEN 3 AND 5)", want(func(i int, _ string) bool { return i == 1 || i == 2 || i == 5 })},
		{"SQL92", "missing IS NOT NULL", nil},
	} {
		got := rawPull(t, shared, runName(t, "E2EBrokerFilterG"), topic, 0, tc.exprType, tc.expr)
		if strings.Join(sorted(got), ",") != strings.Join(sorted(tc.want), ",") {
			t.Errorf("%s %q: the broker sent %v, want %v", tc.exprType, tc.expr, got, tc.want)
		}
	}

	// The official client, tag expression with "||".
	_, col := startPush(t, runName(t, "E2EBrokerFilterPush"), topic, pushOpts{from: consumer.ConsumeFromFirstOffset, selector: "TagA || TagB"})
	eventually(t, 30*time.Second, "8 TagA/TagB messages", func() bool { return col.distinct() == 8 })
	time.Sleep(500 * time.Millisecond)
	if n := col.deliveries(); n != 8 {
		t.Errorf("push consumer got %d deliveries, want 8", n)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	for body := range col.msgs {
		if strings.HasPrefix(body, "TagC") {
			t.Errorf("push consumer received %s", body)
		}
	}
}

// TestMalformedSQL92Refused: a SQL92 expression that does not compile is refused with
// SUBSCRIPTION_PARSE_FAILED (23) and the compiler's message, whether a pull carries it
// or a heartbeat registers it; pulls that rely on such a heartbeat get
// FILTER_DATA_NOT_EXIST (27), as from Java. An official-client consumer subscribed with
// it receives nothing.
func TestMalformedSQL92Refused(t *testing.T) {
	t.Parallel()
	const topic, bad = "E2EBadSQL", "n >>= 3 AND"
	createTopic(t, shared, topic, 1)
	p := newProducer(t, "E2EBadSQLP")
	for i := range 3 {
		m := msg(topic, fmt.Sprintf("bad-%d", i), "")
		m.WithProperty("n", strconv.Itoa(i+5))
		sendSync(t, p, m)
	}
	resp := invoke(t, shared.addr, remoting.PullMessage, map[string]string{
		"consumerGroup": "E2EBadSQLRaw", "topic": topic, "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
		"sysFlag": strconv.Itoa(pullSubscription), "commitOffset": "0", "suspendTimeoutMillis": "0",
		"subscription": bad, "subVersion": "0", "expressionType": "SQL92",
	}, nil)
	if resp.Code != remoting.SubscriptionParseFailed || !strings.Contains(resp.Remark, bad) || !strings.Contains(resp.Remark, "SQL92") {
		t.Errorf("pull with %q: %d %q, want %d naming the expression and the error", bad, resp.Code, resp.Remark, remoting.SubscriptionParseFailed)
	}
	hb := fmt.Sprintf(`{"clientID":"e2e-bad-sql","producerDataSet":[],"consumerDataSet":[{"groupName":"E2EBadSQLRaw",`+
		`"consumeType":"CONSUME_ACTIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET",`+
		`"subscriptionDataSet":[{"topic":%q,"subString":%q,"subVersion":1,"expressionType":"SQL92"}],"unitMode":false}]}`, topic, bad)
	resp = invoke(t, shared.addr, remoting.HeartBeat, nil, []byte(hb))
	if resp.Code != remoting.SubscriptionParseFailed || !strings.Contains(resp.Remark, "E2EBadSQLRaw") {
		t.Errorf("heartbeat with %q: %d %q, want %d naming the group", bad, resp.Code, resp.Remark, remoting.SubscriptionParseFailed)
	}

	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{namesrvAddr}), consumer.WithGroupName("E2EBadSQLG"),
		consumer.WithInstance(instance("c")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	col := newCollector()
	if err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: bad}, col.consume); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	eventually(t, 10*time.Second, "the consumer registered", func() bool { return len(consumerIDs(t, shared, "E2EBadSQLG")) == 1 })
	resp = invoke(t, shared.addr, remoting.PullMessage, map[string]string{
		"consumerGroup": "E2EBadSQLG", "topic": topic, "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
		"sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0",
	}, nil)
	if resp.Code != remoting.FilterDataNotExist || !strings.Contains(resp.Remark, bad) {
		t.Errorf("pull by the registered expression: %d %q, want %d", resp.Code, resp.Remark, remoting.FilterDataNotExist)
	}
	time.Sleep(2 * time.Second)
	if n := col.deliveries(); n != 0 {
		t.Errorf("a consumer with a malformed expression received %d messages", n)
	}
}

// TestSQL92NeedsPropertyFilter: without enablePropertyFilter the broker refuses SQL92
// subscriptions with SYSTEM_ERROR and Java's remark, in pulls and in
// CHECK_CLIENT_CONFIG (which the Java consumer sends before it starts).
func TestSQL92NeedsPropertyFilter(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, "broker-nofilter", nil)
	const topic = "E2ENoPropertyFilter"
	createTopic(t, b, topic, 1)
	const remark = "The broker does not support consumer to filter message by SQL92"
	resp := invoke(t, b.addr, remoting.PullMessage, map[string]string{
		"consumerGroup": "E2ENoPropertyFilterG", "topic": topic, "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
		"sysFlag": strconv.Itoa(pullSubscription), "commitOffset": "0", "suspendTimeoutMillis": "0",
		"subscription": "a > 1", "subVersion": "0", "expressionType": "SQL92",
	}, nil)
	if resp.Code != remoting.SystemError || resp.Remark != remark {
		t.Errorf("SQL92 pull: %d %q", resp.Code, resp.Remark)
	}
	body := fmt.Sprintf(`{"clientId":"e2e","group":"E2ENoPropertyFilterG","subscriptionData":{"topic":%q,"subString":"a > 1","expressionType":"SQL92"}}`, topic)
	resp = invoke(t, b.addr, remoting.CheckClientConfig, nil, []byte(body))
	if resp.Code != remoting.SystemError || resp.Remark != remark {
		t.Errorf("CHECK_CLIENT_CONFIG: %d %q", resp.Code, resp.Remark)
	}
}
