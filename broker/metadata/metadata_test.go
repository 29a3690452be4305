package metadata

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

func opts() TopicOptions {
	return TopicOptions{ClusterName: "DefaultCluster", BrokerName: "broker-a", AutoCreateTopicEnable: true,
		DefaultTopicQueueNums: 8, ClusterTopicEnable: true, BrokerTopicEnable: true}
}

// A Java 4.9 broker's files, as fastjson writes them.
const javaTopics = `{"dataVersion":{"counter":3,"timestamp":1700000000000},"topicConfigTable":{
"TopicTest":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4}}}`
const javaOffsets = `{"offsetTable":{"TopicTest@g1":{0:250,1:251},"%RETRY%g1@g1":{0:0}}}`
const javaGroups = `{"dataVersion":{"counter":1,"timestamp":1700000000000},"subscriptionGroupTable":{"g1":{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,"groupName":"g1","notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}}}`

func TestLoadJavaFiles(t *testing.T) {
	dir := t.TempDir()
	for name, s := range map[string]string{TopicsFile: javaTopics, ConsumerOffsetFile: javaOffsets, SubscriptionGroupFile: javaGroups} {
		os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644)
	}
	topics, err := LoadTopics(dir, opts())
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := topics.Get("TopicTest"); !ok || tc.ReadQueueNums != 4 {
		t.Fatalf("TopicTest: %+v %v", tc, ok)
	}
	for _, sys := range []string{"TBW102", "SCHEDULE_TOPIC_XXXX", "SELF_TEST_TOPIC", "DefaultCluster", "broker-a", "OFFSET_MOVED_EVENT", "RMQ_SYS_TRANS_HALF_TOPIC"} {
		if _, ok := topics.Get(sys); !ok {
			t.Errorf("system topic %s missing", sys)
		}
	}
	if topics.DataVersion().Counter != 3 {
		t.Fatalf("version %+v", topics.DataVersion())
	}
	offs, err := LoadOffsets(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := offs.Query("g1", "TopicTest", 1); got != 251 {
		t.Fatalf("offset %d", got)
	}
	groups, err := LoadGroups(dir)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := groups.Get("g1"); !ok || g.RetryMaxTimes != 16 {
		t.Fatalf("group %+v", g)
	}
}

func TestDamagedFileFallsBackToBak(t *testing.T) {
	dir := t.TempDir()
	o, _ := LoadOffsets(dir)
	o.Commit("g", "t", 0, 10)
	if err := o.Persist(false); err != nil {
		t.Fatal(err)
	}
	o.Commit("g", "t", 0, 20)
	if err := o.Persist(false); err != nil {
		t.Fatal(err)
	}
	// The main file is torn; .bak has the previous write.
	os.WriteFile(filepath.Join(dir, ConsumerOffsetFile), []byte(`{"offsetTable":{"t@g":{0:`), 0o644)
	o2, err := LoadOffsets(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := o2.Query("g", "t", 0); got != 10 {
		t.Fatalf("offset from .bak = %d, want 10", got)
	}
}

func TestAutoCreateFromTBW102(t *testing.T) {
	dir := t.TempDir()
	topics, _ := LoadTopics(dir, opts())
	changed := 0
	topics.OnChange(func() { changed++ })
	tc, created, err := topics.CreateForSend("NewTopic", protocol.DefaultTopic, 4, 0)
	if err != nil || !created || tc.WriteQueueNums != 4 || tc.Perm != 6 || changed != 1 {
		t.Fatalf("%+v %v %v changed=%d", tc, created, err, changed)
	}
	reloaded, _ := LoadTopics(dir, opts())
	if _, ok := reloaded.Get("NewTopic"); !ok {
		t.Fatal("created topic not persisted")
	}
	o := opts()
	o.AutoCreateTopicEnable = false
	strict, _ := LoadTopics(t.TempDir(), o)
	if _, _, err := strict.CreateForSend("Other", protocol.DefaultTopic, 4, 0); err == nil {
		t.Fatal("created without autoCreateTopicEnable")
	}
	if err := topics.Put(protocol.TopicConfig{TopicName: "bad topic"}); err == nil {
		t.Fatal("illegal name accepted")
	}
}

// TestUpdateBumpsUnchanged: Put of an unchanged topic is a no-op (the slave's sync relies
// on it), while Update, the admin's create, bumps the version and notifies every time, as
// Java's updateTopicConfig does, so the name servers take the topic again.
func TestUpdateBumpsUnchanged(t *testing.T) {
	topics, _ := LoadTopics(t.TempDir(), opts())
	changed := 0
	topics.OnChange(func() { changed++ })
	tc := protocol.TopicConfig{TopicName: "Orders", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}
	if err := topics.Update(tc); err != nil {
		t.Fatal(err)
	}
	v1 := topics.DataVersion()
	if err := topics.Put(tc); err != nil || topics.DataVersion() != v1 || changed != 1 {
		t.Fatalf("Put of an unchanged topic: err %v, version %+v -> %+v, %d notifications", err, v1, topics.DataVersion(), changed)
	}
	if err := topics.Update(tc); err != nil || topics.DataVersion().Counter != v1.Counter+1 || changed != 2 {
		t.Fatalf("Update of an unchanged topic: err %v, version %+v -> %+v, %d notifications", err, v1, topics.DataVersion(), changed)
	}
	if err := topics.Update(protocol.TopicConfig{TopicName: "bad topic"}); err == nil {
		t.Fatal("illegal name accepted")
	}
}
