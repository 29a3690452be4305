package broker

import (
	"context"

	"github.com/openrmq/rocketmq-operator/broker/lock"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// handleLockBatch serves LOCK_BATCH_MQ: orderly consumers lock the queues they own.
func (b *Broker) handleLockBatch(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var body lock.LockBatchRequestBody
	if err := protocol.Decode(req.Body, &body); err != nil {
		return req.NewResponse(remoting.SystemError, "lock batch body: "+err.Error())
	}
	locked := b.locks.LockBatch(body.ConsumerGroup, body.MQSet, body.ClientID)
	resp := req.NewResponse(remoting.Success, "")
	resp.Body = protocol.MustEncode(lock.LockBatchResponseBody{LockOKMQSet: locked})
	return resp
}

// handleUnlockBatch serves UNLOCK_BATCH_MQ.
func (b *Broker) handleUnlockBatch(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var body lock.UnlockBatchRequestBody
	if err := protocol.Decode(req.Body, &body); err != nil {
		return req.NewResponse(remoting.SystemError, "unlock batch body: "+err.Error())
	}
	b.locks.UnlockBatch(body.ConsumerGroup, body.MQSet, body.ClientID)
	return req.NewResponse(remoting.Success, "")
}
