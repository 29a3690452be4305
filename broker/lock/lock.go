// Package lock is the broker's ordered-consumption lock table, the state
// behind LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42).
//
// An orderly consumer locks the queues its rebalance assigned to it before
// consuming them, and renews the locks every 20 s. Per consumer group, a
// message queue (topic, brokerName, queueId) is owned by at most one client
// id. A lock expires LockMaxLiveTime (60 s, Java's
// rocketmq.broker.rebalance.lockMaxLiveTime) after its last renewal; after
// that any client of the group may take it. Locks live in memory only, as
// in RocketMQ: after a broker restart clients re-lock within one renewal.
package lock

import (
	"sort"
	"sync"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// DefaultLockMaxLiveTime is how long a lock lives without renewal.
const DefaultLockMaxLiveTime = 60 * time.Second

// MessageQueue identifies a queue, as the clients send it.
type MessageQueue = protocol.MessageQueue

// LockBatchRequestBody is the body of LOCK_BATCH_MQ (Java
// LockBatchRequestBody; the Go client omits onlyThisBroker).
type LockBatchRequestBody struct {
	ConsumerGroup  string         `json:"consumerGroup"`
	ClientID       string         `json:"clientId"`
	OnlyThisBroker bool           `json:"onlyThisBroker"`
	MQSet          []MessageQueue `json:"mqSet"`
}

// LockBatchResponseBody is the body of the LOCK_BATCH_MQ response: the
// queues now locked by the requesting client.
type LockBatchResponseBody struct {
	LockOKMQSet []MessageQueue `json:"lockOKMQSet"`
}

// UnlockBatchRequestBody is the body of UNLOCK_BATCH_MQ; the response has
// no body.
type UnlockBatchRequestBody struct {
	ConsumerGroup  string         `json:"consumerGroup"`
	ClientID       string         `json:"clientId"`
	OnlyThisBroker bool           `json:"onlyThisBroker"`
	MQSet          []MessageQueue `json:"mqSet"`
}

type entry struct {
	clientID    string
	lastUpdated time.Time
}

// Manager holds the locks of all groups. It is safe for concurrent use.
type Manager struct {
	maxLive time.Duration
	now     func() time.Time

	mu     sync.Mutex
	groups map[string]map[MessageQueue]*entry // group -> queue -> owner
}

// Option configures a Manager.
type Option func(*Manager)

// WithMaxLiveTime sets the lock lifetime without renewal (default 60 s).
func WithMaxLiveTime(d time.Duration) Option { return func(m *Manager) { m.maxLive = d } }

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option { return func(m *Manager) { m.now = now } }

// NewManager returns an empty lock table.
func NewManager(opts ...Option) *Manager {
	m := &Manager{maxLive: DefaultLockMaxLiveTime, now: time.Now, groups: map[string]map[MessageQueue]*entry{}}
	for _, o := range opts {
		o(m)
	}
	return m
}

func (m *Manager) expired(e *entry, now time.Time) bool {
	return now.Sub(e.lastUpdated) > m.maxLive
}

// LockBatch locks (or renews) each queue of mqs for clientID in group and
// returns the queues now locked by clientID, sorted. A queue held by
// another client whose lock has not expired is left out.
func (m *Manager) LockBatch(group string, mqs []MessageQueue, clientID string) []MessageQueue {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	table := m.groups[group]
	if table == nil {
		table = map[MessageQueue]*entry{}
		m.groups[group] = table
	}
	locked := make([]MessageQueue, 0, len(mqs))
	seen := make(map[MessageQueue]bool, len(mqs))
	for _, mq := range mqs {
		if seen[mq] {
			continue
		}
		seen[mq] = true
		e := table[mq]
		switch {
		case e == nil:
			table[mq] = &entry{clientID: clientID, lastUpdated: now}
		case e.clientID == clientID || m.expired(e, now):
			// Renewal, or take-over of an expired lock.
			e.clientID, e.lastUpdated = clientID, now
		default:
			continue // held by a live other client
		}
		locked = append(locked, mq)
	}
	sortQueues(locked)
	return locked
}

// UnlockBatch releases the queues of mqs that clientID holds in group;
// locks held by other clients are left alone.
func (m *Manager) UnlockBatch(group string, mqs []MessageQueue, clientID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	table := m.groups[group]
	for _, mq := range mqs {
		if e := table[mq]; e != nil && e.clientID == clientID {
			delete(table, mq)
		}
	}
	if len(table) == 0 {
		delete(m.groups, group)
	}
}

// IsLocked reports whether clientID holds a live lock on mq in group. It
// does not renew the lock.
func (m *Manager) IsLocked(group string, mq MessageQueue, clientID string) bool {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.groups[group][mq]
	return e != nil && e.clientID == clientID && !m.expired(e, now)
}

// Owner returns the client id holding a live lock on mq in group.
func (m *Manager) Owner(group string, mq MessageQueue) (string, bool) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.groups[group][mq]
	if e == nil || m.expired(e, now) {
		return "", false
	}
	return e.clientID, true
}

// UnlockClient drops every lock clientID holds, in all groups (the client's
// connection closed, or it unregistered). It returns how many were dropped.
func (m *Manager) UnlockClient(clientID string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for group, table := range m.groups {
		for mq, e := range table {
			if e.clientID == clientID {
				delete(table, mq)
				n++
			}
		}
		if len(table) == 0 {
			delete(m.groups, group)
		}
	}
	return n
}

// UnlockGroupClient drops the locks clientID holds in one group (the client
// unregistered that consumer group only).
func (m *Manager) UnlockGroupClient(group, clientID string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	table := m.groups[group]
	for mq, e := range table {
		if e.clientID == clientID {
			delete(table, mq)
			n++
		}
	}
	if len(table) == 0 {
		delete(m.groups, group)
	}
	return n
}

// Sweep removes expired locks and returns how many it removed. Optional:
// expired locks are harmless, this only bounds memory for groups that
// vanished without unlocking.
func (m *Manager) Sweep() int {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for group, table := range m.groups {
		for mq, e := range table {
			if m.expired(e, now) {
				delete(table, mq)
				n++
			}
		}
		if len(table) == 0 {
			delete(m.groups, group)
		}
	}
	return n
}

func sortQueues(q []MessageQueue) {
	sort.Slice(q, func(i, j int) bool {
		if q[i].Topic != q[j].Topic {
			return q[i].Topic < q[j].Topic
		}
		if q[i].BrokerName != q[j].BrokerName {
			return q[i].BrokerName < q[j].BrokerName
		}
		return q[i].QueueID < q[j].QueueID
	})
}
