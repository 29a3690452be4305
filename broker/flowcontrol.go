package broker

import (
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// Flow control, as RocketMQ 4.9's BrokerFastFailure and isOSPageCacheBusy: an
// overloaded broker answers SYSTEM_BUSY at once, which a client can take to another
// broker, rather than an answer after the client's own timeout.
//
//   - Every fastFailurePeriod the head of each pool is looked at: a request that has
//     waited its pool's limit (waitTimeMillsIn...Queue) is answered [TIMEOUT_CLEAN_QUEUE].
//   - While an append has held the commitlog longer than osPageCacheBusyTimeOutMills,
//     sends that reach a worker are answered [PC_SYNCHRONIZED] and those still queued
//     [PCBUSY_CLEAN_QUEUE].

// fastFailurePeriod is how often the queues are cleaned (4.9.7: every 10 ms).
const fastFailurePeriod = 10 * time.Millisecond

const pcSynchronizedRemark = "[PC_SYNCHRONIZED]broker busy, start flow control for a while"

// pools are the worker pools flow control looks after.
type pools struct {
	send, pull, heartbeat *remoting.Pool
}

// commitLogBusy reports whether the append under way has held the commitlog longer
// than osPageCacheBusyTimeOutMills.
func (b *Broker) commitLogBusy(c *config.Config) bool {
	return b.store.AppendHeldFor() > c.OSPageCacheBusyTimeout
}

// refuseWhenBusy answers a send SYSTEM_BUSY while the commitlog is busy, nil otherwise.
func (b *Broker) refuseWhenBusy(req *remoting.Command, c *config.Config) *remoting.Command {
	if b.commitLogBusy(c) {
		return req.NewResponse(remoting.SystemBusy, pcSynchronizedRemark)
	}
	return nil
}

// cleanExpiredRequests is one round of the fast failure.
func (b *Broker) cleanExpiredRequests() {
	c := b.cfg.Get()
	if !c.BrokerFastFailureEnable {
		return
	}
	if b.commitLogBusy(&c) {
		b.pools.send.RefuseWaiting("[PCBUSY_CLEAN_QUEUE]")
	}
	b.pools.send.ExpireWaiting(c.WaitTimeInSendQueue)
	b.pools.pull.ExpireWaiting(c.WaitTimeInPullQueue)
	b.pools.heartbeat.ExpireWaiting(c.WaitTimeInHeartbeatQueue)
}
