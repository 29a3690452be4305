package store

import (
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// Benchmarks use production file sizes (1 GiB segments) and 1 KiB bodies.
// STORE_BENCH_RECOVERY_MB sets the commitlog size for BenchmarkRecovery
// (default 256); STORE_BENCH_COLD=1 evicts the store's files from the page
// cache before each recovery.

func benchConfig(b *testing.B, flush string) Config {
	cfg := DefaultConfig(b.TempDir())
	cfg.FlushDiskType = flush
	cfg.CleanResourceInterval = time.Hour
	cfg.MaxHashSlotNum = 500000
	cfg.MaxIndexNum = 2000000
	return cfg
}

func benchMsg(qid int32) *message.Message {
	return &message.Message{
		Topic: "BenchTopic", QueueID: qid, Body: make([]byte, 1024),
		Properties:    "TAGS\x01TagA\x02KEYS\x01key\x02",
		BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("10.0.0.1:5000"),
	}
}

func benchAppend(b *testing.B, flush string, writers int) {
	s, err := Open(benchConfig(b, flush))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var q atomic.Int32
	var timeouts, syncs atomic.Int64
	hook := func() { syncs.Add(1) }
	s.cl.syncHook.Store(&hook)
	b.SetBytes(1024)
	b.SetParallelism((writers + 1) / 2) // RunParallel runs GOMAXPROCS*p goroutines
	if writers == 1 {
		b.SetParallelism(1)
	}
	b.ResetTimer()
	start := time.Now()
	if writers == 1 {
		m := benchMsg(0)
		for range b.N {
			if _, err := s.PutMessage(m); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		b.RunParallel(func(pb *testing.PB) {
			m := benchMsg(q.Add(1) % 16)
			for pb.Next() {
				r, err := s.PutMessage(m)
				if err != nil {
					b.Fatal(err)
				}
				if r.Status != PutOK {
					timeouts.Add(1)
				}
			}
		})
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msg/s")
	if flush == SyncFlush && syncs.Load() > 0 {
		b.ReportMetric(float64(b.N)/float64(syncs.Load()), "msg/sync")
	}
	if timeouts.Load() > 0 {
		b.Fatalf("%d flush timeouts", timeouts.Load())
	}
}

func BenchmarkAppendAsync1(b *testing.B)  { benchAppend(b, AsyncFlush, 1) }
func BenchmarkAppendAsync16(b *testing.B) { benchAppend(b, AsyncFlush, 16) }
func BenchmarkAppendSync16(b *testing.B)  { benchAppend(b, SyncFlush, 16) }

// BenchmarkReadConsumeQueue pulls sequentially through one queue, 32
// messages a pull, decoding nothing (as the broker sends raw records), with
// CheckCRCOnRead on (the default) and off.
func BenchmarkReadConsumeQueue(b *testing.B) {
	for _, crc := range []bool{true, false} {
		b.Run("checkCRCOnRead="+strconv.FormatBool(crc), func(b *testing.B) { benchReadConsumeQueue(b, crc) })
	}
}

func benchReadConsumeQueue(b *testing.B, crc bool) {
	cfg := benchConfig(b, AsyncFlush)
	cfg.CheckCRCOnRead = crc
	s, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const prefill = 200000
	m := benchMsg(0)
	for range prefill {
		if _, err := s.PutMessage(m); err != nil {
			b.Fatal(err)
		}
	}
	waitDispatched(b, s)
	b.SetBytes(1024)
	b.ResetTimer()
	start := time.Now()
	off, n := int64(0), 0
	for n < b.N {
		r := s.GetMessage("BenchTopic", 0, off, 32, 1<<20, nil)
		if r.Status != Found {
			r.Release()
			off = 0
			continue
		}
		n += len(r.Messages)
		off = r.NextBeginOffset
		r.Release()
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msg/s")
}

// dropCache evicts the store's files from the page cache (only ours:
// POSIX_FADV_DONTNEED per file) so recovery reads from disk.
func dropCache(b *testing.B, root string) {
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return nil
		}
		defer f.Close()
		f.Sync()
		syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, 4 /* POSIX_FADV_DONTNEED */, 0, 0)
		return nil
	})
}

// BenchmarkRecovery measures an unclean start with no checkpoint: full
// commitlog scan with CRC checks and a rebuild of consume queues and index.
func BenchmarkRecovery(b *testing.B) {
	mb := 256
	if v, err := strconv.Atoi(os.Getenv("STORE_BENCH_RECOVERY_MB")); err == nil && v > 0 {
		mb = v
	}
	cfg := benchConfig(b, AsyncFlush)
	s, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	m := benchMsg(0)
	for i := 0; s.CommitLogMaxOffset() < int64(mb)<<20; i++ {
		m.QueueID = int32(i % 8)
		if _, err := s.PutMessage(m); err != nil {
			b.Fatal(err)
		}
	}
	waitDispatched(b, s)
	size := s.CommitLogMaxOffset()
	s.crash()
	b.SetBytes(size)
	b.ResetTimer()
	cold := os.Getenv("STORE_BENCH_COLD") != ""
	for range b.N {
		os.Remove(cfg.checkpointPath())
		if cold {
			b.StopTimer()
			dropCache(b, cfg.StorePathRootDir)
			b.StartTimer()
		}
		start, cpu := time.Now(), cpuTime()
		s, err := Open(cfg)
		if err != nil {
			b.Fatal(err)
		}
		el := time.Since(start)
		b.ReportMetric((cpuTime() - cpu).Seconds(), "cpu-s/recovery")
		if s.CleanStart || s.CommitLogMaxOffset() != size || s.MaxOffsetInQueue("BenchTopic", 0) == 0 {
			b.Fatalf("recovery: clean %v tail %d of %d", s.CleanStart, s.CommitLogMaxOffset(), size)
		}
		b.ReportMetric(el.Seconds(), "s/recovery")
		s.crash()
	}
}

// cpuTime is the process's CPU time (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
