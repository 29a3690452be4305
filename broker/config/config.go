// Package config holds the broker's configuration: the keys of a RocketMQ broker.conf
// (the Java BrokerConfig, MessageStoreConfig and NettyServerConfig field names), their
// defaults, parsing with errors that name the key, and live updates (UPDATE_BROKER_CONFIG).
package config

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/pkg/metrics"
	"github.com/openrmq/rocketmq-operator/pkg/properties"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
	"github.com/openrmq/rocketmq-operator/pkg/tlsconfig"
)

// Broker roles (brokerRole).
const (
	AsyncMaster = "ASYNC_MASTER"
	SyncMaster  = "SYNC_MASTER"
	Slave       = "SLAVE"
)

// ErrInvalid wraps every refused value; the message names the key.
var ErrInvalid = errors.New("config: invalid value")

// Config is the broker configuration. Field comments give the broker.conf key. Each key
// is parsed once, when it is set, into the type its users want: durations are
// time.Duration (broker.conf gives the unit the comment names: milliseconds, seconds or
// hours, as Java's keys do). Read fields through a snapshot (Get) when the config may be
// updated live.
type Config struct {
	BrokerClusterName string // brokerClusterName
	BrokerName        string // brokerName
	BrokerID          int64  // brokerId; 0 is the master
	BrokerIP1         string // brokerIP1: the address announced to clients
	BrokerIP2         string // brokerIP2: the address announced for HA
	ListenPort        int    // listenPort; the fast (VIP) channel listens on listenPort-2
	// AdvertisedListenPort (advertisedListenPort, not a Java key) is the port of the
	// address the broker announces (BrokerAddr): to name servers, in message ids, as a
	// slave's own address. 0 announces listenPort. It is for a broker reached through a
	// port that forwards to listenPort, such as a Kubernetes node port; clients with
	// vipChannelEnabled dial it minus 2, which must then forward to listenPort-2.
	AdvertisedListenPort int
	// HaListenPort is haListenPort. It is accepted and shown but, as in 4.9.7 (whose
	// BrokerStartup overwrites it), the HA server listens on, and the broker announces
	// as haServerAddr, listenPort+1 (HAPort).
	HaListenPort     int
	NamesrvAddr      string // namesrvAddr: name servers separated by ';'
	BrokerRole       string // brokerRole: ASYNC_MASTER, SYNC_MASTER or SLAVE
	BrokerPermission int    // brokerPermission: perm bits announced for all topics
	// MasterEpoch (masterEpoch, not a Java key) is the term of mastership the operator
	// gave this broker when it failed its group over (broker/ha.Epoch); a master records
	// it with its commitlog end when it starts, and registers with it so that the name
	// servers refuse an older master. 0: the group never failed over.
	MasterEpoch int64

	// Master/slave replication (package broker/ha).
	HaMasterAddress         string        // haMasterAddress: a slave's master HA address; "" takes the name server's
	HaSendHeartbeatInterval time.Duration // haSendHeartbeatInterval, ms
	HaHousekeepingInterval  time.Duration // haHousekeepingInterval, ms
	HaTransferBatchSize     int           // haTransferBatchSize, bytes
	HaSlaveFallbehindMax    int64         // haSlaveFallbehindMax, bytes (SYNC_MASTER: SLAVE_NOT_AVAILABLE beyond)
	// SyncMasterAcksAlone (syncMasterAcksAlone, not a Java key): a SYNC_MASTER with no
	// slave connected within haSlaveFallbehindMax answers sends SEND_OK, as an
	// ASYNC_MASTER would, instead of SLAVE_NOT_AVAILABLE; with one it waits for it as
	// always. The operator sets it on a master promoted by a failover until its group
	// has a slave again.
	SyncMasterAcksAlone bool
	SlaveTimeout        time.Duration // slaveTimeout, ms a SYNC_MASTER send waits for a slave
	// SlaveSynchronizeInterval (slaveSynchronizeInterval, ms) is how often a slave
	// copies its master's metadata. Not a Java key: 4.9.7 hard-codes 10 s.
	SlaveSynchronizeInterval time.Duration

	StorePathRootDir                  string        // storePathRootDir
	StorePathCommitLog                string        // storePathCommitLog
	FlushDiskType                     string        // flushDiskType
	MappedFileSizeCommitLog           int           // mappedFileSizeCommitLog (alias mapedFileSizeCommitLog)
	MappedFileSizeConsumeQueue        int           // mappedFileSizeConsumeQueue
	FlushIntervalCommitLog            time.Duration // flushIntervalCommitLog, ms
	FlushIntervalConsumeQueue         time.Duration // flushIntervalConsumeQueue, ms
	SyncFlushTimeout                  time.Duration // syncFlushTimeout, ms
	FileReservedTime                  time.Duration // fileReservedTime, hours
	DeleteWhen                        string        // deleteWhen
	DiskMaxUsedSpaceRatio             int           // diskMaxUsedSpaceRatio, percent
	CleanResourceInterval             time.Duration // cleanResourceInterval, ms
	MaxMessageSize                    int           // maxMessageSize, bytes
	MessageDelayLevel                 string        // messageDelayLevel
	MessageIndexEnable                bool          // messageIndexEnable
	MaxHashSlotNum                    int           // maxHashSlotNum
	MaxIndexNum                       int           // maxIndexNum
	AccessMessageInMemoryMaxRatio     int           // accessMessageInMemoryMaxRatio, percent of RAM
	CheckCRCOnRead                    bool          // checkCRCOnRead (not a Java key): body CRC of records read; see store.Config
	MaxTransferBytesOnMessageInMemory int
	MaxTransferCountOnMessageInMemory int
	MaxTransferBytesOnMessageInDisk   int
	MaxTransferCountOnMessageInDisk   int

	AutoCreateTopicEnable       bool          // autoCreateTopicEnable
	AutoCreateSubscriptionGroup bool          // autoCreateSubscriptionGroup
	DefaultTopicQueueNums       int           // defaultTopicQueueNums
	ClusterTopicEnable          bool          // clusterTopicEnable
	BrokerTopicEnable           bool          // brokerTopicEnable
	TraceTopicEnable            bool          // traceTopicEnable
	MsgTraceTopicName           string        // msgTraceTopicName
	LongPollingEnable           bool          // longPollingEnable
	ShortPollingTime            time.Duration // shortPollingTimeMills
	SlaveReadEnable             bool          // slaveReadEnable
	OffsetCheckInSlave          bool          // offsetCheckInSlave: a slave answers OFFSET_MOVED itself
	StoreReplyMessageEnable     bool          // storeReplyMessageEnable: keep request-reply replies in <cluster>_REPLY_TOPIC
	RejectTransactionMessage    bool          // rejectTransactionMessage
	EnablePropertyFilter        bool          // enablePropertyFilter: allow SQL92 subscriptions
	TransactionCheckInterval    time.Duration // transactionCheckInterval, ms between scans of half messages
	TransactionTimeOut          time.Duration // transactionTimeOut, ms before a half message is checked
	TransactionCheckMax         int           // transactionCheckMax: checks before a half message is dropped

	SendMessageThreadPoolNums    int // sendMessageThreadPoolNums
	PullMessageThreadPoolNums    int // pullMessageThreadPoolNums
	AdminBrokerThreadPoolNums    int // adminBrokerThreadPoolNums
	ClientManageThreadPoolNums   int // clientManageThreadPoolNums
	ConsumerManageThreadPoolNums int // consumerManagerThreadPoolNums
	SendThreadPoolQueueCapacity  int // sendThreadPoolQueueCapacity
	PullThreadPoolQueueCapacity  int // pullThreadPoolQueueCapacity

	// Flow control, as RocketMQ's BrokerFastFailure: a request that has waited in its
	// pool longer than the pool's limit is answered SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE];
	// while an append has held the commitlog longer than OSPageCacheBusyTimeout, sends
	// are answered SYSTEM_BUSY [PC_SYNCHRONIZED] and those waiting [PCBUSY_CLEAN_QUEUE].
	BrokerFastFailureEnable  bool          // brokerFastFailureEnable
	WaitTimeInSendQueue      time.Duration // waitTimeMillsInSendQueue (sends, send-backs, transaction ends)
	WaitTimeInPullQueue      time.Duration // waitTimeMillsInPullQueue
	WaitTimeInHeartbeatQueue time.Duration // waitTimeMillsInHeartbeatQueue (heartbeats, unregistrations)
	OSPageCacheBusyTimeout   time.Duration // osPageCacheBusyTimeOutMills

	RegisterNameServerPeriod    time.Duration // registerNameServerPeriod, ms
	RegisterBrokerTimeout       time.Duration // registerBrokerTimeoutMills, ms
	FlushConsumerOffsetInterval time.Duration // flushConsumerOffsetInterval, ms
	ChannelExpiredTimeout       time.Duration // channelExpiredTimeout, ms (client channels)

	// Connection limits of the remoting server (pkg/remoting.ServerConfig), against
	// peers that misbehave; the defaults do not bother real clients.
	ServerChannelMaxIdleTime          time.Duration // serverChannelMaxIdleTimeSeconds: close a connection that sent nothing for so long; 0 never (as Java)
	ServerFrameReadTimeout            time.Duration // serverFrameReadTimeoutMillis: close one whose frame is not whole so long after its first byte
	ServerMaxConnections              int           // serverMaxConnections: open connections, both ports together
	ServerMaxConnectionsPerAddress    int           // serverMaxConnectionsPerAddress: open connections from one IP address
	ServerMaxQueuedBytesPerConnection int64         // serverMaxQueuedBytesPerConnection: bytes queued for a peer that does not read before its connection is closed
	// ServerMaxQueuedBytesTotal (serverMaxQueuedBytesTotal) bounds the bytes queued on
	// all connections; past it the one with the most queued is closed. 0: 256 MiB, or a
	// quarter of the Go memory limit (GOMEMLIMIT) when lower.
	ServerMaxQueuedBytesTotal int64

	// Metrics (RocketMQ 5's keys, but PROM or DISABLE only; docs/metrics.md).
	MetricsExporterType     string // metricsExporterType: PROM serves /metrics, DISABLE (the default) nothing
	MetricsPromExporterPort int    // metricsPromExporterPort: the /metrics port (5557)
	MetricsPromExporterHost string // metricsPromExporterHost: the address it binds; "" is brokerIP1, as in Java
	// MetricsLabel (metricsLabel) adds constant labels to every series, "k1:v1,k2:v2".
	MetricsLabel string
	// MetricsSeriesLimit (metricsSeriesLimit, ours) is the most series a per-topic or
	// per-topic-and-group metric keeps; beyond it, counts go to one overflow series and
	// rocketmq_metrics_series_dropped says how many were folded or left out. 0: no limit.
	MetricsSeriesLimit int

	AclEnable bool // aclEnable: check every request against the plain ACL file (package broker/acl)
	// AclPlainFile (aclPlainFile) is the plain ACL file, re-read when it changes. A
	// relative path is under $ROCKETMQ_HOME (the working folder when unset), so the
	// default is Java's $ROCKETMQ_HOME/conf/plain_acl.yml; Java's -Drocketmq.acl.plain.file
	// is the same relative path. Not a Java broker.conf key.
	AclPlainFile string

	// TLS holds the tls.* keys of Java's TlsSystemConfig (package pkg/tlsconfig): the
	// listeners' mode and certificate (tls.server.*), and, with tls.enable (or Java's
	// useTLS), TLS on the broker's own connections to name servers and to its master
	// (tls.client.*). Java reads them from system properties or tls.config.file; here
	// broker.conf takes them too, and tls.config.file's values win, as Java's do.
	TLS tlsconfig.Settings
}

// Default returns the RocketMQ 4.9 defaults.
func Default() *Config {
	home, _ := os.UserHomeDir()
	host, _ := os.Hostname()
	return &Config{
		BrokerClusterName:                 "DefaultCluster",
		BrokerName:                        host,
		BrokerIP1:                         localIP(),
		ListenPort:                        10911,
		HaListenPort:                      10912,
		BrokerRole:                        AsyncMaster,
		BrokerPermission:                  6,
		HaSendHeartbeatInterval:           5 * time.Second,
		HaHousekeepingInterval:            20 * time.Second,
		HaTransferBatchSize:               32768,
		HaSlaveFallbehindMax:              256 << 20,
		SlaveTimeout:                      3 * time.Second,
		SlaveSynchronizeInterval:          10 * time.Second,
		StorePathRootDir:                  filepath.Join(home, "store"),
		FlushDiskType:                     store.AsyncFlush,
		MappedFileSizeCommitLog:           store.DefaultMappedFileSizeCommitLog,
		MappedFileSizeConsumeQueue:        store.DefaultConsumeQueueEntries * 20,
		FlushIntervalCommitLog:            500 * time.Millisecond,
		FlushIntervalConsumeQueue:         time.Second,
		SyncFlushTimeout:                  5 * time.Second,
		FileReservedTime:                  72 * time.Hour,
		DeleteWhen:                        "04",
		DiskMaxUsedSpaceRatio:             75,
		CleanResourceInterval:             10 * time.Second,
		MaxMessageSize:                    store.DefaultMaxMessageSize,
		MessageDelayLevel:                 store.DefaultMessageDelayLevel,
		MessageIndexEnable:                true,
		MaxHashSlotNum:                    store.DefaultMaxHashSlotNum,
		MaxIndexNum:                       store.DefaultMaxIndexNum,
		AccessMessageInMemoryMaxRatio:     store.DefaultAccessMessageInMemoryRatio,
		CheckCRCOnRead:                    true,
		MaxTransferBytesOnMessageInMemory: 256 * 1024,
		MaxTransferCountOnMessageInMemory: 32,
		MaxTransferBytesOnMessageInDisk:   64 * 1024,
		MaxTransferCountOnMessageInDisk:   8,
		AutoCreateTopicEnable:             true,
		AutoCreateSubscriptionGroup:       true,
		DefaultTopicQueueNums:             8,
		ClusterTopicEnable:                true,
		BrokerTopicEnable:                 true,
		MsgTraceTopicName:                 "RMQ_SYS_TRACE_TOPIC",
		LongPollingEnable:                 true,
		StoreReplyMessageEnable:           true,
		ShortPollingTime:                  time.Second,
		SendMessageThreadPoolNums:         4,
		PullMessageThreadPoolNums:         16,
		AdminBrokerThreadPoolNums:         16,
		ClientManageThreadPoolNums:        32,
		ConsumerManageThreadPoolNums:      32,
		SendThreadPoolQueueCapacity:       10000,
		PullThreadPoolQueueCapacity:       100000,
		BrokerFastFailureEnable:           true,
		WaitTimeInSendQueue:               200 * time.Millisecond,
		WaitTimeInPullQueue:               5 * time.Second,
		WaitTimeInHeartbeatQueue:          31 * time.Second,
		OSPageCacheBusyTimeout:            time.Second,
		RegisterNameServerPeriod:          30 * time.Second,
		RegisterBrokerTimeout:             6 * time.Second,
		FlushConsumerOffsetInterval:       5 * time.Second,
		ChannelExpiredTimeout:             120 * time.Second,
		TransactionCheckInterval:          60 * time.Second,
		TransactionTimeOut:                6 * time.Second,
		TransactionCheckMax:               15,
		AclPlainFile:                      filepath.Join("conf", "plain_acl.yml"),
		ServerChannelMaxIdleTime:          remoting.DefaultIdleTimeout,
		ServerFrameReadTimeout:            remoting.DefaultFrameTimeout,
		ServerMaxConnections:              remoting.DefaultMaxConnections,
		ServerMaxConnectionsPerAddress:    remoting.DefaultMaxConnectionsPerAddress,
		ServerMaxQueuedBytesPerConnection: remoting.DefaultMaxQueuedBytesPerConnection,
		MetricsExporterType:               metrics.ExporterDisable,
		MetricsPromExporterPort:           metrics.DefaultPort,
		MetricsSeriesLimit:                metrics.DefaultSeriesLimit,
		TLS:                               tlsconfig.Default(),
	}
}

func localIP() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				return n.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// key binds a broker.conf key to a field.
type key struct {
	name string
	ptr  any  // *string, *int, *int64, *bool or duration
	live bool // UPDATE_BROKER_CONFIG may change it while running
}

// duration is a time.Duration key that broker.conf gives as a whole number of unit, as
// Java's long and int fields (milliseconds for the ...Interval, ...Timeout and ...Mills
// keys).
type duration struct {
	p    *time.Duration
	unit time.Duration
}

func millis(name string, p *time.Duration, live bool) key {
	return key{name, duration{p, time.Millisecond}, live}
}
func seconds(name string, p *time.Duration, live bool) key {
	return key{name, duration{p, time.Second}, live}
}
func hours(name string, p *time.Duration, live bool) key {
	return key{name, duration{p, time.Hour}, live}
}

func (c *Config) keys() []key {
	keys := []key{
		{"brokerClusterName", &c.BrokerClusterName, false},
		{"brokerName", &c.BrokerName, false},
		{"brokerId", &c.BrokerID, false},
		{"brokerIP1", &c.BrokerIP1, false},
		{"brokerIP2", &c.BrokerIP2, false},
		{"listenPort", &c.ListenPort, false},
		{"advertisedListenPort", &c.AdvertisedListenPort, false},
		{"haListenPort", &c.HaListenPort, false},
		{"namesrvAddr", &c.NamesrvAddr, true},
		{"brokerRole", &c.BrokerRole, false},
		{"brokerPermission", &c.BrokerPermission, true},
		{"masterEpoch", &c.MasterEpoch, false},
		{"haMasterAddress", &c.HaMasterAddress, false},
		millis("haSendHeartbeatInterval", &c.HaSendHeartbeatInterval, false),
		millis("haHousekeepingInterval", &c.HaHousekeepingInterval, false),
		{"haTransferBatchSize", &c.HaTransferBatchSize, false},
		{"haSlaveFallbehindMax", &c.HaSlaveFallbehindMax, false},
		{"syncMasterAcksAlone", &c.SyncMasterAcksAlone, true},
		millis("slaveTimeout", &c.SlaveTimeout, true),
		millis("slaveSynchronizeInterval", &c.SlaveSynchronizeInterval, false),
		{"storePathRootDir", &c.StorePathRootDir, false},
		{"storePathCommitLog", &c.StorePathCommitLog, false},
		{"flushDiskType", &c.FlushDiskType, false},
		{"mappedFileSizeCommitLog", &c.MappedFileSizeCommitLog, false},
		{"mappedFileSizeConsumeQueue", &c.MappedFileSizeConsumeQueue, false},
		millis("flushIntervalCommitLog", &c.FlushIntervalCommitLog, false),
		millis("flushIntervalConsumeQueue", &c.FlushIntervalConsumeQueue, false),
		millis("syncFlushTimeout", &c.SyncFlushTimeout, false),
		hours("fileReservedTime", &c.FileReservedTime, false),
		{"deleteWhen", &c.DeleteWhen, false},
		{"diskMaxUsedSpaceRatio", &c.DiskMaxUsedSpaceRatio, false},
		millis("cleanResourceInterval", &c.CleanResourceInterval, false),
		{"maxMessageSize", &c.MaxMessageSize, false},
		{"messageDelayLevel", &c.MessageDelayLevel, false},
		{"messageIndexEnable", &c.MessageIndexEnable, false},
		{"maxHashSlotNum", &c.MaxHashSlotNum, false},
		{"maxIndexNum", &c.MaxIndexNum, false},
		{"accessMessageInMemoryMaxRatio", &c.AccessMessageInMemoryMaxRatio, false},
		{"checkCRCOnRead", &c.CheckCRCOnRead, false},
		{"maxTransferBytesOnMessageInMemory", &c.MaxTransferBytesOnMessageInMemory, false},
		{"maxTransferCountOnMessageInMemory", &c.MaxTransferCountOnMessageInMemory, false},
		{"maxTransferBytesOnMessageInDisk", &c.MaxTransferBytesOnMessageInDisk, false},
		{"maxTransferCountOnMessageInDisk", &c.MaxTransferCountOnMessageInDisk, false},
		{"autoCreateTopicEnable", &c.AutoCreateTopicEnable, true},
		{"autoCreateSubscriptionGroup", &c.AutoCreateSubscriptionGroup, true},
		{"defaultTopicQueueNums", &c.DefaultTopicQueueNums, true},
		{"clusterTopicEnable", &c.ClusterTopicEnable, false},
		{"brokerTopicEnable", &c.BrokerTopicEnable, false},
		{"traceTopicEnable", &c.TraceTopicEnable, false},
		{"msgTraceTopicName", &c.MsgTraceTopicName, false},
		{"longPollingEnable", &c.LongPollingEnable, true},
		millis("shortPollingTimeMills", &c.ShortPollingTime, true),
		{"slaveReadEnable", &c.SlaveReadEnable, true},
		{"offsetCheckInSlave", &c.OffsetCheckInSlave, true},
		{"storeReplyMessageEnable", &c.StoreReplyMessageEnable, true},
		{"rejectTransactionMessage", &c.RejectTransactionMessage, true},
		{"enablePropertyFilter", &c.EnablePropertyFilter, true},
		millis("transactionCheckInterval", &c.TransactionCheckInterval, false),
		millis("transactionTimeOut", &c.TransactionTimeOut, false),
		{"transactionCheckMax", &c.TransactionCheckMax, false},
		{"sendMessageThreadPoolNums", &c.SendMessageThreadPoolNums, false},
		{"pullMessageThreadPoolNums", &c.PullMessageThreadPoolNums, false},
		{"adminBrokerThreadPoolNums", &c.AdminBrokerThreadPoolNums, false},
		{"clientManageThreadPoolNums", &c.ClientManageThreadPoolNums, false},
		{"consumerManagerThreadPoolNums", &c.ConsumerManageThreadPoolNums, false},
		{"sendThreadPoolQueueCapacity", &c.SendThreadPoolQueueCapacity, false},
		{"pullThreadPoolQueueCapacity", &c.PullThreadPoolQueueCapacity, false},
		{"brokerFastFailureEnable", &c.BrokerFastFailureEnable, true},
		millis("waitTimeMillsInSendQueue", &c.WaitTimeInSendQueue, true),
		millis("waitTimeMillsInPullQueue", &c.WaitTimeInPullQueue, true),
		millis("waitTimeMillsInHeartbeatQueue", &c.WaitTimeInHeartbeatQueue, true),
		millis("osPageCacheBusyTimeOutMills", &c.OSPageCacheBusyTimeout, true),
		millis("registerNameServerPeriod", &c.RegisterNameServerPeriod, true),
		millis("registerBrokerTimeoutMills", &c.RegisterBrokerTimeout, true),
		millis("flushConsumerOffsetInterval", &c.FlushConsumerOffsetInterval, false),
		millis("channelExpiredTimeout", &c.ChannelExpiredTimeout, false),
		seconds("serverChannelMaxIdleTimeSeconds", &c.ServerChannelMaxIdleTime, false),
		millis("serverFrameReadTimeoutMillis", &c.ServerFrameReadTimeout, false),
		{"serverMaxConnections", &c.ServerMaxConnections, false},
		{"serverMaxConnectionsPerAddress", &c.ServerMaxConnectionsPerAddress, false},
		{"serverMaxQueuedBytesPerConnection", &c.ServerMaxQueuedBytesPerConnection, false},
		{"serverMaxQueuedBytesTotal", &c.ServerMaxQueuedBytesTotal, false},
		{"metricsExporterType", &c.MetricsExporterType, false},
		{"metricsPromExporterPort", &c.MetricsPromExporterPort, false},
		{"metricsPromExporterHost", &c.MetricsPromExporterHost, false},
		{"metricsLabel", &c.MetricsLabel, false},
		{"metricsSeriesLimit", &c.MetricsSeriesLimit, false},
		{"aclEnable", &c.AclEnable, false},
		{"aclPlainFile", &c.AclPlainFile, false},
	}
	for _, k := range c.TLS.Keys() {
		keys = append(keys, key{k.Name, k.Ptr, false})
	}
	return keys
}

// aliases maps old spellings to the current key.
var aliases = map[string]string{
	"mapedFileSizeCommitLog":    "mappedFileSizeCommitLog",
	"mapedFileSizeConsumeQueue": "mappedFileSizeConsumeQueue",
	// NettyClientConfig's field, which 4.9's BrokerStartup sets from tls.enable and then
	// from broker.conf.
	"useTLS": tlsconfig.KeyEnable,
}

// ignored are Java keys this broker accepts without effect: they tune Java internals
// (Netty, thread pools, JVM) or features we do not have. They are not warned about.
var ignored = map[string]bool{
	"rocketmqHome": true, "serverWorkerThreads": true, "serverCallbackExecutorThreads": true,
	"serverSelectorThreads": true, "serverOnewaySemaphoreValue": true, "serverAsyncSemaphoreValue": true,
	"serverSocketSndBufSize": true, "serverSocketRcvBufSize": true,
	"serverPooledByteBufAllocatorEnable": true, "useEpollNativeSelector": true, "transientStorePoolEnable": true,
	"useReentrantLockWhenPutMessage": true, "sendMessageThreadPoolNums_": true,
	// The transaction ends share the send pool here, and its waitTimeMillsInSendQueue.
	"waitTimeMillsInTransactionQueue": true, "fetchNamesrvAddrByAddressServer": true,
	"warmMapedFileEnable": true, "enableCalcFilterBitMap": true,
	"isEnableBatchPush": true, "storePathIndex": true,
	"enableDLegerCommitLog": true, "filterServerNums": true, "compressedRegister": true,
	"forceRegister": true, "enableConsumeQueueExt": true, "timerWheelEnable": true,
	"maxDelayTime": true, "isEnableTransferMsgByHeap": true, "transferMsgByHeap": true,
	"flushLeastPagesWhenWarmMapedFile": true, "flushCommitLogLeastPages": true,
	"flushConsumeQueueLeastPages": true, "flushCommitLogThoroughInterval": true,
	"flushConsumeQueueThoroughInterval": true, "fastListenPort": true,
}

// Warning is a key that was skipped.
type Warning struct {
	Key    string
	Line   int
	Reason string
}

func (w Warning) String() string {
	if w.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s", w.Line, w.Key, w.Reason)
	}
	return fmt.Sprintf("%s: %s", w.Key, w.Reason)
}

// Load reads a broker.conf over the defaults. A value that does not parse or validate
// is an error naming the key; unknown keys come back as warnings.
func Load(r io.Reader) (*Config, []Warning, error) {
	props, err := properties.Parse(r)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	c := Default()
	var warns []Warning
	for _, p := range props {
		known, err := c.set(p.Key, p.Value, false)
		if err != nil {
			return nil, warns, fmt.Errorf("line %d: %w", p.Line, err)
		}
		if !known {
			warns = append(warns, Warning{Key: p.Key, Line: p.Line, Reason: "unknown key, ignored"})
		}
	}
	if err := c.Validate(); err != nil {
		return nil, warns, err
	}
	return c, warns, nil
}

// LoadFile is Load on a file.
func LoadFile(path string) (*Config, []Warning, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	c, w, err := Load(f)
	if err != nil {
		return nil, w, fmt.Errorf("%s: %w", path, err)
	}
	return c, w, nil
}

// Set parses value into key (initial configuration, e.g. from flags). It reports false for
// an unknown key.
func (c *Config) Set(name, value string) (bool, error) { return c.set(name, value, false) }

func (c *Config) set(name, value string, liveOnly bool) (known bool, err error) {
	if a, ok := aliases[name]; ok {
		name = a
	}
	if ignored[name] {
		return true, nil
	}
	for _, k := range c.keys() {
		if k.name != name {
			continue
		}
		if liveOnly && !k.live {
			return true, fmt.Errorf("%w: %s cannot be changed while the broker runs", ErrInvalid, name)
		}
		return true, setValue(k, value)
	}
	return false, nil
}

func setValue(k key, raw string) error {
	v := strings.TrimSpace(raw)
	switch p := k.ptr.(type) {
	case *string:
		*p = v
	case *bool:
		switch strings.ToLower(v) {
		case "true":
			*p = true
		case "false":
			*p = false
		default:
			return fmt.Errorf("%w: %s=%q is not true or false", ErrInvalid, k.name, raw)
		}
	case *int:
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return fmt.Errorf("%w: %s=%q is not a 32-bit integer", ErrInvalid, k.name, raw)
		}
		*p = int(n)
	case *int64:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: %s=%q is not an integer", ErrInvalid, k.name, raw)
		}
		*p = n
	case duration:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > int64(math.MaxInt64/p.unit) || n < int64(math.MinInt64/p.unit) {
			return fmt.Errorf("%w: %s=%q is not a whole number of %s", ErrInvalid, k.name, raw, unitName(p.unit))
		}
		*p.p = time.Duration(n) * p.unit
	}
	return nil
}

func unitName(u time.Duration) string {
	switch u {
	case time.Second:
		return "seconds"
	case time.Hour:
		return "hours"
	}
	return "milliseconds"
}

// Validate checks the values together; the error names the key.
func (c *Config) Validate() error {
	bad := func(key string, v any, why string) error {
		return fmt.Errorf("%w: %s=%v: %s", ErrInvalid, key, v, why)
	}
	switch {
	case c.BrokerName == "":
		return bad("brokerName", `""`, "must not be empty")
	case c.BrokerClusterName == "":
		return bad("brokerClusterName", `""`, "must not be empty")
	case c.BrokerID < 0:
		return bad("brokerId", c.BrokerID, "must be >= 0")
	case c.MasterEpoch < 0:
		return bad("masterEpoch", c.MasterEpoch, "must be >= 0")
	case c.ListenPort < 3 || c.ListenPort > 65535:
		return bad("listenPort", c.ListenPort, "must be in 3..65535 (the fast channel uses listenPort-2)")
	case c.AdvertisedListenPort != 0 && (c.AdvertisedListenPort < 3 || c.AdvertisedListenPort > 65535):
		return bad("advertisedListenPort", c.AdvertisedListenPort, "must be 0 (listenPort) or in 3..65535 (clients dial it minus 2 for the fast channel)")
	case c.HaListenPort < 0 || c.HaListenPort > 65535:
		return bad("haListenPort", c.HaListenPort, "must be in 0..65535")
	case c.BrokerRole != AsyncMaster && c.BrokerRole != SyncMaster && c.BrokerRole != Slave:
		return bad("brokerRole", c.BrokerRole, "must be ASYNC_MASTER, SYNC_MASTER or SLAVE")
	case c.BrokerRole == Slave && c.BrokerID == 0:
		return bad("brokerId", c.BrokerID, "a SLAVE needs brokerId > 0")
	case c.BrokerRole != Slave && c.BrokerID != 0:
		return bad("brokerId", c.BrokerID, "a master must have brokerId 0")
	case c.ListenPort > 65534:
		return bad("listenPort", c.ListenPort, "must be at most 65534 (the HA port is listenPort+1)")
	case c.HaSendHeartbeatInterval <= 0 || c.HaHousekeepingInterval <= 0 || c.HaTransferBatchSize <= 0 || c.HaSlaveFallbehindMax <= 0:
		return bad("haSendHeartbeatInterval/haHousekeepingInterval/haTransferBatchSize/haSlaveFallbehindMax", "", "must be > 0")
	case c.SlaveTimeout <= 0:
		return bad("slaveTimeout", c.SlaveTimeout, "must be > 0")
	case c.SlaveSynchronizeInterval <= 0:
		return bad("slaveSynchronizeInterval", c.SlaveSynchronizeInterval, "must be > 0")
	case c.FlushDiskType != store.AsyncFlush && c.FlushDiskType != store.SyncFlush:
		return bad("flushDiskType", c.FlushDiskType, "must be ASYNC_FLUSH or SYNC_FLUSH")
	case c.StorePathRootDir == "":
		return bad("storePathRootDir", `""`, "must not be empty")
	case c.MappedFileSizeCommitLog < 4096:
		return bad("mappedFileSizeCommitLog", c.MappedFileSizeCommitLog, "must be at least 4096")
	case c.MappedFileSizeConsumeQueue < 20 || c.MappedFileSizeConsumeQueue%20 != 0:
		return bad("mappedFileSizeConsumeQueue", c.MappedFileSizeConsumeQueue, "must be a positive multiple of 20")
	case c.MaxMessageSize <= 0 || c.MaxMessageSize > c.MappedFileSizeCommitLog-8:
		return bad("maxMessageSize", c.MaxMessageSize, "must be positive and fit a commitlog segment")
	case c.DiskMaxUsedSpaceRatio < 10 || c.DiskMaxUsedSpaceRatio > 95:
		return bad("diskMaxUsedSpaceRatio", c.DiskMaxUsedSpaceRatio, "must be in 10..95")
	case c.FileReservedTime <= 0:
		return bad("fileReservedTime", c.FileReservedTime, "must be > 0")
	case c.DefaultTopicQueueNums <= 0 || c.DefaultTopicQueueNums > 1024:
		return bad("defaultTopicQueueNums", c.DefaultTopicQueueNums, "must be in 1..1024")
	case c.BrokerPermission&^7 != 0:
		return bad("brokerPermission", c.BrokerPermission, "must be a combination of READ 4, WRITE 2, INHERIT 1")
	case c.ShortPollingTime <= 0:
		return bad("shortPollingTimeMills", c.ShortPollingTime, "must be > 0")
	case c.RegisterNameServerPeriod < time.Second || c.RegisterNameServerPeriod > time.Minute:
		return bad("registerNameServerPeriod", c.RegisterNameServerPeriod, "must be in 1000..60000 ms")
	case c.FlushConsumerOffsetInterval <= 0 || c.FlushIntervalCommitLog <= 0 || c.FlushIntervalConsumeQueue <= 0 || c.SyncFlushTimeout <= 0:
		return bad("flushConsumerOffsetInterval/flushIntervalCommitLog/flushIntervalConsumeQueue/syncFlushTimeout", "", "must be > 0")
	case c.ChannelExpiredTimeout <= 0:
		return bad("channelExpiredTimeout", c.ChannelExpiredTimeout, "must be > 0")
	case c.TransactionCheckInterval <= 0 || c.TransactionTimeOut <= 0 || c.TransactionCheckMax <= 0:
		return bad("transactionCheckInterval/transactionTimeOut/transactionCheckMax", "", "must be > 0")
	case c.ServerChannelMaxIdleTime < 0:
		return bad("serverChannelMaxIdleTimeSeconds", c.ServerChannelMaxIdleTime, "must be >= 0 (0: never close idle connections)")
	case c.ServerFrameReadTimeout <= 0:
		return bad("serverFrameReadTimeoutMillis", c.ServerFrameReadTimeout, "must be > 0")
	case c.ServerMaxConnections <= 0:
		return bad("serverMaxConnections", c.ServerMaxConnections, "must be > 0")
	case c.ServerMaxConnectionsPerAddress <= 0 || c.ServerMaxConnectionsPerAddress > c.ServerMaxConnections:
		return bad("serverMaxConnectionsPerAddress", c.ServerMaxConnectionsPerAddress, "must be in 1..serverMaxConnections")
	case c.ServerMaxQueuedBytesPerConnection <= 0:
		return bad("serverMaxQueuedBytesPerConnection", c.ServerMaxQueuedBytesPerConnection, "must be > 0 bytes")
	case c.ServerMaxQueuedBytesTotal < 0 || c.ServerMaxQueuedBytesTotal > 0 && c.ServerMaxQueuedBytesTotal < c.ServerMaxQueuedBytesPerConnection:
		return bad("serverMaxQueuedBytesTotal", c.ServerMaxQueuedBytesTotal, "must be 0 (automatic) or at least serverMaxQueuedBytesPerConnection")
	case c.AclEnable && c.AclPlainFile == "":
		return bad("aclPlainFile", `""`, "must name a file when aclEnable=true")
	case c.MetricsPromExporterPort < 0 || c.MetricsPromExporterPort > 65535:
		return bad("metricsPromExporterPort", c.MetricsPromExporterPort, "must be in 0..65535")
	case c.MetricsSeriesLimit < 0:
		return bad("metricsSeriesLimit", c.MetricsSeriesLimit, "must be >= 0 (0: no limit)")
	}
	if err := metrics.CheckExporterType(c.MetricsExporterType); err != nil {
		return bad("metricsExporterType", c.MetricsExporterType, err.Error())
	}
	if _, err := metrics.ParseLabels(c.MetricsLabel); err != nil {
		return bad("metricsLabel", c.MetricsLabel, err.Error())
	}
	if err := c.TLS.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for _, n := range []struct {
		key string
		v   int
	}{
		{"sendMessageThreadPoolNums", c.SendMessageThreadPoolNums}, {"pullMessageThreadPoolNums", c.PullMessageThreadPoolNums},
		{"adminBrokerThreadPoolNums", c.AdminBrokerThreadPoolNums}, {"clientManageThreadPoolNums", c.ClientManageThreadPoolNums},
		{"consumerManagerThreadPoolNums", c.ConsumerManageThreadPoolNums}, {"sendThreadPoolQueueCapacity", c.SendThreadPoolQueueCapacity},
		{"pullThreadPoolQueueCapacity", c.PullThreadPoolQueueCapacity},
	} {
		if n.v <= 0 {
			return bad(n.key, n.v, "must be > 0")
		}
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"waitTimeMillsInSendQueue", c.WaitTimeInSendQueue}, {"waitTimeMillsInPullQueue", c.WaitTimeInPullQueue},
		{"waitTimeMillsInHeartbeatQueue", c.WaitTimeInHeartbeatQueue}, {"osPageCacheBusyTimeOutMills", c.OSPageCacheBusyTimeout},
	} {
		if d.v <= 0 {
			return bad(d.key, d.v.Milliseconds(), "must be > 0 milliseconds")
		}
	}
	if c.BrokerIP1 != "" {
		if _, err := netip.ParseAddr(c.BrokerIP1); err != nil {
			return bad("brokerIP1", c.BrokerIP1, "is not an IP address")
		}
	}
	if err := validateNamesrv(c.NamesrvAddr); err != nil {
		return bad("namesrvAddr", c.NamesrvAddr, err.Error())
	}
	if _, err := store.ParseDelayLevels(c.MessageDelayLevel); err != nil {
		return bad("messageDelayLevel", c.MessageDelayLevel, err.Error())
	}
	for _, h := range strings.Split(c.DeleteWhen, ";") {
		if n, err := strconv.Atoi(strings.TrimSpace(h)); strings.TrimSpace(h) != "" && (err != nil || n < 0 || n > 23) {
			return bad("deleteWhen", c.DeleteWhen, "must be hours 00..23 separated by ';'")
		}
	}
	return nil
}

func validateNamesrv(s string) error {
	for _, a := range NamesrvList(s) {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("%q is not host:port", a)
		}
	}
	return nil
}

// NamesrvList splits a namesrvAddr value ("a:9876;b:9876").
func NamesrvList(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// ACLFile is the plain ACL file aclPlainFile names: relative paths are under $ROCKETMQ_HOME.
func (c Config) ACLFile() string {
	if filepath.IsAbs(c.AclPlainFile) {
		return c.AclPlainFile
	}
	return filepath.Join(os.Getenv("ROCKETMQ_HOME"), c.AclPlainFile)
}

// MetricsEnabled reports whether the broker serves /metrics (metricsExporterType=PROM).
func (c Config) MetricsEnabled() bool { return c.MetricsExporterType == metrics.ExporterProm }

// MetricsAddr is the address /metrics listens on: metricsPromExporterHost (brokerIP1 when
// empty) and metricsPromExporterPort.
func (c Config) MetricsAddr() string {
	host := c.MetricsPromExporterHost
	if host == "" {
		host = c.BrokerIP1
	}
	return net.JoinHostPort(host, strconv.Itoa(c.MetricsPromExporterPort))
}

// HAPort is the port the HA server listens on and announces: listenPort+1, as 4.9.7
// forces it whatever haListenPort says.
func (c Config) HAPort() int { return c.ListenPort + 1 }

// AnnouncedPort is the port the broker announces: advertisedListenPort, or listenPort
// when it is 0. The broker listens on listenPort whatever it announces.
func (c Config) AnnouncedPort() int {
	if c.AdvertisedListenPort != 0 {
		return c.AdvertisedListenPort
	}
	return c.ListenPort
}

// BrokerAddr is the address announced to name servers and clients: brokerIP1 and the
// announced port.
func (c Config) BrokerAddr() string {
	return net.JoinHostPort(c.BrokerIP1, strconv.Itoa(c.AnnouncedPort()))
}

// StoreHost is BrokerAddr as the store writes it into every record: the address in
// message ids (offsetMsgId), where clients look a message up by its id.
func (c Config) StoreHost() (netip.AddrPort, error) {
	ip, err := netip.ParseAddr(c.BrokerIP1)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("brokerIP1=%q: %w", c.BrokerIP1, err)
	}
	return netip.AddrPortFrom(ip, uint16(c.AnnouncedPort())), nil
}

// Properties returns every key with its current value, sorted, as GET_BROKER_CONFIG shows.
func (c *Config) Properties() map[string]string {
	out := make(map[string]string)
	for _, k := range c.keys() {
		switch p := k.ptr.(type) {
		case *string:
			out[k.name] = *p
		case *bool:
			out[k.name] = strconv.FormatBool(*p)
		case *int:
			out[k.name] = strconv.Itoa(*p)
		case *int64:
			out[k.name] = strconv.FormatInt(*p, 10)
		case duration:
			out[k.name] = strconv.FormatInt(int64(*p.p/p.unit), 10)
		}
	}
	for k, v := range c.TLS.Properties() { // passwords masked
		out[k] = v
	}
	out["fastListenPort"] = strconv.Itoa(c.ListenPort - 2)
	return out
}

// StoreConfig maps the store keys onto a store.Config.
func (c *Config) StoreConfig() store.Config {
	sc := store.DefaultConfig(c.StorePathRootDir)
	sc.StorePathCommitLog = c.StorePathCommitLog
	sc.MappedFileSizeCommitLog = c.MappedFileSizeCommitLog
	sc.MappedFileSizeConsumeQueue = c.MappedFileSizeConsumeQueue
	sc.FlushDiskType = c.FlushDiskType
	sc.SyncFlushTimeout = c.SyncFlushTimeout
	sc.FlushIntervalCommitLog = c.FlushIntervalCommitLog
	sc.FlushIntervalConsumeQueue = c.FlushIntervalConsumeQueue
	sc.FileReservedTime = c.FileReservedTime
	sc.DeleteWhen = c.DeleteWhen
	sc.DiskMaxUsedSpaceRatio = c.DiskMaxUsedSpaceRatio
	sc.CleanResourceInterval = c.CleanResourceInterval
	sc.MaxMessageSize = c.MaxMessageSize
	sc.MessageDelayLevel = c.MessageDelayLevel
	sc.MaxHashSlotNum = c.MaxHashSlotNum
	sc.MaxIndexNum = c.MaxIndexNum
	sc.MessageIndexEnable = c.MessageIndexEnable
	sc.AccessMessageInMemoryMaxRatio = c.AccessMessageInMemoryMaxRatio
	sc.CheckCRCOnRead = c.CheckCRCOnRead
	sc.MaxTransferBytesOnMessageInMemory = c.MaxTransferBytesOnMessageInMemory
	sc.MaxTransferCountOnMessageInMemory = c.MaxTransferCountOnMessageInMemory
	sc.MaxTransferBytesOnMessageInDisk = c.MaxTransferBytesOnMessageInDisk
	sc.MaxTransferCountOnMessageInDisk = c.MaxTransferCountOnMessageInDisk
	if h, err := c.StoreHost(); err == nil {
		sc.StoreHost = h
	}
	return sc
}

// RemotingServerConfig maps the server* connection limits onto a remoting.ServerConfig.
func (c *Config) RemotingServerConfig() remoting.ServerConfig {
	return remoting.ServerConfig{
		IdleTimeout:                 remoting.IdleTimeoutFromConf(c.ServerChannelMaxIdleTime),
		FrameTimeout:                c.ServerFrameReadTimeout,
		MaxConnections:              c.ServerMaxConnections,
		MaxConnectionsPerAddress:    c.ServerMaxConnectionsPerAddress,
		MaxQueuedBytesPerConnection: c.ServerMaxQueuedBytesPerConnection,
		MaxQueuedBytesTotal:         c.ServerMaxQueuedBytesTotal,
	}
}

// Live guards a Config that UPDATE_BROKER_CONFIG may change while the broker runs.
type Live struct {
	mu  sync.RWMutex
	cfg Config
}

// NewLive wraps c.
func NewLive(c *Config) *Live { return &Live{cfg: *c} }

// Get returns a copy of the current configuration.
func (l *Live) Get() Config {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cfg
}

// RoleKeys are a role change's keys (a failover's): not live, yet UPDATE_BROKER_CONFIG
// may carry them, and the broker then reopens with them (Broker.Reopened).
var RoleKeys = []string{"brokerRole", "brokerId", "masterEpoch", "haMasterAddress"}

// WithRole returns the current config with props applied, where props may hold RoleKeys
// besides live keys, without installing it: the broker reopens with it.
func (l *Live) WithRole(props map[string]string) (Config, error) {
	next := l.Get()
	for k, v := range props {
		live := !slices.Contains(RoleKeys, k)
		known, err := next.set(k, v, live)
		if err != nil {
			return Config{}, err
		}
		if !known {
			return Config{}, fmt.Errorf("%w: unknown key %s", ErrInvalid, k)
		}
	}
	return next, next.Validate()
}

// Update applies props to a copy, validates it and installs it; keys that cannot change
// while running are refused. It returns the keys whose value changed.
func (l *Live) Update(props map[string]string) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := l.cfg
	before := next.Properties()
	for k, v := range props {
		known, err := next.set(k, v, true)
		if err != nil {
			return nil, err
		}
		if !known {
			return nil, fmt.Errorf("%w: unknown key %s", ErrInvalid, k)
		}
	}
	if err := next.Validate(); err != nil {
		return nil, err
	}
	var changed []string
	for k, v := range next.Properties() {
		if before[k] != v {
			changed = append(changed, k)
		}
	}
	sort.Strings(changed)
	l.cfg = next
	return changed, nil
}
