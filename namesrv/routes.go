package namesrv

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// brokerLive is what the name server knows of one registered broker address.
type brokerLive struct {
	addr         string
	lastUpdate   time.Time
	dataVersion  protocol.DataVersion
	conn         *remoting.Conn // the connection it registered over; an identity token in unit tests
	haServerAddr string
}

// brokerGroup is one brokerName: its addresses, and where else the name is entered, so
// that removing it touches its own entries only.
type brokerGroup struct {
	data     *protocol.BrokerData
	clusters map[string]struct{} // clusters listing the name
	topics   map[string]struct{} // topics with queues on it
	// epoch is the newest masterEpoch a master of the group registered with: an older
	// master is refused (fenced). Kept in memory only: after a restart the group's master
	// teaches it again at its next registration.
	epoch int64
}

// routeTable is the name server's view of the clusters, like Java's RouteInfoManager.
// One RWMutex guards every map; no method calls out while holding it.
//
// Invariants: a name is in clusters[c] iff c is in groups[name].clusters; topicQueues
// has topic -> name iff topic is in groups[name].topics; addrNames[a] holds name iff a
// is one of groups[name]'s addresses (an address has one id within a group); connAddrs
// holds a under c iff live[a].conn is c. verify (in tests) checks them.
type routeTable struct {
	mu            sync.RWMutex
	topicQueues   map[string]map[string]*protocol.QueueData // topic -> brokerName -> queues
	groups        map[string]*brokerGroup                   // brokerName -> group
	clusters      map[string]map[string]struct{}            // cluster -> brokerNames
	live          map[string]*brokerLive                    // brokerAddr -> liveness
	filterServers map[string][]string                       // brokerAddr -> filter servers
	addrNames     map[string]map[string]struct{}            // brokerAddr -> brokerNames listing it
	connAddrs     map[*remoting.Conn]map[string]struct{}    // connection -> brokerAddrs registered over it

	afterChunk func() // test hook: runs between removal chunks, with the lock released
}

func newRouteTable() *routeTable {
	return &routeTable{
		topicQueues:   map[string]map[string]*protocol.QueueData{},
		groups:        map[string]*brokerGroup{},
		clusters:      map[string]map[string]struct{}{},
		live:          map[string]*brokerLive{},
		filterServers: map[string][]string{},
		addrNames:     map[string]map[string]struct{}{},
		connAddrs:     map[*remoting.Conn]map[string]struct{}{},
	}
}

// registration is one REGISTER_BROKER, decoded.
type registration struct {
	cluster, brokerName, brokerAddr, haServerAddr string
	brokerID                                      int64
	masterEpoch                                   int64
	topics                                        *protocol.TopicConfigSerializeWrapper
	filterServers                                 []string // nil: leave as is
	conn                                          *remoting.Conn
}

// registerResult tells a slave where its master is ("" when no live master).
type registerResult struct {
	masterAddr, masterHA string
	isNew                bool // the address was not registered before
}

// errConnFull refuses a new address on a connection that registered its maximum.
var errConnFull = errors.New("namesrv: too many broker addresses registered over one connection")

// staleMasterError refuses a master whose epoch is older than the group's.
type staleMasterError struct{ epoch, groupEpoch int64 }

func (e *staleMasterError) Error() string {
	return fmt.Sprintf("%smasterEpoch %d, the group's master registered with %d", protocol.StaleMasterRemark, e.epoch, e.groupEpoch)
}

// register records a broker and, for a master whose topic table changed, its topics.
// A connection registers at most maxPerConn distinct addresses: beyond, errConnFull.
func (t *routeTable) register(r registration, now time.Time, maxPerConn int) (registerResult, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	prev, known := t.live[r.brokerAddr]
	if (!known || prev.conn != r.conn) && len(t.connAddrs[r.conn]) >= maxPerConn {
		return registerResult{}, errConnFull
	}

	first := false
	g := t.groups[r.brokerName]
	if g != nil && r.brokerID == protocol.MasterID && r.masterEpoch < g.epoch {
		return registerResult{}, &staleMasterError{epoch: r.masterEpoch, groupEpoch: g.epoch}
	}
	if g == nil {
		first = true
		g = &brokerGroup{
			data:     &protocol.BrokerData{Cluster: r.cluster, BrokerName: r.brokerName, BrokerAddrs: map[int64]string{}},
			clusters: map[string]struct{}{},
			topics:   map[string]struct{}{},
		}
		t.groups[r.brokerName] = g
	}
	if r.brokerID == protocol.MasterID {
		g.epoch = r.masterEpoch
	}
	g.clusters[r.cluster] = struct{}{}
	addToSet(t.clusters, r.cluster, r.brokerName)

	// One address has one id: a slave promoted to master drops its old slave entry.
	addrs := g.data.BrokerAddrs
	for id, addr := range addrs {
		if addr == r.brokerAddr && id != r.brokerID {
			delete(addrs, id)
		}
	}
	old, had := addrs[r.brokerID]
	if had && old != r.brokerAddr {
		removeFromSet(t.addrNames, old, r.brokerName) // another address took the id
	}
	addrs[r.brokerID] = r.brokerAddr
	addToSet(t.addrNames, r.brokerAddr, r.brokerName)
	first = first || !had || old == ""

	if r.topics != nil && r.brokerID == protocol.MasterID && (first || !known || prev.dataVersion != r.topics.DataVersion) {
		for _, tc := range r.topics.TopicConfigTable {
			t.putQueueDataLocked(r.brokerName, g, tc)
		}
	}
	dv := protocol.DataVersion{}
	if r.topics != nil {
		dv = r.topics.DataVersion
	}
	if known {
		removeFromSet(t.connAddrs, prev.conn, r.brokerAddr)
	}
	t.live[r.brokerAddr] = &brokerLive{addr: r.brokerAddr, lastUpdate: now, dataVersion: dv, conn: r.conn, haServerAddr: r.haServerAddr}
	addToSet(t.connAddrs, r.conn, r.brokerAddr)
	if r.filterServers != nil {
		if len(r.filterServers) == 0 {
			delete(t.filterServers, r.brokerAddr)
		} else {
			t.filterServers[r.brokerAddr] = slices.Clone(r.filterServers)
		}
	}
	res := registerResult{isNew: !known}
	if r.brokerID != protocol.MasterID {
		if m := addrs[protocol.MasterID]; m != "" {
			if ml := t.live[m]; ml != nil {
				res.masterAddr, res.masterHA = m, ml.haServerAddr
			}
		}
	}
	return res, nil
}

func (t *routeTable) putQueueDataLocked(brokerName string, g *brokerGroup, tc *protocol.TopicConfig) {
	if tc == nil || tc.TopicName == "" {
		return
	}
	qs := t.topicQueues[tc.TopicName]
	if qs == nil {
		qs = map[string]*protocol.QueueData{}
		t.topicQueues[tc.TopicName] = qs
	}
	qs[brokerName] = &protocol.QueueData{
		BrokerName:     brokerName,
		ReadQueueNums:  tc.ReadQueueNums,
		WriteQueueNums: tc.WriteQueueNums,
		Perm:           tc.Perm,
		TopicSysFlag:   tc.TopicSysFlag,
	}
	g.topics[tc.TopicName] = struct{}{}
}

// unregister removes one broker address, as UNREGISTER_BROKER asks; it reports whether
// the group listed it.
func (t *routeTable) unregister(brokerAddr, brokerName string, brokerID int64) (removed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forgetLiveLocked(brokerAddr)
	g := t.groups[brokerName]
	if g == nil {
		return false
	}
	if addr, ok := g.data.BrokerAddrs[brokerID]; ok {
		delete(g.data.BrokerAddrs, brokerID)
		removeFromSet(t.addrNames, addr, brokerName)
		removed = true
	}
	if len(g.data.BrokerAddrs) == 0 {
		t.removeGroupLocked(brokerName)
	}
	return removed
}

// forgetLiveLocked drops brokerAddr's liveness and filter servers.
func (t *routeTable) forgetLiveLocked(brokerAddr string) {
	if l, ok := t.live[brokerAddr]; ok {
		delete(t.live, brokerAddr)
		removeFromSet(t.connAddrs, l.conn, brokerAddr)
	}
	delete(t.filterServers, brokerAddr)
}

// removeAddrLocked forgets brokerAddr wherever it is registered (a closed connection or
// an expiry: the name server knows only the address) and returns how many entries it
// dropped, the measure of the work done under the lock.
func (t *routeTable) removeAddrLocked(brokerAddr string) int {
	t.forgetLiveLocked(brokerAddr)
	work := 0
	for name := range t.addrNames[brokerAddr] {
		g := t.groups[name]
		for id, addr := range g.data.BrokerAddrs {
			if addr == brokerAddr {
				delete(g.data.BrokerAddrs, id)
			}
		}
		work++
		if len(g.data.BrokerAddrs) == 0 {
			work += t.removeGroupLocked(name)
		}
	}
	delete(t.addrNames, brokerAddr)
	return work
}

// removeGroupLocked drops a broker group with no address left, its cluster entries and
// its queues; a topic served by no broker any more disappears. It returns how many
// entries it dropped.
func (t *routeTable) removeGroupLocked(brokerName string) int {
	g := t.groups[brokerName]
	delete(t.groups, brokerName)
	for cluster := range g.clusters {
		removeFromSet(t.clusters, cluster, brokerName)
	}
	for topic := range g.topics {
		removeFromSet(t.topicQueues, topic, brokerName)
	}
	return 1 + len(g.clusters) + len(g.topics)
}

// removeChunkWork bounds the entries one hold of the write lock drops when many brokers
// go at once (a connection that registered thousands closes, a mass expiry): lookups
// wait for one chunk, a fraction of a millisecond, instead of the whole batch.
const removeChunkWork = 256

// removeAddrs forgets those of addrs whose liveness still passes keep, checked under the
// lock since a broker may re-register between chunks, and returns what it forgot. It
// releases the lock after every removeChunkWork entries.
func (t *routeTable) removeAddrs(addrs []string, keep func(*brokerLive) bool) []*brokerLive {
	var gone []*brokerLive
	for len(addrs) > 0 {
		t.mu.Lock()
		for work := 0; work < removeChunkWork && len(addrs) > 0; work++ {
			l := t.live[addrs[0]]
			addrs = addrs[1:]
			if l != nil && keep(l) {
				gone = append(gone, l)
				work += t.removeAddrLocked(l.addr)
			}
		}
		t.mu.Unlock()
		runtime.Gosched() // the lookups waiting get the processor too, not only the lock
		if t.afterChunk != nil {
			t.afterChunk()
		}
	}
	return gone
}

// removeConn forgets every broker address registered over conn and returns them.
func (t *routeTable) removeConn(conn *remoting.Conn) []*brokerLive {
	t.mu.RLock()
	addrs := slices.Collect(maps.Keys(t.connAddrs[conn]))
	t.mu.RUnlock()
	slices.Sort(addrs)
	return t.removeAddrs(addrs, func(l *brokerLive) bool { return l.conn == conn })
}

// expire forgets brokers silent since before deadline and returns them, for the caller
// to close their connections.
func (t *routeTable) expire(deadline time.Time) []*brokerLive {
	silent := func(l *brokerLive) bool { return l.lastUpdate.Before(deadline) }
	t.mu.RLock()
	var addrs []string
	for addr, l := range t.live {
		if silent(l) {
			addrs = append(addrs, addr)
		}
	}
	t.mu.RUnlock()
	slices.Sort(addrs)
	return t.removeAddrs(addrs, silent)
}

// dataVersion returns the topic-table version brokerAddr last registered.
func (t *routeTable) dataVersion(brokerAddr string) (protocol.DataVersion, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	l, ok := t.live[brokerAddr]
	if !ok {
		return protocol.DataVersion{}, false
	}
	return l.dataVersion, true
}

// touch marks brokerAddr alive now.
func (t *routeTable) touch(brokerAddr string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l, ok := t.live[brokerAddr]; ok {
		l.lastUpdate = now
	}
}

// addToSet adds v to the set m[k], making it when missing.
func addToSet[K comparable](m map[K]map[string]struct{}, k K, v string) {
	s := m[k]
	if s == nil {
		s = map[string]struct{}{}
		m[k] = s
	}
	s[v] = struct{}{}
}

// removeFromSet removes v from m[k] and drops m[k] once empty.
func removeFromSet[K comparable, V any](m map[K]map[string]V, k K, v string) {
	if s, ok := m[k]; ok {
		delete(s, v)
		if len(s) == 0 {
			delete(m, k)
		}
	}
}

// sortedKeys returns m's keys in order, so answers do not depend on map order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
