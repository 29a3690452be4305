package broker

import (
	"context"
	"fmt"
	"sync"

	"github.com/openrmq/rocketmq-operator/broker/lock"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// handleLockBatch serves LOCK_BATCH_MQ: orderly consumers lock the queues they own.
func (b *Broker) handleLockBatch(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var body lock.LockBatchRequestBody
	if err := protocol.Decode(req.Body, &body); err != nil {
		return nil, fmt.Errorf("lock batch body: %w", err)
	}
	if err := checkBodyNames(queueTopics(body.MQSet), []string{body.ConsumerGroup}); err != nil {
		return nil, err
	}
	b.lockConns.add(conn, body.ConsumerGroup, body.ClientID)
	locked := b.locks.LockBatch(body.ConsumerGroup, body.MQSet, body.ClientID)
	return withBody(req, protocol.MustEncode(lock.LockBatchResponseBody{LockOKMQSet: locked})), nil
}

// handleUnlockBatch serves UNLOCK_BATCH_MQ.
func (b *Broker) handleUnlockBatch(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var body lock.UnlockBatchRequestBody
	if err := protocol.Decode(req.Body, &body); err != nil {
		return nil, fmt.Errorf("unlock batch body: %w", err)
	}
	if err := checkBodyNames(queueTopics(body.MQSet), []string{body.ConsumerGroup}); err != nil {
		return nil, err
	}
	b.locks.UnlockBatch(body.ConsumerGroup, body.MQSet, body.ClientID)
	return req.NewResponse(remoting.Success, ""), nil
}

// releaseConnLocks drops the queue locks taken over conn, which closed, unless the same
// client also locks over another open connection (it reconnected). Without this a
// crashed orderly consumer's queues would stay blocked for lock.DefaultLockMaxLiveTime.
func (b *Broker) releaseConnLocks(conn *remoting.Conn) {
	for _, k := range b.lockConns.remove(conn) {
		if n := b.locks.UnlockGroupClient(k.group, k.clientID); n > 0 {
			b.log.Info("queue locks released: connection closed", "group", k.group, "client", k.clientID, "queues", n)
		}
	}
}

// lockKey is one client of one consumer group.
type lockKey struct{ group, clientID string }

// lockConns remembers which connections each locking client used, so that locks can be
// released when the last of them closes.
type lockConns struct {
	mu     sync.Mutex
	byConn map[*remoting.Conn]map[lockKey]bool
	conns  map[lockKey]int // open connections a key locked over
}

func (l *lockConns) add(conn *remoting.Conn, group, clientID string) {
	k := lockKey{group, clientID}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byConn == nil {
		l.byConn, l.conns = map[*remoting.Conn]map[lockKey]bool{}, map[lockKey]int{}
	}
	keys := l.byConn[conn]
	if keys == nil {
		keys = map[lockKey]bool{}
		l.byConn[conn] = keys
	}
	if !keys[k] {
		keys[k] = true
		l.conns[k]++
	}
}

// remove forgets conn and returns the keys that have no other connection left.
func (l *lockConns) remove(conn *remoting.Conn) []lockKey {
	l.mu.Lock()
	defer l.mu.Unlock()
	var orphaned []lockKey
	for k := range l.byConn[conn] {
		if l.conns[k]--; l.conns[k] <= 0 {
			delete(l.conns, k)
			orphaned = append(orphaned, k)
		}
	}
	delete(l.byConn, conn)
	return orphaned
}

func queueTopics(mqs []lock.MessageQueue) []string {
	topics := make([]string, len(mqs))
	for i, mq := range mqs {
		topics[i] = mq.Topic
	}
	return topics
}
