package namesrv

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// brokerLive is what the name server knows of one registered broker address.
type brokerLive struct {
	lastUpdate   time.Time
	dataVersion  protocol.DataVersion
	conn         *remoting.Conn // the connection it registered over; nil in unit tests
	haServerAddr string
}

// routeTable is the name server's view of the clusters, like Java's RouteInfoManager.
// One RWMutex guards every map; no method calls out while holding it.
type routeTable struct {
	mu            sync.RWMutex
	topicQueues   map[string]map[string]*protocol.QueueData // topic -> brokerName -> queues
	brokers       map[string]*protocol.BrokerData           // brokerName -> group
	clusters      map[string]map[string]struct{}            // cluster -> brokerNames
	live          map[string]*brokerLive                    // brokerAddr -> liveness
	filterServers map[string][]string                       // brokerAddr -> filter servers
}

func newRouteTable() *routeTable {
	return &routeTable{
		topicQueues:   map[string]map[string]*protocol.QueueData{},
		brokers:       map[string]*protocol.BrokerData{},
		clusters:      map[string]map[string]struct{}{},
		live:          map[string]*brokerLive{},
		filterServers: map[string][]string{},
	}
}

// registration is one REGISTER_BROKER, decoded.
type registration struct {
	cluster, brokerName, brokerAddr, haServerAddr string
	brokerID                                      int64
	topics                                        *protocol.TopicConfigSerializeWrapper
	filterServers                                 []string // nil: leave as is
	conn                                          *remoting.Conn
}

// registerResult tells a slave where its master is ("" when no live master).
type registerResult struct {
	masterAddr, masterHA string
	isNew                bool // the address was not registered before
}

// register records a broker and, for a master whose topic table changed, its topics.
func (t *routeTable) register(r registration, now time.Time) registerResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := t.clusters[r.cluster]
	if names == nil {
		names = map[string]struct{}{}
		t.clusters[r.cluster] = names
	}
	names[r.brokerName] = struct{}{}

	first := false
	bd := t.brokers[r.brokerName]
	if bd == nil {
		first = true
		bd = &protocol.BrokerData{Cluster: r.cluster, BrokerName: r.brokerName, BrokerAddrs: map[int64]string{}}
		t.brokers[r.brokerName] = bd
	}
	// One address has one id: a slave promoted to master drops its old slave entry.
	for id, addr := range bd.BrokerAddrs {
		if addr == r.brokerAddr && id != r.brokerID {
			delete(bd.BrokerAddrs, id)
		}
	}
	old, had := bd.BrokerAddrs[r.brokerID]
	bd.BrokerAddrs[r.brokerID] = r.brokerAddr
	first = first || !had || old == ""

	if r.topics != nil && r.brokerID == protocol.MasterID {
		prev, ok := t.live[r.brokerAddr]
		if first || !ok || prev.dataVersion != r.topics.DataVersion {
			for _, tc := range r.topics.TopicConfigTable {
				t.putQueueDataLocked(r.brokerName, tc)
			}
		}
	}
	dv := protocol.DataVersion{}
	if r.topics != nil {
		dv = r.topics.DataVersion
	}
	_, known := t.live[r.brokerAddr]
	res := registerResult{isNew: !known}
	t.live[r.brokerAddr] = &brokerLive{lastUpdate: now, dataVersion: dv, conn: r.conn, haServerAddr: r.haServerAddr}
	if r.filterServers != nil {
		if len(r.filterServers) == 0 {
			delete(t.filterServers, r.brokerAddr)
		} else {
			t.filterServers[r.brokerAddr] = slices.Clone(r.filterServers)
		}
	}
	if r.brokerID != protocol.MasterID {
		if m := bd.BrokerAddrs[protocol.MasterID]; m != "" {
			if ml := t.live[m]; ml != nil {
				res.masterAddr, res.masterHA = m, ml.haServerAddr
			}
		}
	}
	return res
}

func (t *routeTable) putQueueDataLocked(brokerName string, tc *protocol.TopicConfig) {
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
}

// unregister removes one broker address, as UNREGISTER_BROKER asks.
func (t *routeTable) unregister(cluster, brokerAddr, brokerName string, brokerID int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.live, brokerAddr)
	delete(t.filterServers, brokerAddr)
	bd := t.brokers[brokerName]
	if bd == nil {
		return
	}
	delete(bd.BrokerAddrs, brokerID)
	if len(bd.BrokerAddrs) == 0 {
		t.removeBrokerNameLocked(cluster, brokerName)
	}
}

// removeAddrLocked forgets brokerAddr wherever it is registered (a closed connection or
// an expiry: the name server knows only the address).
func (t *routeTable) removeAddrLocked(brokerAddr string) {
	delete(t.live, brokerAddr)
	delete(t.filterServers, brokerAddr)
	for name, bd := range t.brokers {
		for id, addr := range bd.BrokerAddrs {
			if addr == brokerAddr {
				delete(bd.BrokerAddrs, id)
			}
		}
		if len(bd.BrokerAddrs) == 0 {
			t.removeBrokerNameLocked(bd.Cluster, name)
		}
	}
}

// removeBrokerNameLocked drops a broker group with no address left, its cluster entry
// and its queues; a topic served by no broker any more disappears.
func (t *routeTable) removeBrokerNameLocked(cluster, brokerName string) {
	delete(t.brokers, brokerName)
	if names := t.clusters[cluster]; names != nil {
		delete(names, brokerName)
		if len(names) == 0 {
			delete(t.clusters, cluster)
		}
	}
	for topic, qs := range t.topicQueues {
		delete(qs, brokerName)
		if len(qs) == 0 {
			delete(t.topicQueues, topic)
		}
	}
}

// removeConn forgets every broker address registered over conn and returns them.
func (t *routeTable) removeConn(conn *remoting.Conn) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var addrs []string
	for addr, l := range t.live {
		if l.conn == conn {
			addrs = append(addrs, addr)
		}
	}
	for _, addr := range addrs {
		t.removeAddrLocked(addr)
	}
	return addrs
}

// expire forgets brokers silent since before deadline and returns their connections
// (nil entries included) keyed by address, for the caller to close.
func (t *routeTable) expire(deadline time.Time) map[string]*remoting.Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out map[string]*remoting.Conn
	for addr, l := range t.live {
		if l.lastUpdate.Before(deadline) {
			if out == nil {
				out = map[string]*remoting.Conn{}
			}
			out[addr] = l.conn
			t.removeAddrLocked(addr)
		}
	}
	return out
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

// sortedKeys returns m's keys in order, so answers do not depend on map order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
