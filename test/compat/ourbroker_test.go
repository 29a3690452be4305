//go:build compat

package compat

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	rmqadmin "github.com/openrmq/rocketmq-operator/pkg/admin"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
	"github.com/openrmq/rocketmq-operator/test/internal/procs"
)

// The tests in this file run the official Java client 4.9.x (DefaultMQProducer,
// DefaultMQPushConsumer, SendBatch, mqadmin) against OUR broker (bin/broker), which
// registers with its own name server of the kind under test (COMPAT_NAMESRV). The Java
// program is test/compat/java/src/org/openrmq/compat/BrokerClient.java.

const (
	javaClientTimeout = 120 * time.Second // one BrokerClient JVM, start to exit
	consumeSeconds    = 60                // BrokerClient consume: wait for all messages
)

// oursFixture is our broker plus a name server it registers with, shared by the tests here.
type oursFixture struct {
	work   string
	java   procs.Java
	ns     *procs.Namesrv
	broker *procs.OurBroker
	rc     *remoting.Client
	adm    *rmqadmin.Client
}

var (
	oursOnce   sync.Once
	oursShared *oursFixture
	oursErr    error
)

// oursEnv returns the shared fixture with our broker, starting it on first use.
func oursEnv(t *testing.T) *oursFixture {
	t.Helper()
	oursOnce.Do(func() { oursShared, oursErr = setupOurs() })
	if oursErr != nil {
		t.Fatalf("starting a name server (%s) and OUR broker: %v", namesrvKind(), oursErr)
	}
	if f := oursShared; f.java.Classes == "" {
		t.Fatal("COMPAT_JAVA_CLASSES is not set: run through hack/compat.sh, which compiles test/compat/java/src")
	}
	t.Cleanup(func() {
		if t.Failed() {
			oursShared.dumpLogs(t)
		}
	})
	return oursShared
}

func setupOurs() (*oursFixture, error) {
	java, err := procs.JavaFromEnv()
	if err != nil {
		return nil, err
	}
	binDir := envOr("COMPAT_BIN_DIR", filepath.Join("..", "..", "bin"))
	bin := filepath.Join(binDir, "broker")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("our broker binary: %w (run `make build` first)", err)
	}
	dir := filepath.Join(workDir, "ours")
	f := &oursFixture{work: dir, java: java}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), namesrvStartTimeout)
	defer cancel()
	switch kind := namesrvKind(); kind {
	case "ours":
		f.ns, err = procs.StartOurNamesrv(ctx, filepath.Join(binDir, "namesrv"), filepath.Join(dir, "namesrv"))
	case "java":
		f.ns, err = procs.StartJavaNamesrv(ctx, java, filepath.Join(dir, "java-namesrv"))
	default:
		err = fmt.Errorf("COMPAT_NAMESRV=%q: want ours or java", kind)
	}
	if err != nil {
		return nil, err
	}
	bctx, bcancel := context.WithTimeout(context.Background(), brokerStartTimeout)
	defer bcancel()
	f.broker, err = procs.StartOurBroker(bctx, bin, filepath.Join(dir, "broker"), procs.BrokerOpts{
		Cluster:     "OursCluster",
		Name:        "ours-broker-a",
		NamesrvAddr: f.ns.Addr,
		Conf: map[string]string{
			// Topics are created explicitly, so that a route proves the broker registered them.
			"autoCreateTopicEnable": "false",
			// Retries (delay level 3 + reconsumeTimes) and delayed messages come after 1s.
			"messageDelayLevel":    strings.TrimSpace(strings.Repeat("1s ", 18)),
			"enablePropertyFilter": "true", // SQL92 subscriptions
			// Small commit log segments, so that the bulk test (8 MB) rolls over several.
			"mappedFileSizeCommitLog": fmt.Sprint(2 << 20),
			"maxMessageSize":          fmt.Sprint(1 << 20),
			// Half messages left UNKNOW are checked back after 1-2s.
			"transactionCheckInterval": "1000",
			"transactionTimeOut":       "1000",
		},
	})
	if err != nil {
		f.stop()
		return nil, err
	}
	f.rc = remoting.NewClient(remoting.ClientConfig{})
	f.adm = rmqadmin.New(f.rc)
	fmt.Printf("compat: OUR broker %s up at %s (fast channel %s) with the %s name server %s after %s (log %s)\n",
		f.broker.Name, f.broker.Addr, f.broker.FastAddr, f.ns.Kind, f.ns.Addr, time.Since(start).Round(time.Millisecond), f.broker.LogPath)
	return f, nil
}

func (f *oursFixture) stop() {
	if f.rc != nil {
		f.rc.Close()
	}
	if f.broker != nil {
		f.broker.Stop(procs.DefaultStopGrace)
	}
	if f.ns != nil {
		f.ns.Stop(procs.DefaultStopGrace)
	}
}

func (f *oursFixture) dumpLogs(t *testing.T) {
	t.Helper()
	for _, p := range []*procs.Proc{nsProcOf(f.ns), brokerProcOf(f.broker)} {
		if p == nil {
			continue
		}
		if exited, err := p.Exited(); exited {
			t.Logf("%s EXITED: %v", p.Name, err)
		}
		t.Logf("---- last lines of %s (%s) ----\n%s", p.Name, p.LogPath, p.Tail(40))
	}
}

func nsProcOf(ns *procs.Namesrv) *procs.Proc {
	if ns == nil {
		return nil
	}
	return ns.Proc
}

func brokerProcOf(b *procs.OurBroker) *procs.Proc {
	if b == nil {
		return nil
	}
	return b.Proc
}

// createTopic creates topic on our broker with the official Go admin client
// (UPDATE_AND_CREATE_TOPIC 17) and waits until the name server routes it to our broker.
func (f *oursFixture) createTopic(t *testing.T, topic string, queues int) {
	t.Helper()
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{f.ns.Addr})))
	if err != nil {
		t.Fatalf("admin.NewAdmin: %v", err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := adm.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(f.broker.Addr),
		admin.WithReadQueueNums(queues), admin.WithWriteQueueNums(queues)); err != nil {
		t.Fatalf("UPDATE_AND_CREATE_TOPIC (17) %s on OUR broker %s: %v", topic, f.broker.Addr, err)
	}
	err = eventually(routeTimeout, 250*time.Millisecond, func() error {
		r, err := getRoute(t, f.ns.Addr, topic)
		if err != nil {
			return err
		}
		return checkRoute(r, f.broker.Name, f.broker.Cluster, f.broker.Addr, queues)
	})
	if err != nil {
		t.Fatalf("after creating %s on OUR broker (which should then send REGISTER_BROKER 103), the name server's route: %v", topic, err)
	}
}

// javaClient runs BrokerClient with args in the JVM j and returns its output and its
// directory (the client log is logs/rocketmq_client.log there); it fails the test unless
// the program printed "RESULT OK" and exited 0.
func (f *oursFixture) javaClient(t *testing.T, j procs.Java, what string, args ...string) (out, dir string) {
	t.Helper()
	return f.javaProgram(t, j, "BrokerClient", what, args...)
}

// javaProgram is javaClient for any program of test/compat/java/src/org/openrmq/compat.
func (f *oursFixture) javaProgram(t *testing.T, j procs.Java, class, what string, args ...string) (out, dir string) {
	t.Helper()
	return runJavaProgram(t, j, f.work, "OUR broker "+f.broker.Addr, class, what, args...)
}

// runJavaProgram runs a program of test/compat/java/src/org/openrmq/compat in a directory of
// its own under work; it fails the test unless the program printed "RESULT OK" and exited 0.
// against names the broker in failure messages.
func runJavaProgram(t *testing.T, j procs.Java, work, against, class, what string, args ...string) (out, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), javaClientTimeout)
	defer cancel()
	name := uniq("java-" + args[0])
	dir = filepath.Join(work, "java-clients", name)
	start := time.Now()
	out, err := j.RunMain(ctx, dir, name, "org.openrmq.compat."+class, args...)
	if err != nil || !strings.Contains(out, "RESULT OK") {
		t.Fatalf("%s: Java %s %s against %s failed after %s (%v).\nJava client log: %s\nProgram output (last lines):\n%s",
			what, class, strings.Join(args, " "), against, time.Since(start).Round(time.Millisecond), err,
			filepath.Join(dir, "logs", "rocketmq_client.log"), lastLines(out, 40))
	}
	t.Logf("%s: Java %s %s OK in %s: %s", what, class, args[0], time.Since(start).Round(time.Millisecond), resultLine(out))
	return out, dir
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func resultLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "RESULT ") {
			return l
		}
	}
	return ""
}

// checkCommitted checks through GET_CONSUME_STATS (pkg/admin) that group has committed, on
// our broker, every message of topic (consumer offset = broker offset in each queue) and that
// the topic holds want messages.
func (f *oursFixture) checkCommitted(t *testing.T, group, topic string, queues int, want int64) {
	t.Helper()
	var last protocol.ConsumeStats
	err := eventually(15*time.Second, 500*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := f.adm.ConsumeStats(ctx, f.broker.Addr, group, topic)
		if err != nil {
			return fmt.Errorf("GET_CONSUME_STATS (208) group %s topic %s: %w", group, topic, err)
		}
		last = s
		var brokerSum, consumerSum int64
		for mq, w := range s.OffsetTable {
			if mq.Topic != topic {
				continue
			}
			brokerSum += w.BrokerOffset
			consumerSum += w.ConsumerOffset
			if w.ConsumerOffset != w.BrokerOffset {
				return fmt.Errorf("queue %d: consumer offset %d, broker offset %d", mq.QueueID, w.ConsumerOffset, w.BrokerOffset)
			}
		}
		if brokerSum != want || consumerSum != want {
			return fmt.Errorf("sum of broker offsets %d, of consumer offsets %d over %d queues, want %d and %d", brokerSum, consumerSum, len(s.OffsetTable), want, want)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("offsets of group %s on OUR broker after the Java push consumer finished: %v\nlast ConsumeStats: %+v", group, err, last)
	}
	// QUERY_CONSUMER_OFFSET (14) per queue, as a restarted Java consumer does.
	var sum int64
	for q := range queues {
		qctx, qcancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd, err := f.rc.Invoke(qctx, f.broker.Addr, remoting.NewRequest(remoting.QueryConsumerOffset,
			map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(q)}, nil))
		qcancel()
		if err != nil {
			t.Fatalf("QUERY_CONSUMER_OFFSET (14) %s/%s/%d: %v", group, topic, q, err)
		}
		if cmd.Code != codeSuccess {
			// 22 QUERY_NOT_FOUND is right for a queue that got no message.
			if cmd.Code == codeQueryNotFound {
				continue
			}
			t.Fatalf("QUERY_CONSUMER_OFFSET (14) %s/%s/%d: code %d remark %q", group, topic, q, cmd.Code, cmd.Remark)
		}
		off, err := strconv.ParseInt(cmd.Field("offset"), 10, 64)
		if err != nil {
			t.Fatalf("QUERY_CONSUMER_OFFSET (14) %s/%s/%d: offset %q: %v", group, topic, q, cmd.Field("offset"), err)
		}
		sum += off
	}
	if sum != want {
		t.Errorf("QUERY_CONSUMER_OFFSET (14) over the %d queues of %s for group %s: offsets sum to %d, want %d", queues, topic, group, sum, want)
	}
}

var (
	sentOK       = regexp.MustCompile(`(?m)^SENT \d+ SEND_OK `)
	recv0SysFlag = regexp.MustCompile(`(?m)^RECV 0 .* sysFlag=(\d+) `)
	sent1IDs     = regexp.MustCompile(`(?m)^SENT 1 SEND_OK msgId=(\S+) offsetMsgId=(\S+) `)
	channelsLine = regexp.MustCompile(`(?m)^CHANNELS (.*)$`)
)

// clientVariant is a Java client configuration: remoting serialization and VIP channel.
type clientVariant struct {
	name      string
	jvmArgs   []string
	serialize string // what RemotingCommand reports: JSON or ROCKETMQ
	vip       bool
}

var clientVariants = []clientVariant{
	{name: "json", serialize: "JSON"},
	{name: "rocketmq-binary", jvmArgs: []string{"-Drocketmq.serialize.type=ROCKETMQ"}, serialize: "ROCKETMQ"},
	{name: "json-vip-channel", jvmArgs: []string{"-Dcom.rocketmq.sendMessageWithVIPChannel=true"}, serialize: "JSON", vip: true},
}

// TestOurBrokerJavaProducerPushConsumer: the Java producer sends messages with tags, keys,
// user properties (non-ASCII) and one compressed body through the name server to OUR
// broker; a Java push consumer (clustering) receives each intact and commits offsets, which
// our broker reports (GET_CONSUME_STATS, QUERY_CONSUMER_OFFSET); the same group restarted
// gets only a message sent after the restart, none of the committed ones. Once per
// serialization (JSON, ROCKETMQ binary headers) and with the VIP channel (the client then
// sends to listenPort-2). After the JSON round: mqadmin topicList, topicStatus,
// consumerProgress, queryMsgByKey and queryMsgById against our cluster.
func TestOurBrokerJavaProducerPushConsumer(t *testing.T) {
	f := oursEnv(t)
	const n, queues = 10, 4
	for _, v := range clientVariants {
		t.Run(v.name, func(t *testing.T) {
			j := f.java.WithJVMArgs(v.jvmArgs...)
			topic := uniq("compat_ours_" + strings.ReplaceAll(v.name, "-", "_"))
			f.createTopic(t, topic, queues)
			prefix := uniq("p")
			out, dir := f.javaClient(t, j, "send", "send", f.ns.Addr, topic, prefix, strconv.Itoa(n))
			sendOut := out
			if !strings.Contains(out, "SERIALIZE "+v.serialize) {
				t.Fatalf("the Java client did not use %s serialization: %s", v.serialize, lastLines(out, 20))
			}
			if !strings.Contains(out, fmt.Sprintf("VIP %t", v.vip)) {
				t.Fatalf("the Java producer's vipChannelEnabled is not %t: %s", v.vip, lastLines(out, 20))
			}
			if got := len(sentOK.FindAllString(out, -1)); got != n {
				t.Fatalf("%d SEND_OK results, want %d:\n%s", got, n, out)
			}
			// With vipChannelEnabled the producer sends to listenPort-2 only (and heartbeats
			// to listenPort); without, it never connects to listenPort-2.
			if m := channelsLine.FindStringSubmatch(out); m == nil {
				t.Errorf("no CHANNELS line in the producer output:\n%s", lastLines(out, 20))
			} else if fast := strings.Contains(m[1], f.broker.FastAddr); fast != v.vip {
				t.Errorf("the producer with vipChannelEnabled=%t has connections to %s; want one to the fast channel %s (listenPort-2): %t; client log %s",
					v.vip, m[1], f.broker.FastAddr, v.vip, filepath.Join(dir, "logs", "rocketmq_client.log"))
			}

			group := uniq("compat_ours_group")
			out, _ = f.javaClient(t, j, "push consume", "consume", f.ns.Addr, topic, prefix, group, strconv.Itoa(n), strconv.Itoa(consumeSeconds))
			// Message 0's body is over the producer's compressMsgBodyOverHowmuch (4 KiB): it
			// was sent zlib-compressed with sysFlag bit 0x1, which the broker must keep.
			if m := recv0SysFlag.FindStringSubmatch(out); m == nil {
				t.Errorf("no RECV 0 line in the consumer output:\n%s", lastLines(out, 20))
			} else if fl, _ := strconv.Atoi(m[1]); fl&1 == 0 {
				t.Errorf("message 0 (6 KB body, compressed by the Java producer) came back with sysFlag %d, without the COMPRESSED_FLAG 0x1", fl)
			}
			f.checkCommitted(t, group, topic, queues, n)
			// The group restarted must get only the fresh message n, not 0..n-1 again.
			f.javaClient(t, j, "push consume after a restart of the group", "consume", f.ns.Addr, topic, prefix, group, "0", strconv.Itoa(consumeSeconds), strconv.Itoa(n))
			f.checkCommitted(t, group, topic, queues, n+1)

			if v.name == "json" {
				m := sent1IDs.FindStringSubmatch(sendOut)
				if m == nil {
					t.Fatalf("no SENT 1 line in the producer output:\n%s", lastLines(sendOut, 20))
				}
				t.Run("mqadmin", func(t *testing.T) { f.checkMQAdmin(t, topic, group, queues, n+1, prefix+"-key-1", m[1], m[2]) })
			}
		})
	}
}

// TestOurBrokerJavaSendBatch: a Java DefaultMQProducer.send(Collection) (SEND_BATCH_MESSAGE
// 320) to OUR broker, read back intact by a Java push consumer; per serialization.
func TestOurBrokerJavaSendBatch(t *testing.T) {
	f := oursEnv(t)
	const n, queues = 5, 2
	for _, v := range clientVariants[:2] {
		t.Run(v.name, func(t *testing.T) {
			j := f.java.WithJVMArgs(v.jvmArgs...)
			topic := uniq("compat_ours_batch")
			f.createTopic(t, topic, queues)
			prefix := uniq("b")
			out, _ := f.javaClient(t, j, "send batch", "batch", f.ns.Addr, topic, prefix, strconv.Itoa(n))
			if !strings.Contains(out, "SERIALIZE "+v.serialize) {
				t.Fatalf("the Java client did not use %s serialization: %s", v.serialize, lastLines(out, 20))
			}
			group := uniq("compat_ours_batch_group")
			f.javaClient(t, j, "push consume of the batch", "consume", f.ns.Addr, topic, prefix, group, strconv.Itoa(n), strconv.Itoa(consumeSeconds))
			f.checkCommitted(t, group, topic, queues, n)
		})
	}
}

// TestOurBrokerFastChannel: like a Java broker, ours listens on the fast (VIP) channel
// listenPort-2, which 4.x clients with vipChannelEnabled send to.
func TestOurBrokerFastChannel(t *testing.T) {
	f := oursEnv(t)
	c, err := net.DialTimeout("tcp", f.broker.FastAddr, 5*time.Second)
	if err != nil {
		t.Fatalf("OUR broker (listenPort %d) does not accept connections on the fast channel %s (listenPort-2): %v", f.broker.Port, f.broker.FastAddr, err)
	}
	c.Close()
	// A request on the fast channel is served like one on listenPort.
	fctx, fcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer fcancel()
	resp, err := f.rc.Invoke(fctx, f.broker.FastAddr, remoting.NewRequest(remoting.QueryConsumerOffset,
		map[string]string{"consumerGroup": uniq("compat_no_group"), "topic": uniq("compat_no_topic"), "queueId": "0"}, nil))
	if err != nil {
		t.Fatalf("QUERY_CONSUMER_OFFSET (14) on the fast channel %s: %v", f.broker.FastAddr, err)
	}
	t.Logf("fast channel %s answers QUERY_CONSUMER_OFFSET for an unknown group with code %d (%q)", f.broker.FastAddr, resp.Code, resp.Remark)
}

// checkMQAdmin runs the Java admin tool (rocketmq-tools) against our cluster: topicList,
// topicStatus -t and consumerProgress -g after topic's n messages were consumed by group,
// then queryMsgByKey and queryMsgById for a message with key, msgId (UNIQ_KEY) and
// offsetMsgId (store host + commit log offset).
func (f *oursFixture) checkMQAdmin(t *testing.T, topic, group string, queues, n int, key, msgID, offsetMsgID string) {
	run := func(args ...string) string {
		t.Helper()
		return runMQAdmin(t, f.java, filepath.Join(f.work, "mqadmin"), f.ns.Addr, args...)
	}
	// topicList: GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206).
	out := run("topicList")
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(topic) + `\s*$`).MatchString(out) {
		t.Errorf("mqadmin topicList does not list %s:\n%s", topic, out)
	}

	// topicStatus: GET_TOPIC_STATS_INFO (202) from our broker, one row per queue:
	// #Broker Name  #QID  #Min Offset  #Max Offset  #Last Updated
	out = run("topicStatus", "-t", topic)
	rows := regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(f.broker.Name)+`\s+(\d+)\s+(-?\d+)\s+(-?\d+)`).FindAllStringSubmatch(out, -1)
	var maxSum int
	for _, r := range rows {
		m, _ := strconv.Atoi(r[3])
		maxSum += m
	}
	if len(rows) != queues || maxSum != n {
		t.Errorf("mqadmin topicStatus -t %s: %d queue rows of broker %s with max offsets summing to %d, want %d rows summing to %d:\n%s",
			topic, len(rows), f.broker.Name, maxSum, queues, n, out)
	}

	// consumerProgress -g: GET_CONSUME_STATS (208) from our broker, one row per queue:
	// #Topic  #Broker Name  #QID  #Broker Offset  #Consumer Offset  #Client IP  #Diff  #LastTime
	out = run("consumerProgress", "-g", group)
	rows = regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(topic)+`\s+`+regexp.QuoteMeta(f.broker.Name)+`\s+(\d+)\s+(-?\d+)\s+(-?\d+)`).FindAllStringSubmatch(out, -1)
	var bSum, cSum int
	for _, r := range rows {
		b, _ := strconv.Atoi(r[2])
		c, _ := strconv.Atoi(r[3])
		bSum += b
		cSum += c
	}
	if len(rows) != queues || bSum != n || cSum != n || !regexp.MustCompile(`Diff Total:\s*0\b`).MatchString(out) {
		t.Errorf("mqadmin consumerProgress -g %s: %d rows of %s/%s with broker offsets summing to %d and consumer offsets to %d, want %d rows, %d and %d, and Diff Total: 0:\n%s",
			group, len(rows), topic, f.broker.Name, bSum, cSum, queues, n, n, out)
	}

	// queryMsgByKey: QUERY_MESSAGE (12) on our broker's index.
	out = run("queryMsgByKey", "-t", topic, "-k", key)
	if !strings.Contains(out, msgID) && !strings.Contains(out, offsetMsgID) {
		t.Errorf("mqadmin queryMsgByKey -t %s -k %s does not list the message (msgId %s, offsetMsgId %s):\n%s", topic, key, msgID, offsetMsgID, out)
	}

	// queryMsgById: VIEW_MESSAGE_BY_ID (33) at the offsetMsgId's commit log offset.
	out = run("queryMsgById", "-i", offsetMsgID)
	for _, want := range []string{topic, key, "compat_text"} {
		if !strings.Contains(out, want) {
			t.Errorf("mqadmin queryMsgById -i %s: no %q in:\n%s", offsetMsgID, want, out)
		}
	}
}

// TestOurBrokerJavaFeatures: more of the Java client against OUR broker, each a producer
// and a push consumer in one JVM (test/compat/java/src/org/openrmq/compat/BrokerFeatures.java):
// retry after RECONSUME_LATER (CONSUMER_SEND_MSG_BACK 36, %RETRY% topic, delay levels),
// orderly consumption (LOCK_BATCH_MQ 41), a delayed message (SCHEDULE_TOPIC_XXXX), async
// and oneway sends, a SQL92 subscription (CHECK_CLIENT_CONFIG 46, enablePropertyFilter) and
// DefaultLitePullConsumer with assign/seek, and 8 MB of 200 KB messages over several 2 MB
// commit log segments, and transactional messages (END_TRANSACTION 37, CHECK_TRANSACTION_STATE
// 39). Each with JSON and ROCKETMQ binary headers (bulk with JSON only).
func TestOurBrokerJavaFeatures(t *testing.T) {
	f := oursEnv(t)
	for _, tc := range []struct {
		mode string
		n    int
	}{
		{"retry", 1},
		{"orderly", 10},
		{"delay", 1},
		{"async", 5},
		{"sql", 6},
		{"lite", 6},
		{"bulk", 40},
		{"txn", 3},
	} {
		for _, v := range clientVariants[:2] {
			if tc.mode == "bulk" && v.serialize != "JSON" {
				continue // what it tests is the store, not the headers
			}
			t.Run(tc.mode+"/"+v.name, func(t *testing.T) {
				topic := uniq("compat_ours_" + tc.mode)
				f.createTopic(t, topic, 2)
				group := uniq("compat_ours_" + tc.mode + "_group")
				out, _ := f.javaProgram(t, f.java.WithJVMArgs(v.jvmArgs...), "BrokerFeatures", tc.mode, tc.mode, f.ns.Addr, topic, uniq("f"), group, strconv.Itoa(tc.n))
				if !strings.Contains(out, "SERIALIZE "+v.serialize) {
					t.Fatalf("the Java client did not use %s serialization: %s", v.serialize, lastLines(out, 20))
				}
			})
		}
	}
}
