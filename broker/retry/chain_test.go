package retry

import (
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/schedule"
	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/broker/store/storetest"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// The whole send-back path as the broker wires it: look the original up,
// Build, ToSchedule, PutMessage; the schedule service then delivers it to
// %RETRY%<group>.
func TestSendBackThroughSchedule(t *testing.T) {
	root := t.TempDir()
	cfg := store.DefaultConfig(root)
	cfg.MappedFileSizeCommitLog = 256 << 10
	cfg.MappedFileSizeConsumeQueue = 100 * store.CQEntrySize
	cfg.MaxMessageSize = 16 << 10
	cfg.MaxHashSlotNum, cfg.MaxIndexNum = 64, 256
	cfg.MessageDelayLevel = "1s 2s 3s"
	cfg.DiskUsage = func(string) (float64, error) { return 0.1, nil }
	st, err := store.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc, err := schedule.New(st, schedule.Config{ConfigDir: filepath.Join(root, "config"), Logger: storetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	svc.Start()
	defer svc.Close()

	props, _ := message.EncodeProperties(map[string]string{message.PropertyTags: "A", message.PropertyUniqClientMessageIDKey: "U"})
	put, err := st.PutMessage(&message.Message{Topic: "Orders", QueueID: 0, Body: []byte("b"), Properties: props, BornTimestamp: 1, BornHost: netip.MustParseAddrPort("10.0.0.1:1")})
	if err != nil {
		t.Fatal(err)
	}
	orig, err := st.GetMessageByOffset(put.PhysicalOffset)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Build(orig, Request{Group: "g", DelayLevel: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := schedule.ToSchedule(res.Message, st.MaxDelayLevel()); !ok || err != nil {
		t.Fatalf("ToSchedule %v %v", ok, err)
	}
	if _, err := st.PutMessage(res.Message); err != nil {
		t.Fatal(err)
	}
	// Delivered with the DELAY it was scheduled with, as 4.9.7 stores it.
	deadline := time.Now().Add(storetest.Patience)
	for {
		r := st.GetMessage("%RETRY%g", 0, 0, 1, 0, nil)
		if r.Status == store.Found {
			m, err := message.DecodeRecord(r.Messages[0], true)
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			if m.ReconsumeTimes != 1 || m.Property(message.PropertyRetryTopic) != "Orders" ||
				m.Property(message.PropertyOriginMessageID) != put.MsgID() || m.Property(message.PropertyDelayTimeLevel) != "1" {
				t.Fatalf("retry message %+v", m)
			}
			return
		}
		r.Release()
		if time.Now().After(deadline) {
			t.Fatalf("retry message not delivered to %s", RetryTopic("g"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
