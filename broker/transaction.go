package broker

import (
	"context"
	"strconv"

	"github.com/openrmq/rocketmq-operator/broker/transaction"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// endTransactionHeader is EndTransactionRequestHeader.
type endTransactionHeader struct {
	ProducerGroup        string `rmq:"producerGroup,required"`
	TranStateTableOffset int64  `rmq:"tranStateTableOffset,required"`
	CommitLogOffset      int64  `rmq:"commitLogOffset,required"`
	CommitOrRollback     int32  `rmq:"commitOrRollback,required"`
	FromTransactionCheck bool   `rmq:"fromTransactionCheck"`
	MsgID                string `rmq:"msgId,required"`
	TransactionID        string `rmq:"transactionId"`
}

// handleEndTransaction serves END_TRANSACTION (clients send it oneway): commit puts
// the real message, rollback only marks the half message done.
func (b *Broker) handleEndTransaction(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	if b.isSlave() {
		// 4.9.7: "Message store is slave mode, so end transaction is forbidden."
		return req.NewResponse(remoting.SlaveNotAvailable, "the broker is a slave, end transaction is forbidden"), nil
	}
	var h endTransactionHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	// A commit's put goes through the put path (serviceStore), which counts it.
	_, err := b.txn.EndTransaction(transaction.EndRequest{
		ProducerGroup: h.ProducerGroup, TranStateTableOffset: h.TranStateTableOffset,
		CommitLogOffset: h.CommitLogOffset, CommitOrRollback: h.CommitOrRollback,
		FromTransactionCheck: h.FromTransactionCheck, MsgID: h.MsgID, TransactionID: h.TransactionID,
	})
	if err != nil {
		b.log.Warn("end transaction refused", "producerGroup", h.ProducerGroup, "commitLogOffset", h.CommitLogOffset, "err", err)
		return req.NewResponse(remoting.SystemError, transaction.Remark(err)), nil
	}
	return req.NewResponse(remoting.Success, ""), nil
}

// checkTransaction asks one live producer of the group about a pending transaction
// (CHECK_TRANSACTION_STATE, oneway). With no producer online the next scan asks again.
func (b *Broker) checkTransaction(r *transaction.CheckRequest) {
	chans := b.clients.Producers(r.ProducerGroup)
	if len(chans) == 0 {
		return
	}
	m := r.Msg
	body := make([]byte, message.RecordSize(message.SysFlagFor(m.SysFlag, m.BornHost, m.StoreHost), len(m.Body), len(m.Topic), len(m.Properties)))
	message.EncodeRecord(body, &m.Message, &message.Stamp{QueueOffset: m.QueueOffset, PhysicalOffset: m.PhysicalOffset,
		StoreTimestamp: m.StoreTimestamp, StoreHost: m.StoreHost, BodyCRC: m.BodyCRC})
	req := remoting.NewRequest(remoting.CheckTransactionState, map[string]string{
		"tranStateTableOffset": strconv.FormatInt(r.TranStateTableOffset, 10),
		"commitLogOffset":      strconv.FormatInt(r.CommitLogOffset, 10),
		"msgId":                r.MsgID,
		"transactionId":        r.TransactionID,
		"offsetMsgId":          r.OffsetMsgID,
	}, body)
	req.MarkOneway()
	ch := chans[0]
	if err := ch.Conn.InvokeOneway(req); err != nil {
		b.log.Debug("cannot send a transaction check", "producerGroup", r.ProducerGroup, "remote", ch.Addr(), "err", err)
	}
}
