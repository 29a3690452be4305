package broker

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/names"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// hostileNames are names a hostile client sends where a topic or group belongs.
var hostileNames = []string{"../../sentinel", "../sentinel", "../../../../../../tmp/rmq-hostile", "/tmp/rmq-hostile",
	"a/b", "..", ".", "a\x00b", "\x00", "%RETRY%../../sentinel", "%DLQ%../sentinel", strings.Repeat("x", 300)}

// hostileBody puts value everywhere the bodies the broker decodes carry a topic or a group.
func hostileBody(value string) []byte {
	q := map[string]any{"topic": value, "brokerName": value, "queueId": 0}
	b, _ := json.Marshal(map[string]any{
		"consumerGroup": value, "groupName": value, "clientId": "c", "clientID": "c", "mqSet": []any{q},
		"consumerDataSet": []any{map[string]any{"groupName": value, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
			"subscriptionDataSet": []any{map[string]any{"topic": value, "subString": "*", "expressionType": "TAG"}}}},
		"producerDataSet":        []any{map[string]any{"groupName": value}},
		"topicConfigTable":       map[string]any{value: map[string]any{"topicName": value, "readQueueNums": 1, "writeQueueNums": 1, "perm": 6}},
		"subscriptionGroupTable": map[string]any{value: map[string]any{"groupName": value}},
		"offsetTable":            map[string]any{value + "@" + value: map[string]any{"0": 1}},
		"topic":                  value,
	})
	return b
}

// hostileFields puts value in every header field that names a topic or a group, V2
// abbreviations included, with plausible values for the rest.
func hostileFields(value string) map[string]string {
	f := map[string]string{"queueId": "0", "queueOffset": "0", "maxMsgNums": "1", "sysFlag": "0", "commitOffset": "0",
		"suspendTimeoutMillis": "100", "subVersion": "0", "subscription": "*", "expressionType": "TAG", "offset": "0",
		"commitLogOffset": "0", "tranStateTableOffset": "0", "commitOrRollback": "8", "delayLevel": "0", "timestamp": "0",
		"key": value, "clientId": "c", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0", "i": "", "j": "0", "k": "false", "m": "false",
		"readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}
	for _, k := range append(append([]string{"a", "b", "c"}, topicFields...), groupFields...) { // a, b, c: V2 send headers
		f[k] = value
	}
	return f
}

// TestHostileNames sends every request code from 0 to 400, in both header encodings,
// with hostile names in every topic and group field and in the body: a directory beside
// the store is untouched, nothing is created outside the store or under a name that is
// not a topic, the store keeps its messages, and the broker goes on serving.
func TestHostileNames(t *testing.T) {
	parent := t.TempDir()
	sentinel := filepath.Join(parent, "sentinel")
	if err := os.MkdirAll(filepath.Join(sentinel, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	tb := startBroker(t, filepath.Join(parent, "store"), nil)
	tb.createTopic("Kept", 1)
	if resp := tb.sendV2("Kept", 0, "", "before"); resp.Code != remoting.Success {
		t.Fatalf("send: %v", resp)
	}

	var wg sync.WaitGroup
	inflight := make(chan struct{}, 64)
	var mu sync.Mutex
	answered, unanswered := 0, 0
	for _, ser := range []remoting.SerializeType{remoting.JSON, remoting.Binary} {
		for code := int16(0); code <= 400; code++ {
			for _, name := range hostileNames {
				req := remoting.NewRequest(code, hostileFields(name), hostileBody(name))
				req.Serialize = ser
				inflight <- struct{}{}
				wg.Add(1)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := tb.cl.InvokeAsync(ctx, tb.addr, req, func(resp *remoting.Command, err error) {
					defer wg.Done()
					defer cancel()
					<-inflight
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						unanswered++ // oneway codes and answers Java does not send
						return
					}
					answered++
					if resp.Code == remoting.Success && isNamedRequest(code) {
						t.Errorf("code %d with %q answered SUCCESS", code, name)
					}
				})
				if err != nil {
					wg.Done()
					cancel()
					<-inflight
					t.Fatalf("code %d: %v", code, err)
				}
			}
		}
	}
	wg.Wait()
	t.Logf("%d requests answered, %d not", answered, unanswered)

	if _, err := os.Stat(filepath.Join(sentinel, "keep")); err != nil {
		t.Fatalf("the directory beside the store: %v", err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 2 {
		t.Fatalf("the store's parent holds %d entries, want store and sentinel", len(ents))
	}
	if _, err := os.Stat("/tmp/rmq-hostile"); err == nil {
		t.Fatal("/tmp/rmq-hostile was created")
	}
	cq := filepath.Join(parent, "store", "consumequeue")
	ents, err := os.ReadDir(cq)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := names.Topic(e.Name()); err != nil && !strings.HasPrefix(e.Name(), ".spare-") {
			t.Errorf("consumequeue/%s exists: %v", e.Name(), err)
		}
	}
	filepath.WalkDir(filepath.Join(parent, "store"), func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.Type()&fs.ModeSymlink != 0 {
			t.Errorf("symlink %s in the store", p)
		}
		return nil
	})

	// Still serving, with the message sent before.
	if resp := tb.sendV2("Kept", 0, "", "after"); resp.Code != remoting.Success {
		t.Fatalf("send after the hostile requests: %v", resp)
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("Kept", 0) == 2 })
	resp := tb.invoke(remoting.PullMessage, pullFields("g", "Kept", 0, 0, pullSubscription, "*"), nil)
	if resp.Code != remoting.Success {
		t.Fatalf("pull after the hostile requests: %v", resp)
	}
}

// isNamedRequest: codes whose handlers act on a topic or group named in the request.
// Every such request with a hostile name must be refused.
func isNamedRequest(code int16) bool {
	switch code {
	case remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage, remoting.PullMessage,
		remoting.ConsumerSendMsgBack, remoting.UpdateAndCreateTopic, remoting.DeleteTopicInBroker,
		remoting.HeartBeat, remoting.LockBatchMQ, remoting.UnlockBatchMQ, remoting.QueryConsumerOffset,
		remoting.UpdateConsumerOffset, remoting.GetMaxOffset, remoting.GetMinOffset:
		return true
	}
	return false
}
