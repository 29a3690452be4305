package client

import (
	"sync"
	"time"
)

// QueueKey names one message queue of this broker.
type QueueKey struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

type lockEntry struct {
	clientID string
	last     time.Time
}

// Locks is the rebalance lock table of orderly consumers (LOCK_BATCH_MQ): a queue is
// held by one client of a group until it unlocks it or stops renewing for maxLive.
type Locks struct {
	maxLive time.Duration
	now     func() time.Time

	mu    sync.Mutex
	table map[string]map[QueueKey]*lockEntry // group -> queue -> holder
}

// NewLocks returns an empty table whose locks expire after maxLive without renewal
// (Java's rebalanceLockMaxLiveTime, 60 s).
func NewLocks(maxLive time.Duration) *Locks {
	return &Locks{maxLive: maxLive, now: time.Now, table: map[string]map[QueueKey]*lockEntry{}}
}

// TryLock locks or renews each queue for clientID and returns those it now holds.
func (l *Locks) TryLock(group, clientID string, queues []QueueKey) []QueueKey {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	g := l.table[group]
	if g == nil {
		g = map[QueueKey]*lockEntry{}
		l.table[group] = g
	}
	out := []QueueKey{}
	for _, q := range queues {
		e := g[q]
		switch {
		case e == nil || e.clientID == clientID || now.Sub(e.last) > l.maxLive:
			g[q] = &lockEntry{clientID: clientID, last: now}
			out = append(out, q)
		}
	}
	return out
}

// Unlock releases the queues clientID holds.
func (l *Locks) Unlock(group, clientID string, queues []QueueKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.table[group]
	for _, q := range queues {
		if e := g[q]; e != nil && e.clientID == clientID {
			delete(g, q)
		}
	}
	if len(g) == 0 {
		delete(l.table, group)
	}
}
