package broker

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// registrationBody is the REGISTER_BROKER body: the topic table, with every topic's perm
// narrowed to the broker's when the broker is not writable (as Java does).
func (b *Broker) registrationBody(c config.Config) ([]byte, error) {
	wrapper := b.topics.Snapshot()
	if !protocol.IsWriteable(c.BrokerPermission) || !protocol.IsReadable(c.BrokerPermission) {
		for _, tc := range wrapper.TopicConfigTable {
			tc.Perm &= c.BrokerPermission
		}
	}
	body := protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: wrapper, FilterServerList: []string{}}
	return body.Encode(false)
}

func (b *Broker) haServerAddr(c config.Config) string {
	ip := c.BrokerIP2
	if ip == "" {
		ip = c.BrokerIP1
	}
	return net.JoinHostPort(ip, strconv.Itoa(c.HAPort()))
}

// Registration with the name servers. Besides the periodic round (registerAll, every
// registerNameServerPeriod and whenever the topics change), each name server is kept
// registered on its own:
//
//   - a failed registration is retried after registerRetryMin, doubling up to
//     registerRetryMax, until it succeeds (a broker that starts before the name servers'
//     DNS names exist is registered a second later, not a period later);
//   - once registered, the broker watches that connection: when it closes (the name server
//     restarted and knows no broker), it registers again at once, retrying as above.
//
// A name server removed from namesrvAddr stops its retries. Ready reports whether at least
// one name server holds the current registration.
const (
	registerRetryMin = 250 * time.Millisecond
	registerRetryMax = 2 * time.Second
)

// nsLinks is the per-name-server registration state.
type nsLinks struct {
	mu         sync.Mutex
	registered map[string]*remoting.Conn // name server -> connection it holds our registration on
	retrying   map[string]bool
}

func (l *nsLinks) init() {
	l.registered = map[string]*remoting.Conn{}
	l.retrying = map[string]bool{}
}

// registeredCount is the number of name servers whose connection our last registration
// went over is still open.
func (l *nsLinks) registeredCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.registered {
		if c.Err() == nil {
			n++
		}
	}
	return n
}

// registerAll registers with every name server in parallel.
func (b *Broker) registerAll() {
	c := b.cfg.Get()
	addrs := config.NamesrvList(c.NamesrvAddr)
	b.links.forgetExcept(addrs)
	if len(addrs) == 0 {
		return
	}
	var wg sync.WaitGroup
	for _, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.registerWith(addr); err != nil {
				b.retryRegister(addr)
			}
		}()
	}
	wg.Wait()
}

// forgetExcept drops the state of name servers no longer in addrs.
func (l *nsLinks) forgetExcept(addrs []string) {
	keep := map[string]bool{}
	for _, a := range addrs {
		keep[a] = true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for a := range l.registered {
		if !keep[a] {
			delete(l.registered, a)
		}
	}
}

// listed reports whether addr is in the current namesrvAddr.
func (b *Broker) listed(addr string) bool {
	for _, a := range config.NamesrvList(b.cfg.Get().NamesrvAddr) {
		if a == addr {
			return true
		}
	}
	return false
}

// registerWith sends one REGISTER_BROKER to addr with the current topics. On success it
// watches the connection, and registers again when it closes.
func (b *Broker) registerWith(addr string) (err error) {
	defer func() { b.metrics.registration(addr, err == nil) }()
	c := b.cfg.Get()
	body, err := b.registrationBody(c)
	if err != nil {
		b.log.Error("cannot encode the registration body", "err", err)
		return err
	}
	hdr := protocol.RegisterBrokerRequestHeader{
		BrokerName: c.BrokerName, BrokerAddr: c.BrokerAddr(), ClusterName: c.BrokerClusterName,
		HaServerAddr: b.haServerAddr(c), BrokerID: c.BrokerID, MasterEpoch: b.registrationEpoch(c),
		BodyCrc32: int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF),
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.RegisterBrokerTimeout)
	defer cancel()
	conn, err := b.nsClient.Conn(ctx, addr)
	if err != nil {
		b.log.Warn("register broker failed", "namesrv", addr, "err", err)
		return err
	}
	req := remoting.NewRequest(remoting.RegisterBroker, remoting.EncodeHeader(&hdr), body)
	resp, err := conn.Invoke(ctx, req)
	switch {
	case err != nil:
		b.log.Warn("register broker failed", "namesrv", addr, "err", err)
		return err
	case resp.Code != remoting.Success:
		if strings.HasPrefix(resp.Remark, protocol.StaleMasterRemark) {
			b.fence(resp.Remark)
		}
		b.log.Warn("register broker refused", "namesrv", addr, "code", resp.Code, "remark", resp.Remark)
		return fmt.Errorf("register broker refused by %s: code %d %s", addr, resp.Code, resp.Remark)
	}
	b.log.Debug("registered with name server", "namesrv", addr)
	b.onRegistered(resp)
	b.watchRegistration(addr, conn)
	return nil
}

// watchRegistration remembers that addr holds our registration over conn and, the first
// time conn is seen, registers again as soon as it closes.
func (b *Broker) watchRegistration(addr string, conn *remoting.Conn) {
	l := &b.links
	l.mu.Lock()
	prev := l.registered[addr]
	l.registered[addr] = conn
	l.mu.Unlock()
	if prev == conn {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		select {
		case <-b.stop:
			return
		case <-conn.Done():
		}
		l.mu.Lock()
		current := l.registered[addr] == conn
		if current {
			delete(l.registered, addr)
		}
		l.mu.Unlock()
		if current && b.listed(addr) {
			b.log.Info("connection to name server closed, registering again", "namesrv", addr)
			b.retryRegister(addr)
		}
	}()
}

// retryRegister registers with addr in the background until it succeeds, addr leaves
// namesrvAddr or the broker stops; the first attempt is registerRetryMin from now. One
// retry loop per name server at a time.
func (b *Broker) retryRegister(addr string) {
	l := &b.links
	l.mu.Lock()
	if l.retrying[addr] {
		l.mu.Unlock()
		return
	}
	l.retrying[addr] = true
	l.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer func() {
			l.mu.Lock()
			delete(l.retrying, addr)
			l.mu.Unlock()
		}()
		delay := registerRetryMin
		t := time.NewTimer(delay)
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				return
			case <-t.C:
			}
			if !b.listed(addr) || b.registerWith(addr) == nil {
				return
			}
			delay = min(2*delay, registerRetryMax)
			t.Reset(delay)
		}
	}()
}

// errNotRegistered is the readiness of a broker no name server holds.
var errNotRegistered = errors.New("not registered with any name server")

// errNoMaster is the readiness of a slave without a replication connection to its master.
var errNoMaster = errors.New("slave: not connected to its master")

// Ready tells whether the broker serves what a client needs: registered with at least one
// name server (clients find it), and for a slave also connected to its master (it
// replicates). nil means ready. A broker with no name servers configured is registered
// nowhere and needs not be.
func (b *Broker) Ready() error {
	if len(config.NamesrvList(b.cfg.Get().NamesrvAddr)) > 0 && b.links.registeredCount() == 0 {
		return errNotRegistered
	}
	if b.haClient != nil && !b.haClient.Connected() {
		return errNoMaster
	}
	return nil
}

// unregisterAll tells every name server the broker is leaving.
func (b *Broker) unregisterAll(ctx context.Context) {
	c := b.cfg.Get()
	hdr := protocol.UnregisterBrokerRequestHeader{
		BrokerName: c.BrokerName, BrokerAddr: c.BrokerAddr(), ClusterName: c.BrokerClusterName, BrokerID: c.BrokerID,
	}
	var wg sync.WaitGroup
	for _, addr := range config.NamesrvList(c.NamesrvAddr) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			req := remoting.NewRequest(remoting.UnregisterBroker, remoting.EncodeHeader(&hdr), nil)
			if _, err := b.nsClient.Invoke(ctx, addr, req); err != nil {
				b.log.Warn("unregister broker failed", "namesrv", addr, "err", err)
			}
		}()
	}
	wg.Wait()
}
