package namesrv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/metrics"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
	"github.com/openrmq/rocketmq-operator/pkg/tlsconfig"
)

// NameServer is a RocketMQ 4.x name server: brokers register their topics with it and
// clients ask it for routes. Several run side by side without sharing anything.
type NameServer struct {
	cfgMu   sync.RWMutex // cfg changes with UPDATE_NAMESRV_CONFIG
	cfg     Config
	log     *slog.Logger
	routes  *routeTable
	kv      *kvStore
	srv     *remoting.Server
	metrics *nsMetrics        // metricsExporterType=PROM; nil otherwise
	tls     *tlsconfig.Server // the listener's TLS (tls.server.*) and its certificate files

	refusedLog logLimiter // registrations refused by maxBrokersPerConnection
	staleLog   logLimiter // registrations refused as an older master than the group's

	mu       sync.Mutex
	listener net.Listener
	stop     chan struct{}
	scanDone chan struct{}
}

// New validates cfg, loads the KV config store and registers the request handlers. It
// does not listen yet: call Start.
func New(cfg Config) (*NameServer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	kv, warnings, err := openKVStore(cfg.KVConfigPath)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	tlsSrv, err := tlsconfig.NewServer(cfg.TLS, log, nil)
	if err != nil {
		return nil, fmt.Errorf("namesrv: %w", err)
	}
	n := &NameServer{cfg: cfg, log: log, routes: newRouteTable(), kv: kv, tls: tlsSrv, stop: make(chan struct{}),
		refusedLog: logLimiter{every: 10 * time.Second}, staleLog: logLimiter{every: 10 * time.Second}}
	if cfg.MetricsExporterType == metrics.ExporterProm {
		if n.metrics, err = newNSMetrics(n, cfg); err != nil {
			return nil, err
		}
	}
	sc := cfg.remotingConfig()
	sc.Logger, sc.OnClose, sc.TLS = log, n.onClose, tlsSrv.RemotingTLS()
	if n.metrics != nil {
		sc.OnReply = n.metrics.onReply
	}
	n.srv = remoting.NewServer(sc)
	pool := n.srv.NewPool("namesrv", cfg.ServerWorkerThreads, 10000)
	for code, h := range n.routesHandlers() {
		n.srv.Handle(code, h.adapt(), pool)
	}
	return n, nil
}

// Start listens on BindAddress:ListenPort and starts the liveness scan.
func (n *NameServer) Start() error {
	addr := net.JoinHostPort(n.cfg.BindAddress, strconv.Itoa(n.cfg.ListenPort))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return n.Serve(l)
}

// Serve is Start on a listener the caller opened. It returns at once.
func (n *NameServer) Serve(l net.Listener) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.listener != nil {
		l.Close()
		return errors.New("namesrv: already started")
	}
	if err := n.metrics.start(n.config()); err != nil {
		l.Close()
		return err
	}
	n.listener = l
	n.scanDone = make(chan struct{})
	n.tls.Start(0)
	go func() { _ = n.srv.Serve(l) }() // only net.ErrClosed, once Shutdown closes l
	go n.scanLoop()
	n.log.Info("name server listening", "addr", l.Addr().String())
	return nil
}

// Addr returns a dialable address of the listener ("" before Start): a wildcard listen
// address is reported as 127.0.0.1, so brokers and clients on this host can use it as is.
func (n *NameServer) Addr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.listener == nil {
		return ""
	}
	ta, ok := n.listener.Addr().(*net.TCPAddr)
	if !ok {
		return n.listener.Addr().String()
	}
	if ta.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(ta.Port))
	}
	return ta.String()
}

// Shutdown stops the scan, finishes the requests in flight (or gives up when ctx ends)
// and closes every connection. KV changes are already on disk.
func (n *NameServer) Shutdown(ctx context.Context) error {
	n.mu.Lock()
	started := n.listener != nil
	select {
	case <-n.stop:
	default:
		close(n.stop)
	}
	n.mu.Unlock()
	err := n.srv.Shutdown(ctx)
	n.tls.Close()
	if started {
		<-n.scanDone
	}
	n.metrics.close()
	return err
}

// scanLoop drops brokers that stopped re-registering, like Java's scanNotActiveBroker.
func (n *NameServer) scanLoop() {
	defer close(n.scanDone)
	t := time.NewTicker(n.config().ScanNotActiveBrokerInterval)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case now := <-t.C:
			n.scanNotActiveBrokers(now)
		}
	}
}

func (n *NameServer) scanNotActiveBrokers(now time.Time) {
	expiry := n.config().BrokerChannelExpiredTime
	gone := n.routes.expire(now.Add(-expiry))
	n.metrics.removed(removedExpired, len(gone))
	n.logRemoved(slog.LevelWarn, gone, "broker expired: no registration within the timeout",
		fmt.Sprintf("(no registration within %v)", expiry), "timeout", expiry)
	closing := map[*remoting.Conn]bool{}
	for _, l := range gone {
		if l.conn != nil && !closing[l.conn] {
			closing[l.conn] = true
			go l.conn.Close() // waits up to a second for a peer that does not read
		}
	}
}

// onClose forgets the brokers that registered over a closed connection.
func (n *NameServer) onClose(conn *remoting.Conn) {
	remote := conn.RemoteAddr()
	gone := n.routes.removeConn(conn)
	n.metrics.removed(removedConnClosed, len(gone))
	n.logRemoved(slog.LevelInfo, gone, "broker connection closed, broker removed",
		"registered over "+remote+" (connection closed)", "remote", remote)
}

// logEachRemoved is the most brokers removed together that get a line each: operators
// look for which broker left, but a client that registered thousands must not flood.
const logEachRemoved = 10

// logRemoved logs brokers removed together: msg with their address and attrs for each
// of a few, else one line "namesrv: removed N brokers <summary>".
func (n *NameServer) logRemoved(level slog.Level, gone []*brokerLive, msg, summary string, attrs ...any) {
	ctx := context.Background()
	if len(gone) > logEachRemoved {
		n.log.Log(ctx, level, fmt.Sprintf("namesrv: removed %d brokers %s", len(gone), summary))
		return
	}
	for _, l := range gone {
		n.log.Log(ctx, level, msg, append([]any{"addr", l.addr}, attrs...)...)
	}
}

// logLimiter lets one line through per interval, for lines a client can provoke at will,
// and counts the ones it held back.
type logLimiter struct {
	every time.Duration

	mu   sync.Mutex
	next time.Time
	held int
}

// allow reports whether a line may go out at now, and how many were held back before it.
func (l *logLimiter) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.next) {
		l.held++
		return false, 0
	}
	held := l.held
	l.next, l.held = now.Add(l.every), 0
	return true, held
}
