//go:build compat

package compat

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
	"github.com/openrmq/rocketmq-operator/test/internal/procs"
)

// statsTimeout bounds the wait for the broker's counters, which it samples every 10s and
// which mqadmin reads through a JVM of a few seconds per run.
const statsTimeout = 150 * time.Second

// TestOurBrokerMQAdminStats: mqadmin commands answered by OUR broker from what it counts
// and from a running Java push consumer: consumerStatus (GET_CONSUMER_RUNNING_INFO 307,
// relayed to the consumer), queryMsgById -g -d (CONSUME_MESSAGE_DIRECTLY 309, likewise),
// statsAll (VIEW_BROKER_STATS_DATA 315: TOPIC_PUT_NUMS, GROUP_GET_NUMS) and
// brokerConsumeStats (GET_BROKER_CONSUME_STATS 317).
func TestOurBrokerMQAdminStats(t *testing.T) {
	f := oursEnv(t)
	const queues = 2
	topic := uniq("compat_ours_stats")
	f.createTopic(t, topic, queues)
	prefix := uniq("s")
	group := uniq("compat_ours_stats_group")
	run := func(args ...string) string {
		t.Helper()
		return runMQAdmin(t, f.java, filepath.Join(f.work, "mqadmin"), f.ns.Addr, args...)
	}

	// A Java push consumer that stays up (it waits for more messages than ever come)
	// until the test stops it.
	name := uniq("java-stats-consumer")
	consumer, err := f.java.StartMain(filepath.Join(f.work, "java-clients", name), name,
		"org.openrmq.compat.BrokerClient", "consume", f.ns.Addr, topic, prefix, group, "1000000", "600")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { consumer.Stop(procs.DefaultStopGrace) })
	clientID := f.waitConsumerOnline(t, group, consumer)

	p := startQueueProducer(t, f.ns.Addr, uniq("compat_stats_producer"))
	sent := 0
	var lastOffsetMsgID string
	sendRound := func() {
		t.Helper()
		for q := range queues {
			msg := primitive.NewMessage(topic, fmt.Appendf(nil, "stats %d", sent))
			msg.WithTag(prefix + "-tag")
			msg.WithProperty("compat_prefix", prefix)
			msg.WithProperty("compat_index", strconv.Itoa(sent))
			msg.Queue = &primitive.MessageQueue{Topic: topic, BrokerName: f.broker.Name, QueueId: q}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			res, err := p.SendSync(ctx, msg)
			cancel()
			if err != nil || res.Status != primitive.SendOK {
				t.Fatalf("send to queue %d: %v %v", q, res, err)
			}
			sent++
			lastOffsetMsgID = res.OffsetMsgID
		}
		f.checkCommitted(t, group, topic, queues, int64(sent))
	}

	// statsAll -t: the topic's puts and the group's consumption in the last minute. The
	// broker samples its counters every 10 s, so rounds go on until they show.
	// #Topic  #Consumer Group  #Accumulation  #InTPS  #OutTPS  #InMsg24Hour  #OutMsg24Hour
	statsRow := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(topic) + `\s+` + regexp.QuoteMeta(group) +
		`\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s*$`)
	var out string
	err = eventually(statsTimeout, time.Second, func() error {
		sendRound()
		out = run("statsAll", "-t", topic)
		m := statsRow.FindStringSubmatch(out)
		if m == nil {
			return fmt.Errorf("no row for %s %s", topic, group)
		}
		inTPS, _ := strconv.ParseFloat(m[2], 64)
		outTPS, _ := strconv.ParseFloat(m[3], 64)
		in, _ := strconv.Atoi(m[4])
		got, _ := strconv.Atoi(m[5])
		if inTPS <= 0 || outTPS <= 0 || in <= 0 || got <= 0 || in > sent || got > sent {
			return fmt.Errorf("row %q: want rates > 0 and counts in 1..%d", m[0], sent)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("mqadmin statsAll -t %s after %d messages consumed by %s: %v\n%s", topic, sent, group, err, out)
	}

	// brokerConsumeStats -b: a row per consumed queue of the group:
	// #Topic  #Group  #Broker Name  #QID  #Broker Offset  #Consumer Offset  #Diff  #LastTime
	out = run("brokerConsumeStats", "-b", f.broker.Addr)
	rows := regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(topic)+`\s+`+regexp.QuoteMeta(group)+`\s+`+
		regexp.QuoteMeta(f.broker.Name)+`\s+(\d+)\s+(\d+)\s+(\d+)\s+(-?\d+)\s+\d{4}-`).FindAllStringSubmatch(out, -1)
	var bSum, cSum int
	for _, r := range rows {
		b, _ := strconv.Atoi(r[2])
		c, _ := strconv.Atoi(r[3])
		bSum += b
		cSum += c
		if r[4] != "0" {
			t.Errorf("mqadmin brokerConsumeStats: queue %s of %s has diff %s after consumption", r[1], topic, r[4])
		}
	}
	if len(rows) != queues || bSum != sent || cSum != sent || !regexp.MustCompile(`(?m)^Diff Total: \d+`).MatchString(out) {
		t.Errorf("mqadmin brokerConsumeStats -b %s: %d rows of %s/%s with offsets summing to %d and %d, want %d rows, %d and %d, and a Diff Total:\n%s",
			f.broker.Addr, len(rows), topic, group, bSum, cSum, queues, sent, sent, out)
	}

	// consumerStatus -g: the running info of each consumer, which our broker asks of it.
	out = run("consumerStatus", "-g", group)
	if !regexp.MustCompile(`(?m)^1\s+`+regexp.QuoteMeta(clientID)+`\s+V4_9_7\s+\S+`).MatchString(out) ||
		!strings.Contains(out, "Same subscription in the same group of consumer") {
		t.Errorf("mqadmin consumerStatus -g %s: no row for client %s, or no subscription analysis:\n%s", group, clientID, out)
	}
	out = run("consumerStatus", "-g", group, "-i", clientID)
	for _, want := range []string{"#Consumer Subscription#", "Topic: " + topic, "SubExpression: " + prefix + "-tag", "CONSUME_FROM_FIRST_OFFSET"} {
		if !strings.Contains(out, want) {
			t.Errorf("mqadmin consumerStatus -g %s -i %s: no %q in:\n%s", group, clientID, want, out)
		}
	}

	// queryMsgById -g -d: the consumer runs its listener on the message again.
	out = run("queryMsgById", "-i", lastOffsetMsgID, "-g", group, "-d", clientID)
	if !strings.Contains(out, "consumeResult=CR_SUCCESS") {
		t.Errorf("mqadmin queryMsgById -i %s -g %s -d %s: no consumeResult=CR_SUCCESS in:\n%s", lastOffsetMsgID, group, clientID, out)
	}
	// queryCq: queue 0's raw consume-queue entries (QUERY_CONSUME_QUEUE 321).
	out = run("queryCq", "-t", topic, "-q", "0", "-i", "0", "-c", "2", "-b", f.broker.Addr, "-g", group)
	inQueue0 := sent / queues
	if want := fmt.Sprintf("max: %d, min: 0", inQueue0); !strings.Contains(out, want) ||
		strings.Count(out, "physicOffset=") != min(2, inQueue0) || !strings.Contains(out, `"topic":"`+topic+`"`) {
		t.Errorf("mqadmin queryCq -t %s -q 0: want %q, %d entries and the group's subscription in:\n%s", topic, want, min(2, inQueue0), out)
	}
}

// waitConsumerOnline waits until group has a consumer on our broker
// (GET_CONSUMER_CONNECTION_LIST 203) and returns its client id.
func (f *oursFixture) waitConsumerOnline(t *testing.T, group string, p *procs.Proc) string {
	t.Helper()
	var clientID string
	err := eventually(javaClientTimeout, 500*time.Millisecond, func() error {
		if exited, err := p.Exited(); exited {
			return fmt.Errorf("the consumer exited: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := f.rc.Invoke(ctx, f.broker.Addr, remoting.NewRequest(remoting.GetConsumerConnectionList,
			map[string]string{"consumerGroup": group}, nil))
		if err != nil {
			return err
		}
		var cc struct {
			ConnectionSet []struct {
				ClientID string `json:"clientId"`
			} `json:"connectionSet"`
		}
		if resp.Code != codeSuccess {
			return fmt.Errorf("code %d %q", resp.Code, resp.Remark)
		}
		if err := decodeJSON(resp.Body, &cc); err != nil || len(cc.ConnectionSet) == 0 {
			return fmt.Errorf("connections %s (%v)", resp.Body, err)
		}
		clientID = cc.ConnectionSet[0].ClientID
		return nil
	})
	if err != nil {
		t.Fatalf("Java consumer of %s not online on OUR broker: %v\n%s", group, err, lastLines(p.Log(), 30))
	}
	return clientID
}
