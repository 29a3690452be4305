package schedule

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/broker/store/storetest"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// testLevels are short delay levels. The store parses whole units only
// (s, m, h, d: as Java), so 1 s is the shortest level.
const testLevels = "1s 2s 3s"

func storeConfig(root string) store.Config {
	cfg := storetest.Config(root)
	cfg.MessageDelayLevel = testLevels
	return cfg
}

func openStore(t testing.TB, root string) *store.Store {
	t.Helper()
	return storetest.Open(t, storeConfig(root))
}

func newService(t testing.TB, st Store, root string) *Service {
	t.Helper()
	svc, err := New(st, Config{ConfigDir: filepath.Join(root, "config"), Logger: storetest.Logger(t)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return svc
}

// testStart is where the settable clocks of these tests begin.
var testStart = time.Date(2030, 6, 10, 9, 22, 0, 0, time.UTC)

// openStoreAt and newServiceAt share clk: store timestamps, and so due
// times, move only when the test advances it.
func openStoreAt(t testing.TB, root string, clk *storetest.Clock) *store.Store {
	t.Helper()
	cfg := storeConfig(root)
	cfg.Now = clk.Now
	return storetest.Open(t, cfg)
}

func newServiceAt(t testing.TB, st Store, root string, clk *storetest.Clock) *Service {
	t.Helper()
	svc, err := New(st, Config{ConfigDir: filepath.Join(root, "config"), Now: clk.Now, Logger: storetest.Logger(t)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return svc
}

// waitFile waits until path holds want.
func waitFile(t testing.TB, path, want string) {
	t.Helper()
	deadline := time.Now().Add(storetest.Patience)
	for {
		b, err := os.ReadFile(path)
		if err == nil && string(b) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %q after %v, want %q (err %v)", path, b, storetest.Patience, want, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// putDelayed sends like the broker: ToSchedule, then PutMessage.
func putDelayed(t testing.TB, st *store.Store, topic string, qid int32, body string, level int) *store.PutResult {
	t.Helper()
	m := storetest.Message(topic, qid, body, map[string]string{message.PropertyDelayTimeLevel: strconv.Itoa(level), message.PropertyTags: "TagA"})
	if ok, err := ToSchedule(m, st.MaxDelayLevel()); !ok || err != nil {
		t.Fatalf("ToSchedule: %v %v", ok, err)
	}
	r, err := st.PutMessage(m)
	if err != nil {
		t.Fatalf("PutMessage: %v", err)
	}
	return r
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
