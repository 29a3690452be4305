package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// brokerTopics lists the broker's topics (GET_ALL_TOPIC_CONFIG).
func brokerTopics(t *testing.T, b *brokerProc) map[string]json.RawMessage {
	t.Helper()
	return topicTable(t, invoke(t, b.addr, remoting.GetAllTopicConfig, nil, nil))
}

// topicTable decodes a GET_ALL_TOPIC_CONFIG answer: topic -> its config.
func topicTable(t *testing.T, resp *remoting.Command) map[string]json.RawMessage {
	t.Helper()
	if resp.Code != remoting.Success {
		t.Fatalf("GET_ALL_TOPIC_CONFIG: %d %s", resp.Code, resp.Remark)
	}
	var w struct {
		TopicConfigTable map[string]json.RawMessage `json:"topicConfigTable"`
	}
	if err := json.Unmarshal(resp.Body, &w); err != nil {
		t.Fatal(err)
	}
	return w.TopicConfigTable
}

// TestAdminTopics: the Go admin client creates a topic on the broker, it is listed by
// the broker and the name server, and deleting it removes it from both.
func TestAdminTopics(t *testing.T) {
	const topic = "E2EAdminTopic"
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{namesrvAddr})))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = adm.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(shared.addr),
		admin.WithReadQueueNums(3), admin.WithWriteQueueNums(3), admin.WithPerm(6))
	if err != nil {
		t.Fatal(err)
	}
	var tc struct {
		ReadQueueNums, WriteQueueNums, Perm int
	}
	raw, ok := brokerTopics(t, shared)[topic]
	if !ok {
		t.Fatal("created topic not listed by the broker")
	}
	json.Unmarshal(raw, &tc)
	if tc.ReadQueueNums != 3 || tc.WriteQueueNums != 3 || tc.Perm != 6 {
		t.Fatalf("topic config %s", raw)
	}
	waitRoute(t, topic, true)
	list, err := adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range list.TopicList {
		found = found || n == topic
	}
	if !found {
		t.Fatalf("name server topic list lacks %s", topic)
	}
	err = adm.DeleteTopic(ctx, admin.WithTopicDelete(topic), admin.WithBrokerAddrDelete(shared.addr),
		admin.WithClusterName("E2ECluster"), admin.WithNameSrvAddr([]string{namesrvAddr}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := brokerTopics(t, shared)[topic]; ok {
		t.Fatal("deleted topic still listed by the broker")
	}
	waitRoute(t, topic, false)
}

// resetOffset asks the broker to move group's offsets in topic to timestamp.
func resetOffset(t *testing.T, b *brokerProc, group, topic string, ts int64) {
	t.Helper()
	resp := invoke(t, b.addr, remoting.InvokeBrokerToResetOffset, map[string]string{
		"topic": topic, "group": group, "timestamp": strconv.FormatInt(ts, 10), "isForce": "true"}, nil)
	if resp.Code != remoting.Success {
		t.Fatalf("reset offset: %d %s", resp.Code, resp.Remark)
	}
}

// TestResetOffsetByTimestamp: INVOKE_BROKER_TO_RESET_OFFSET moves a group back to the
// first message stored at a time, for an offline group (its next consumer starts there)
// and for an online one (its consumers are told and consume again from there).
func TestResetOffsetByTimestamp(t *testing.T) {
	t.Parallel()
	topic := runName(t, "E2EReset")
	createTopic(t, shared, topic, 2)
	p := newProducer(t, "E2EResetP")
	for i := range 10 {
		sendSync(t, p, msg(topic, fmt.Sprintf("before-%d", i), ""))
	}
	time.Sleep(20 * time.Millisecond)
	ts := time.Now().UnixMilli()
	time.Sleep(20 * time.Millisecond)
	for i := range 10 {
		sendSync(t, p, msg(topic, fmt.Sprintf("after-%d", i), ""))
	}

	t.Run("offline", func(t *testing.T) {
		t.Parallel()
		group := runName(t, "E2EResetOfflineG")
		// The group consumed everything, then went away.
		c, col := startPush(t, group, topic, pushOpts{from: consumer.ConsumeFromFirstOffset})
		eventually(t, 30*time.Second, "20 messages consumed", func() bool { return col.distinct() == 20 })
		c.Shutdown()
		eventually(t, 10*time.Second, "offsets committed", func() bool { return sum(committed(t, shared, group, topic, 2)) == 20 })
		resetOffset(t, shared, group, topic, ts)
		if got := committed(t, shared, group, topic, 2); sum(got) != 10 {
			t.Fatalf("offsets after reset %v, want a total of 10", got)
		}
		_, col2 := startPush(t, group, topic, pushOpts{from: consumer.ConsumeFromFirstOffset})
		eventually(t, 30*time.Second, "the 10 later messages again", func() bool { return col2.distinct() == 10 })
		col2.mu.Lock()
		defer col2.mu.Unlock()
		for body := range col2.msgs {
			if body[:6] != "after-" {
				t.Errorf("after the reset, received %s", body)
			}
		}
	})
	t.Run("online", func(t *testing.T) {
		t.Parallel()
		group := runName(t, "E2EResetOnlineG")
		_, col := startPush(t, group, topic, pushOpts{from: consumer.ConsumeFromFirstOffset})
		eventually(t, 30*time.Second, "20 messages consumed", func() bool { return col.distinct() == 20 })
		time.Sleep(time.Second)
		before := col.deliveries()
		resetOffset(t, shared, group, topic, ts)
		// The Go client waits 10 s before applying a reset, then picks the queues up
		// again at its next rebalance (every 20 s).
		deadline := time.Now().Add(60 * time.Second)
		for col.deliveries() < before+10 {
			if time.Now().After(deadline) {
				t.Fatalf("after 60s, %d of the 10 later messages delivered again; committed offsets %v",
					col.deliveries()-before, committed(t, shared, group, topic, 2))
			}
			time.Sleep(20 * time.Millisecond)
		}
		col.mu.Lock()
		defer col.mu.Unlock()
		if col.count != before+10 {
			t.Errorf("%d deliveries after the reset, want 10", col.count-before)
		}
	})
}

// TestBadConfigRefused: a broker.conf value that does not parse stops the start with a
// message naming the key; an unknown key only warns.
func TestBadConfigRefused(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "broker.conf")
	os.WriteFile(conf, []byte("brokerName=bad\nlistenPort=notaport\nstorePathRootDir="+dir+"\n"), 0o644)
	out, err := exec.Command(filepath.Join(binDir, "broker"), "-c", conf).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "listenPort") {
		t.Fatalf("bad listenPort: err %v, output %s", err, out)
	}
	os.WriteFile(conf, []byte("brokerName=ok\nlistenPort=10911\nnoSuchKey=1\nstorePathRootDir="+dir+"\n"), 0o644)
	out, err = exec.Command(filepath.Join(binDir, "broker"), "-c", conf, "-n", "127.0.0.1:1", "-p").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "noSuchKey") || !strings.Contains(string(out), "namesrvAddr=127.0.0.1:1") {
		t.Fatalf("unknown key: err %v, output %s", err, out)
	}
}
