package store

import (
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// Flush disk types (config key flushDiskType).
const (
	AsyncFlush = "ASYNC_FLUSH"
	SyncFlush  = "SYNC_FLUSH"
)

// Defaults, named after RocketMQ's MessageStoreConfig.
const (
	DefaultMappedFileSizeCommitLog    = 1 << 30
	DefaultConsumeQueueEntries        = 300000
	DefaultMaxMessageSize             = 4 << 20
	DefaultMaxHashSlotNum             = 5000000
	DefaultMaxIndexNum                = 5000000 * 4
	DefaultMessageDelayLevel          = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
	DefaultAccessMessageInMemoryRatio = 40
	DefaultMaxFilterScanEntries       = 16000 / CQEntrySize // Java's maxFilterMessageCount: 16000 bytes of consume queue
)

// Config configures a Store. Field names follow the Java broker.conf keys
// (MessageStoreConfig); broker/config parses those keys, once, into these typed
// values (StoreConfig).
type Config struct {
	StorePathRootDir              string        // storePathRootDir
	StorePathCommitLog            string        // storePathCommitLog; default <root>/commitlog
	MappedFileSizeCommitLog       int           // mappedFileSizeCommitLog (alias mapedFileSizeCommitLog)
	MappedFileSizeConsumeQueue    int           // mappedFileSizeConsumeQueue: entries * 20
	FlushDiskType                 string        // flushDiskType: ASYNC_FLUSH or SYNC_FLUSH
	SyncFlushTimeout              time.Duration // syncFlushTimeout (ms in broker.conf)
	FlushIntervalCommitLog        time.Duration // flushIntervalCommitLog (ms), async flush period
	FlushIntervalConsumeQueue     time.Duration // flushIntervalConsumeQueue (ms)
	FileReservedTime              time.Duration // fileReservedTime (hours in broker.conf)
	DeleteWhen                    string        // deleteWhen, hours "04" or "04;16"
	DiskMaxUsedSpaceRatio         int           // diskMaxUsedSpaceRatio, percent
	CleanResourceInterval         time.Duration // cleanResourceInterval (ms)
	MaxMessageSize                int           // maxMessageSize, bytes of the whole record
	MessageDelayLevel             string        // messageDelayLevel
	MaxHashSlotNum                int           // maxHashSlotNum
	MaxIndexNum                   int           // maxIndexNum
	MessageIndexEnable            bool          // messageIndexEnable
	AccessMessageInMemoryMaxRatio int           // accessMessageInMemoryMaxRatio, percent of RAM
	// CheckCRCOnRead (checkCRCOnRead; not a Java key, named after its
	// checkCRCOnRecover) checks the body CRC of every record a read hands
	// out: pulls, lookups by offset or key, replication. A record that fails
	// is not served (see "Damage" in doc.go). Framing, offsets, topic and
	// queue are checked either way.
	CheckCRCOnRead bool

	// Transfer limits per pull (maxTransfer{Bytes,Count}OnMessageIn{Memory,Disk}).
	MaxTransferBytesOnMessageInMemory int
	MaxTransferCountOnMessageInMemory int
	MaxTransferBytesOnMessageInDisk   int
	MaxTransferCountOnMessageInDisk   int

	// MaxFilterScanEntries caps the consume-queue entries one GetMessage
	// looks at (matching or not), or maxMsgs if larger, as Java's
	// maxFilterMessageCount (16000 bytes, so 800 entries; not a broker.conf
	// key there). 0 means the default.
	MaxFilterScanEntries int

	// StoreHost is written into every record and makes offsetMsgId.
	StoreHost netip.AddrPort

	// OnGroupCommit, when set, is told after each SYNC_FLUSH group commit how many
	// appenders its fdatasync acknowledged (metrics). It runs on the flush goroutine and
	// must be quick.
	OnGroupCommit func(appenders int)

	// Logger receives the store's log lines (nil: slog.Default() with
	// component=store). WARN is what an
	// operator should look at: damage found, space running out, records not queued.
	Logger *slog.Logger

	// Hooks for tests; nil means the real clock, RAM size and disk probe.
	Now         func() time.Time
	TotalMemory int64
	DiskUsage   func(path string) (usedRatio float64, err error)
	DiskFree    func(path string) (freeBytes int64, err error) // nil: statfs; one volume for every path
	InAppend    func()                                         // runs inside every append, holding the commitlog (a slow page cache)
}

// DefaultConfig returns the RocketMQ 4.9 defaults rooted at root.
func DefaultConfig(root string) Config {
	return Config{
		StorePathRootDir:                  root,
		MappedFileSizeCommitLog:           DefaultMappedFileSizeCommitLog,
		MappedFileSizeConsumeQueue:        DefaultConsumeQueueEntries * CQEntrySize,
		FlushDiskType:                     AsyncFlush,
		SyncFlushTimeout:                  5 * time.Second,
		FlushIntervalCommitLog:            500 * time.Millisecond,
		FlushIntervalConsumeQueue:         time.Second,
		FileReservedTime:                  72 * time.Hour,
		DeleteWhen:                        "04",
		DiskMaxUsedSpaceRatio:             75,
		CleanResourceInterval:             10 * time.Second,
		MaxMessageSize:                    DefaultMaxMessageSize,
		MessageDelayLevel:                 DefaultMessageDelayLevel,
		MaxHashSlotNum:                    DefaultMaxHashSlotNum,
		MaxIndexNum:                       DefaultMaxIndexNum,
		MessageIndexEnable:                true,
		AccessMessageInMemoryMaxRatio:     DefaultAccessMessageInMemoryRatio,
		CheckCRCOnRead:                    true,
		MaxTransferBytesOnMessageInMemory: 256 * 1024,
		MaxTransferCountOnMessageInMemory: 32,
		MaxTransferBytesOnMessageInDisk:   64 * 1024,
		MaxTransferCountOnMessageInDisk:   8,
		MaxFilterScanEntries:              DefaultMaxFilterScanEntries,
		StoreHost:                         netip.MustParseAddrPort("127.0.0.1:10911"),
	}
}

func (c *Config) commitLogDir() string {
	if c.StorePathCommitLog != "" {
		return c.StorePathCommitLog
	}
	return filepath.Join(c.StorePathRootDir, "commitlog")
}

func (c *Config) consumeQueueDir() string { return filepath.Join(c.StorePathRootDir, "consumequeue") }
func (c *Config) indexDir() string        { return filepath.Join(c.StorePathRootDir, "index") }
func (c *Config) checkpointPath() string  { return filepath.Join(c.StorePathRootDir, "checkpoint") }
func (c *Config) abortPath() string       { return filepath.Join(c.StorePathRootDir, "abort") }

func (c *Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default().With("component", "store")
}

func (c *Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Config) validate() error {
	switch {
	case c.StorePathRootDir == "":
		return fmt.Errorf("%w: storePathRootDir is empty", ErrConfig)
	case c.MappedFileSizeCommitLog < 4096:
		return fmt.Errorf("%w: mappedFileSizeCommitLog %d < 4096", ErrConfig, c.MappedFileSizeCommitLog)
	case c.MappedFileSizeConsumeQueue < CQEntrySize || c.MappedFileSizeConsumeQueue%CQEntrySize != 0:
		return fmt.Errorf("%w: mappedFileSizeConsumeQueue %d is not a positive multiple of %d", ErrConfig, c.MappedFileSizeConsumeQueue, CQEntrySize)
	case c.FlushDiskType != AsyncFlush && c.FlushDiskType != SyncFlush:
		return fmt.Errorf("%w: flushDiskType %q", ErrConfig, c.FlushDiskType)
	case c.MaxMessageSize <= 0 || c.MaxMessageSize+message.MinBlankLength > c.MappedFileSizeCommitLog:
		return fmt.Errorf("%w: maxMessageSize %d does not fit a %d-byte segment", ErrConfig, c.MaxMessageSize, c.MappedFileSizeCommitLog)
	case c.MaxHashSlotNum <= 0 || c.MaxIndexNum <= 0:
		return fmt.Errorf("%w: maxHashSlotNum/maxIndexNum must be positive", ErrConfig)
	case c.SyncFlushTimeout <= 0 || c.FlushIntervalCommitLog <= 0 || c.FlushIntervalConsumeQueue <= 0:
		return fmt.Errorf("%w: flush intervals and syncFlushTimeout must be positive", ErrConfig)
	}
	if _, err := ParseDelayLevels(c.MessageDelayLevel); err != nil {
		return err
	}
	if _, err := parseDeleteWhen(c.DeleteWhen); err != nil {
		return err
	}
	return nil
}

// ParseDelayLevels parses messageDelayLevel ("1s 5s ... 2h"; units s, m, h,
// d) into durations; level n is element n-1.
func ParseDelayLevels(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Fields(s) {
		if len(f) < 2 {
			return nil, fmt.Errorf("%w: messageDelayLevel item %q", ErrConfig, f)
		}
		n, err := strconv.ParseInt(f[:len(f)-1], 10, 64)
		unit := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[f[len(f)-1]]
		if err != nil || unit == 0 || n < 0 {
			return nil, fmt.Errorf("%w: messageDelayLevel item %q", ErrConfig, f)
		}
		out = append(out, time.Duration(n)*unit)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: messageDelayLevel is empty", ErrConfig)
	}
	return out, nil
}

func parseDeleteWhen(s string) (map[int]bool, error) {
	hours := map[int]bool{}
	for _, f := range strings.Split(s, ";") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		h, err := strconv.Atoi(f)
		if err != nil || h < 0 || h > 23 {
			return nil, fmt.Errorf("%w: deleteWhen %q", ErrConfig, s)
		}
		hours[h] = true
	}
	return hours, nil
}
