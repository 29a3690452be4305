package ha

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// MetadataApplier takes the master's metadata answers (JSON bodies, as the
// master's broker serves them) and replaces the slave's copies. Each call
// owns body.
type MetadataApplier interface {
	ApplyTopicConfig(body []byte) error        // GET_ALL_TOPIC_CONFIG: TopicConfigSerializeWrapper
	ApplyConsumerOffsets(body []byte) error    // GET_ALL_CONSUMER_OFFSET: ConsumerOffsetSerializeWrapper
	ApplyDelayOffsets(body []byte) error       // GET_ALL_DELAY_OFFSET: delayOffset.json; not called for an empty body
	ApplySubscriptionGroups(body []byte) error // GET_ALL_SUBSCRIPTIONGROUP_CONFIG: SubscriptionGroupWrapper
}

// Invoker sends a request and waits for the answer (*remoting.Client).
type Invoker interface {
	Invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error)
}

// SyncConfig configures a Synchronizer. Zero values take the defaults in brackets.
type SyncConfig struct {
	Interval     time.Duration // between rounds [10s]
	InitialDelay time.Duration // before the first round [3s]
	Timeout      time.Duration // per request [3s]
	// SelfAddr is this broker's address: a master address equal to it is
	// not synced from (4.9.7 does the same).
	SelfAddr string
	// VIPChannel sends GET_ALL_TOPIC_CONFIG to the master's port - 2, as
	// 4.9.7 does; the other three go to the master address as given.
	VIPChannel bool
	Logger     *slog.Logger // [slog.Default()]
}

// Synchronizer is a slave's metadata copier (4.9.7's SlaveSynchronize):
// every Interval it fetches the master's topics, consumer offsets, delay
// offsets and subscription groups and hands each answer to the applier.
type Synchronizer struct {
	cfg   SyncConfig
	rc    Invoker
	apply MetadataApplier
	log   *slog.Logger

	mu         sync.Mutex
	masterAddr string

	stop, done chan struct{}
	once       sync.Once
	started    bool
}

// NewSynchronizer returns a synchronizer; it does nothing until it has a
// master address (SetMasterAddr) and is started.
func NewSynchronizer(rc Invoker, apply MetadataApplier, cfg SyncConfig) *Synchronizer {
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.InitialDelay <= 0 {
		cfg.InitialDelay = 3 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 3 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Synchronizer{
		cfg: cfg, rc: rc, apply: apply, log: cfg.Logger.With("component", "slave-sync"),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
}

// SetMasterAddr sets the master's broker (remoting) address, the
// masterAddr of the name server's REGISTER_BROKER answer; "" pauses.
func (s *Synchronizer) SetMasterAddr(addr string) {
	s.mu.Lock()
	s.masterAddr = addr
	s.mu.Unlock()
}

// MasterAddr is the master's broker address in use; "" when none is known.
func (s *Synchronizer) MasterAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.masterAddr
}

// Start runs the sync loop in the background.
func (s *Synchronizer) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return
	}
	s.started = true
	go s.run()
}

// Close stops the loop and waits for a round in progress.
func (s *Synchronizer) Close() {
	s.once.Do(func() { close(s.stop) })
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		<-s.done
	}
}

func (s *Synchronizer) run() {
	defer close(s.done)
	t := time.NewTimer(s.cfg.InitialDelay)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-s.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		if err := s.SyncAll(ctx); err != nil {
			s.log.Warn("metadata sync from master failed", "err", err)
		}
		cancel()
		t.Reset(s.cfg.Interval)
	}
}

// SyncAll runs one round now. The four parts are independent: a failing
// one does not stop the others; the errors are joined.
func (s *Synchronizer) SyncAll(ctx context.Context) error {
	s.mu.Lock()
	addr := s.masterAddr
	s.mu.Unlock()
	if addr == "" || addr == s.cfg.SelfAddr {
		return nil
	}
	topicAddr := addr
	if s.cfg.VIPChannel {
		topicAddr = vipAddr(addr)
	}
	parts := []struct {
		name  string
		code  int16
		addr  string
		apply func([]byte) error
	}{
		{"topic config", remoting.GetAllTopicConfig, topicAddr, s.apply.ApplyTopicConfig},
		{"consumer offsets", remoting.GetAllConsumerOffset, addr, s.apply.ApplyConsumerOffsets},
		{"delay offsets", remoting.GetAllDelayOffset, addr, s.apply.ApplyDelayOffsets},
		{"subscription groups", remoting.GetAllSubscriptionGroupConfig, addr, s.apply.ApplySubscriptionGroups},
	}
	var errs []error
	for _, p := range parts {
		if err := s.syncOne(ctx, p.code, p.addr, p.code == remoting.GetAllDelayOffset, p.apply); err != nil {
			errs = append(errs, fmt.Errorf("%s from %s: %w", p.name, p.addr, err))
		}
	}
	return errors.Join(errs...)
}

func (s *Synchronizer) syncOne(ctx context.Context, code int16, addr string, skipEmpty bool, apply func([]byte) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	resp, err := s.rc.Invoke(ctx, addr, remoting.NewRequest(code, nil, nil))
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("ha: master answered code %d: %s", resp.Code, resp.Remark)
	}
	if skipEmpty && len(resp.Body) == 0 {
		return nil
	}
	return apply(resp.Body)
}

// vipAddr is addr with port - 2 (4.9.7's MixAll.brokerVIPChannel); addr
// unchanged when it has no numeric port.
func vipAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 2 {
		return addr
	}
	return net.JoinHostPort(host, strconv.Itoa(p-2))
}
