package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/acl"
	"github.com/openrmq/rocketmq-operator/broker/client"
	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/broker/ha"
	"github.com/openrmq/rocketmq-operator/broker/lock"
	"github.com/openrmq/rocketmq-operator/broker/longpoll"
	"github.com/openrmq/rocketmq-operator/broker/metadata"
	"github.com/openrmq/rocketmq-operator/broker/schedule"
	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/broker/transaction"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
	"github.com/openrmq/rocketmq-operator/pkg/tlsconfig"
)

// Options are the parts of a Broker that are not broker.conf keys.
type Options struct {
	Logger *slog.Logger
	// NoFastChannel skips the listenPort-2 listener and lets a master's HA server take
	// any free port instead of listenPort+1 (tests on random ports).
	NoFastChannel bool
	// InAppend, for tests, runs inside every commitlog append (a slow page cache).
	InAppend func()
}

// Broker is one broker process.
type Broker struct {
	cfg       *config.Live
	log       *slog.Logger
	store     *store.Store
	puts      *putPath // every write goes through it (put.go)
	topics    *metadata.Topics
	groups    *metadata.Groups
	offsets   *metadata.Offsets
	clients   *client.Registry
	locks     *lock.Manager
	lockConns lockConns // the connections queue locks were taken over
	holder    *longpoll.Holder
	filters   filterCache          // subscription expressions compiled once (filtercache.go)
	sched     *schedule.Service    // delayed delivery
	txn       *transaction.Service // transaction ends and checks
	server    *remoting.Server
	pools     pools             // the worker pools flow control looks after (flowcontrol.go)
	acl       *acl.Watcher      // aclEnable: the plain ACL rules; nil without
	tlsServer *tlsconfig.Server // the listeners' TLS (tls.server.*), HA port included
	tlsClient *tlsconfig.Client // tls.enable: TLS to name servers and the master; nil without
	nsClient  *remoting.Client
	links     nsLinks          // registration state per name server (namesrv.go)
	haServer  *ha.Server       // master: serves the commitlog to slaves
	haClient  *ha.Client       // slave: copies the master's commitlog
	haSync    *ha.Synchronizer // slave: copies the master's metadata
	epochMu   sync.Mutex
	epochs    epochState  // the epoch history and the last rejoin cut (epoch.go)
	fenced    atomic.Bool // a name server knows a newer master: writes refused
	// followsMaster: a slave's epoch check passed (checkMaster); until then it keeps its
	// own consumer offsets, which handOverOffsets may still need.
	followsMaster atomic.Bool
	reopenMu      sync.Mutex
	reopen        chan config.Config // Reopened: holds at most the newest request
	// slaveWaitLogged is when waitSlave last logged a send it answered unacknowledged
	// (unix nanoseconds).
	slaveWaitLogged atomic.Int64
	storeHost       netip.AddrPort
	startTime       time.Time
	stats           *stats
	metrics         *brokerMetrics // metricsExporterType=PROM; nil otherwise
	opts            Options

	listeners []net.Listener
	kick      chan struct{} // register with the name servers now
	stop      chan struct{}
	wg        sync.WaitGroup
	shutdown  sync.Once
}

// New opens the store and the metadata of cfg. Start serves.
func New(cfg *config.Config, opts Options) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	b := &Broker{
		cfg:       config.NewLive(cfg),
		log:       log,
		clients:   client.NewRegistry(),
		locks:     lock.NewManager(),
		opts:      opts,
		kick:      make(chan struct{}, 1),
		reopen:    make(chan config.Config, 1),
		stop:      make(chan struct{}),
		startTime: time.Now(),
		stats:     newStats(),
	}
	b.links.init()
	var err error
	if b.storeHost, err = cfg.StoreHost(); err != nil {
		return nil, err
	}
	if err := b.initACL(cfg); err != nil {
		return nil, err
	}
	if b.tlsServer, err = tlsconfig.NewServer(cfg.TLS, log, nil); err != nil {
		return nil, err
	}
	if b.tlsClient, err = tlsconfig.NewClient(cfg.TLS, log, nil); err != nil {
		return nil, err
	}

	dir := metadata.ConfigDir(cfg.StorePathRootDir)
	levels, _ := store.ParseDelayLevels(cfg.MessageDelayLevel)
	if b.topics, err = metadata.LoadTopics(dir, metadata.TopicOptions{
		ClusterName: cfg.BrokerClusterName, BrokerName: cfg.BrokerName,
		AutoCreateTopicEnable: cfg.AutoCreateTopicEnable, DefaultTopicQueueNums: cfg.DefaultTopicQueueNums,
		ClusterTopicEnable: cfg.ClusterTopicEnable, BrokerTopicEnable: cfg.BrokerTopicEnable,
		TraceTopicEnable: cfg.TraceTopicEnable, TraceTopicName: cfg.MsgTraceTopicName, DelayLevels: len(levels),
	}); err != nil {
		return nil, err
	}
	if b.groups, err = metadata.LoadGroups(dir); err != nil {
		return nil, err
	}
	if b.offsets, err = metadata.LoadOffsets(dir); err != nil {
		return nil, err
	}
	// Persist once so that a fresh broker's config folder is complete.
	if err := errors.Join(b.topics.Persist(), b.groups.Persist(), b.offsets.Persist(true)); err != nil {
		return nil, fmt.Errorf("broker: write config files: %w", err)
	}
	b.topics.OnChange(b.kickRegister)
	if cfg.MetricsEnabled() {
		if b.metrics, err = newBrokerMetrics(b, cfg); err != nil {
			return nil, err
		}
	}

	sc := cfg.StoreConfig()
	sc.Logger = log.With("component", "store")
	sc.InAppend = opts.InAppend
	if b.metrics != nil {
		sc.OnGroupCommit = b.metrics.onGroupCommit
	}
	if b.store, err = store.Open(sc); err != nil {
		return nil, err
	}
	if err := b.loadEpochs(cfg); err != nil {
		b.store.Close()
		return nil, err
	}
	b.puts = &putPath{store: b.store, wakeHA: b.notifyHA, stats: b.stats}
	b.sched, err = schedule.New(serviceStore{b.store, b.puts, scheduleKind}, schedule.Config{ConfigDir: dir,
		Logger: log.With("component", "schedule")})
	if err != nil {
		b.store.Close()
		return nil, err
	}
	b.txn = transaction.New(serviceStore{b.store, b.puts, transactionKind}, b.offsets, b.checkTransaction, transaction.Config{
		FileReservedTime:   cfg.FileReservedTime,
		CheckInterval:      cfg.TransactionCheckInterval,
		TransactionTimeout: cfg.TransactionTimeOut,
		CheckMax:           cfg.TransactionCheckMax,
		Logger:             log.With("component", "transaction"),
	})
	interval := time.Second
	if !cfg.LongPollingEnable {
		interval = min(interval, cfg.ShortPollingTime)
	}
	b.holder = longpoll.New(interval, b.store.MaxOffsetInQueue)
	b.store.OnArrival(func(a *store.Arrival) {
		b.holder.Notify(a.Topic, a.QueueID, a.MaxOffset, a.TagsCode)
	})

	rc := cfg.RemotingServerConfig()
	rc.Logger, rc.OnClose, rc.BeforeHandle = log, b.connClosed, b.beforeHandle
	if b.metrics != nil {
		rc.OnReply = b.metrics.onReply
	}
	rc.TLS = b.tlsServer.RemotingTLS() // the fast channel too: one server, both ports
	// Sends and pulls read their headers through decoders only (the ACL check makes the
	// map when it is on): no ExtFields map per request.
	rc.UnmappedFieldCodes = []int16{remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage, remoting.PullMessage}
	// handleSend copies a send's body into the commitlog before it returns.
	rc.ReusedFrameCodes = []int16{remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage}
	b.server = remoting.NewServer(rc)
	b.nsClient = remoting.NewClient(remoting.ClientConfig{Logger: log, TLS: b.tlsClient.Config()})
	b.setupHA(cfg, b.store)
	b.registerProcessors()
	return b, nil
}

// withBody is a SUCCESS response to req carrying body.
func withBody(req *remoting.Command, body []byte) *remoting.Command {
	resp := req.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp
}

func (b *Broker) registerProcessors() {
	c := b.cfg.Get()
	s := b.server
	send := s.NewPool("send", c.SendMessageThreadPoolNums, c.SendThreadPoolQueueCapacity)
	pull := s.NewPool("pull", c.PullMessageThreadPoolNums, c.PullThreadPoolQueueCapacity)
	admin := s.NewPool("admin", c.AdminBrokerThreadPoolNums, 10000)
	clients := s.NewPool("client", c.ClientManageThreadPoolNums, 50000)
	consumers := s.NewPool("consumer", c.ConsumerManageThreadPoolNums, 100000)
	// Offset commits and queries run on one worker, in arrival order: clients send a
	// oneway UPDATE_CONSUMER_OFFSET and at once a QUERY_CONSUMER_OFFSET for the same
	// queue (the Go client does so when it re-adds a queue after a reset), and the query
	// must see the commit. Both are map operations of a microsecond.
	offsets := s.NewPool("offset", 1, 100000)
	// Every handler returns (response, error); an error is answered SYSTEM_ERROR with its
	// text as remark (remoting.ErrHandlerFunc).
	h := func(code int16, f remoting.ErrHandlerFunc, p *remoting.Pool) { s.Handle(code, f, p) }

	h(remoting.SendMessage, b.handleSend, send)
	h(remoting.SendMessageV2, b.handleSend, send)
	h(remoting.SendBatchMessage, b.handleSend, send)
	reply := s.NewPool("reply", replyPoolWorkers(), replyPoolQueue)
	h(remoting.SendReplyMessage, b.handleSendReply, reply)
	h(remoting.SendReplyMessageV2, b.handleSendReply, reply)

	h(remoting.PullMessage, b.handlePull, pull)

	h(remoting.HeartBeat, b.handleHeartbeat, clients)
	h(remoting.UnregisterClient, b.handleUnregisterClient, clients)
	h(remoting.CheckClientConfig, b.handleCheckClientConfig, clients)
	h(remoting.GetConsumerListByGroup, b.handleGetConsumerList, consumers)
	h(remoting.GetProducerConnectionList, b.handleProducerConnections, consumers)
	h(remoting.LockBatchMQ, b.handleLockBatch, consumers)
	h(remoting.UnlockBatchMQ, b.handleUnlockBatch, consumers)

	h(remoting.ConsumerSendMsgBack, b.handleSendBack, send)
	h(remoting.EndTransaction, b.handleEndTransaction, send)
	h(remoting.QueryConsumerOffset, b.handleQueryConsumerOffset, offsets)
	h(remoting.UpdateConsumerOffset, b.handleUpdateConsumerOffset, offsets)
	h(remoting.GetMaxOffset, b.handleGetMaxOffset, admin)
	h(remoting.GetMinOffset, b.handleGetMinOffset, admin)
	h(remoting.GetEarliestMsgStoreTime, b.handleGetEarliestMsgStoreTime, admin)
	h(remoting.SearchOffsetByTimestamp, b.handleSearchOffsetByTimestamp, admin)
	h(remoting.GetAllDelayOffset, b.handleGetAllDelayOffset, admin)

	b.registerAdmin(admin)
	b.pools = pools{send: send, pull: pull, heartbeat: clients}
}

// Start listens on listenPort and the fast channel listenPort-2, registers with the name
// servers and starts the periodic tasks.
func (b *Broker) Start() error {
	c := b.cfg.Get()
	ports := []int{c.ListenPort}
	if !b.opts.NoFastChannel {
		ports = append(ports, c.ListenPort-2)
	}
	for _, p := range ports {
		l, err := b.server.Listen(net.JoinHostPort("", strconv.Itoa(p)))
		if err != nil {
			return errors.Join(fmt.Errorf("broker: listen on port %d: %w", p, err), b.server.Shutdown(context.Background()))
		}
		b.listeners = append(b.listeners, l)
	}
	if err := b.startHA(); err != nil {
		return errors.Join(err, b.server.Shutdown(context.Background()))
	}
	if err := b.metrics.start(c); err != nil {
		err = errors.Join(err, b.server.Shutdown(context.Background()))
		b.closeHA()
		return err
	}
	b.log.Info("broker started", "name", c.BrokerName, "cluster", c.BrokerClusterName, "addr", c.BrokerAddr(),
		"namesrv", c.NamesrvAddr, "store", c.StorePathRootDir, "role", c.BrokerRole, "brokerId", c.BrokerID,
		"tls.server.mode", c.TLS.Mode().String(), "tls.enable", c.TLS.Enable)
	// A slave's store holds the master's records only: no delivery of delayed
	// messages and no transaction checks there (4.9.7 runs both on masters only).
	if c.BrokerRole != config.Slave {
		b.sched.Start()
		b.txn.Start()
	}
	b.tlsServer.Start(0)
	b.tlsClient.Start(0)
	b.registerAll()
	b.watchACL()
	b.every(func() time.Duration { return b.cfg.Get().RegisterNameServerPeriod }, b.registerAll, b.kick)
	b.every(func() time.Duration { return c.FlushConsumerOffsetInterval }, b.persistOffsets, nil)
	b.every(func() time.Duration { return 10 * time.Second }, b.scanExpiredClients, nil)
	b.every(func() time.Duration { return 10 * time.Second }, b.stats.sample, nil)
	b.every(func() time.Duration { return fastFailurePeriod }, b.cleanExpiredRequests, nil)
	return nil
}

// every runs f each period(), and also whenever kick fires.
func (b *Broker) every(period func() time.Duration, f func(), kick <-chan struct{}) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		t := time.NewTimer(period())
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				return
			case <-t.C:
			case <-kick:
				if !t.Stop() {
					select {
					case <-t.C:
					default:
					}
				}
			}
			f()
			t.Reset(period())
		}
	}()
}

func (b *Broker) kickRegister() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

func (b *Broker) persistOffsets() {
	if err := b.offsets.Persist(false); err != nil {
		b.log.Error("cannot persist consumer offsets", "err", err)
	}
}

// Addr is the address the broker announces to clients: brokerIP1 and advertisedListenPort
// (listenPort when 0).
func (b *Broker) Addr() string { return b.cfg.Get().BrokerAddr() }

// ListenAddrs returns the bound listener addresses.
func (b *Broker) ListenAddrs() []string {
	var out []string
	for _, l := range b.listeners {
		out = append(out, l.Addr().String())
	}
	return out
}

// Shutdown stops the broker: unregisters from the name servers, stops accepting,
// answers held pulls, waits for in-flight requests, persists offsets and configs, and
// closes the store (flush, clean-shutdown marker). ctx bounds the waits on the network
// (the unregistrations, the in-flight requests); once it is done they are cut short and
// its error is returned, but the metadata is still persisted and the store closed.
func (b *Broker) Shutdown(ctx context.Context) error {
	var errs []error
	b.shutdown.Do(func() {
		close(b.stop)
		b.wg.Wait()
		b.unregisterAll(ctx)
		b.holder.Close()
		if err := b.server.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
		// Replication stops before the store closes; the synchronizer uses nsClient.
		b.closeHA()
		b.metrics.close()
		b.nsClient.Close()
		b.tlsServer.Close()
		b.tlsClient.Close()
		// The services stop before the store, which flushes what they put, and before
		// the offsets are written (the transaction scan keeps its progress there).
		errs = append(errs, b.txn.Close(), b.sched.Close())
		errs = append(errs, b.offsets.Persist(true), b.topics.Persist(), b.groups.Persist())
		errs = append(errs, b.store.Close())
		if err := ctx.Err(); err != nil && !errors.Is(errors.Join(errs...), err) {
			errs = append(errs, fmt.Errorf("broker: shutdown cut short: %w", err))
		}
		b.log.Info("broker stopped", "name", b.cfg.Get().BrokerName)
	})
	return errors.Join(errs...)
}

// Config returns the current configuration.
func (b *Broker) Config() config.Config { return b.cfg.Get() }
