package schedule

import (
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// testLevels are short delay levels. The store parses whole units only
// (s, m, h, d: as Java), so 1 s is the shortest level.
const testLevels = "1s 2s 3s"

func storeConfig(root string) store.Config {
	cfg := store.DefaultConfig(root)
	cfg.MappedFileSizeCommitLog = 256 << 10
	cfg.MappedFileSizeConsumeQueue = 100 * store.CQEntrySize
	cfg.MaxMessageSize = 16 << 10
	cfg.MaxHashSlotNum = 64
	cfg.MaxIndexNum = 256
	cfg.MessageDelayLevel = testLevels
	cfg.DiskUsage = func(string) (float64, error) { return 0.1, nil }
	cfg.CleanResourceInterval = time.Hour
	return cfg
}

func openStore(t testing.TB, root string) *store.Store {
	t.Helper()
	s, err := store.Open(storeConfig(root))
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	return s
}

func newService(t testing.TB, st Store, root string) *Service {
	t.Helper()
	svc, err := New(st, Config{ConfigDir: filepath.Join(root, "config"), Logf: t.Logf})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return svc
}

func userMsg(topic string, qid int32, body string, props map[string]string) *message.Message {
	p, err := message.EncodeProperties(props)
	if err != nil {
		panic(err)
	}
	return &message.Message{
		Topic: topic, QueueID: qid, Body: []byte(body), Properties: p,
		BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("10.1.2.3:4567"),
	}
}

// putDelayed sends like the broker: ToSchedule, then PutMessage.
func putDelayed(t testing.TB, st *store.Store, topic string, qid int32, body string, level int) *store.PutResult {
	t.Helper()
	m := userMsg(topic, qid, body, map[string]string{message.PropertyDelayTimeLevel: strconv.Itoa(level), message.PropertyTags: "TagA"})
	if ok, err := ToSchedule(m, st.MaxDelayLevel()); !ok || err != nil {
		t.Fatalf("ToSchedule: %v %v", ok, err)
	}
	r, err := st.PutMessage(m)
	if err != nil {
		t.Fatalf("PutMessage: %v", err)
	}
	return r
}

// readQueue returns every message of topic/qid.
func readQueue(t testing.TB, st *store.Store, topic string, qid int32) []*message.MessageExt {
	t.Helper()
	var out []*message.MessageExt
	for off := int64(0); ; {
		r := st.GetMessage(topic, qid, off, 32, 1<<20, nil)
		if r.Status != store.Found {
			r.Release()
			return out
		}
		for _, b := range r.Messages {
			m, err := message.DecodeRecord(b, true)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		off = r.NextBeginOffset
		r.Release()
	}
}

// waitCount polls until topic/qid holds n messages.
func waitCount(t testing.TB, st *store.Store, topic string, qid int32, n int, within time.Duration) []*message.MessageExt {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := readQueue(t, st, topic, qid)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%d: %d messages after %v, want %d", topic, qid, len(got), within, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
