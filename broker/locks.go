package broker

import (
	"context"

	"github.com/openrmq/rocketmq-operator/broker/client"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// lockBatchBody is LockBatchRequestBody and UnlockBatchRequestBody.
type lockBatchBody struct {
	ConsumerGroup string            `json:"consumerGroup"`
	ClientID      string            `json:"clientId"`
	MQSet         []client.QueueKey `json:"mqSet"`
}

// handleLockBatch serves LOCK_BATCH_MQ: orderly consumers lock the queues they own.
func (b *Broker) handleLockBatch(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var body lockBatchBody
	if err := protocol.Decode(req.Body, &body); err != nil {
		return req.NewResponse(remoting.SystemError, "lock batch body: "+err.Error())
	}
	locked := b.locks.TryLock(body.ConsumerGroup, body.ClientID, body.MQSet)
	resp := req.NewResponse(remoting.Success, "")
	resp.Body = protocol.MustEncode(map[string][]client.QueueKey{"lockOKMQSet": locked})
	return resp
}

// handleUnlockBatch serves UNLOCK_BATCH_MQ.
func (b *Broker) handleUnlockBatch(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var body lockBatchBody
	if err := protocol.Decode(req.Body, &body); err != nil {
		return req.NewResponse(remoting.SystemError, "unlock batch body: "+err.Error())
	}
	b.locks.Unlock(body.ConsumerGroup, body.ClientID, body.MQSet)
	return req.NewResponse(remoting.Success, "")
}
