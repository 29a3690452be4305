package ha

import (
	"net/netip"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// BenchmarkCatchUp measures how fast an empty slave copies a master's
// commitlog over loopback (bytes/s is the replication rate).
func BenchmarkCatchUp(b *testing.B) {
	const seg = 8 << 20
	open := func() *store.Store {
		cfg := storeConfig(b.TempDir())
		cfg.MappedFileSizeCommitLog = seg
		cfg.MappedFileSizeConsumeQueue = 30000 * store.CQEntrySize
		s, err := store.Open(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}
	master := open()
	body := make([]byte, 1024)
	for i := range 30000 {
		if _, err := master.PutMessage(&message.Message{
			Topic: testTopic, QueueID: int32(i % 4), Body: body,
			BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("10.1.2.3:4567"),
		}); err != nil {
			b.Fatal(err)
		}
	}
	srv := startMaster(b, master, func(c *ServerConfig) { c.SegmentSize = seg; c.EmptySlaveFromOldest = true })
	total := master.CommitLogMaxOffset()
	b.SetBytes(total)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		slave := open()
		b.StartTimer()
		cl := startSlave(b, slave, srv.Addr().String())
		for slave.CommitLogMaxOffset() < total {
			time.Sleep(100 * time.Microsecond)
		}
		b.StopTimer()
		cl.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(total)/(1<<20), "MiB/op")
}
