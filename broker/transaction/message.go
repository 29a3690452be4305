package transaction

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/openrmq/rocketmq-operator/pkg/message"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// Topics, group and tag of the transaction machinery.
const (
	HalfTopic = protocol.TransHalfTopic
	OpTopic   = protocol.TransOpHalfTopic
	// DiscardTopic receives half messages checked too often (1 queue;
	// the broker registers it, perm 6, like Java's
	// createTopicOfTranCheckMaxTime).
	DiscardTopic = protocol.TransCheckMaxTimeTopic
	// SysGroup is the consumer group whose offsets record the check progress.
	SysGroup = "CID_RMQ_SYS_TRANS"
	// RemoveTag tags op messages.
	RemoveTag = "d"
	// halfQueueID is the only half (and op) queue.
	halfQueueID int32 = 0
)

// Errors of EndTransaction; the broker answers SYSTEM_ERROR with Remark(err).
var (
	ErrHalfNotFound = errors.New("transaction: prepared message not found")
	ErrWrongGroup   = errors.New("transaction: producer group does not match")
	ErrWrongOffset  = errors.New("transaction: transaction state table offset does not match")
	ErrNotHalf      = errors.New("transaction: message is not a half message")
)

// Remark is the response remark Java's broker gives for err.
func Remark(err error) string {
	switch {
	case errors.Is(err, ErrHalfNotFound), errors.Is(err, ErrNotHalf):
		return "Find prepared transaction message failed"
	case errors.Is(err, ErrWrongGroup):
		return "The producer group wrong"
	case errors.Is(err, ErrWrongOffset):
		return "The transaction state table offset wrong"
	}
	return err.Error()
}

// IsPrepared reports whether a sent message is the first phase of a
// transaction (sysflag PREPARED).
func IsPrepared(m *message.Message) bool {
	return message.TransactionType(m.SysFlag) == message.TransactionPreparedType
}

// ToHalf rewrites a PREPARED message in place into its half form: topic
// RMQ_SYS_TRANS_HALF_TOPIC, queue 0, REAL_TOPIC / REAL_QID set, transaction
// bits of the sysflag cleared. TRAN_MSG, PGROUP and the other properties
// stay. The broker's send path calls it before PutMessage.
func ToHalf(m *message.Message) error {
	props := message.DecodeProperties(m.Properties)
	props.Set(message.PropertyRealTopic, m.Topic)
	props.Set(message.PropertyRealQueueID, strconv.Itoa(int(m.QueueID)))
	p, err := props.Encode()
	if err != nil {
		return err
	}
	m.Properties = p
	m.SysFlag = message.ResetTransactionType(m.SysFlag, message.TransactionNotType)
	m.Topic, m.QueueID = HalfTopic, halfQueueID
	return nil
}

// realMessage builds the committed message from a half message: real
// topic and queue, REAL_TOPIC / REAL_QID removed, sysflag COMMIT,
// prepared-transaction offset = the half message's commitlog offset.
func realMessage(h *message.MessageExt) (*message.Message, error) {
	props := message.DecodeProperties(h.Properties)
	topic := props.Get(message.PropertyRealTopic)
	qid, err := strconv.Atoi(props.Get(message.PropertyRealQueueID))
	if topic == "" || err != nil || qid < 0 {
		return nil, fmt.Errorf("%w: no REAL_TOPIC/REAL_QID at commitlog offset %d", ErrNotHalf, h.PhysicalOffset)
	}
	props.Delete(message.PropertyRealTopic)
	props.Delete(message.PropertyRealQueueID)
	p, err := props.Encode()
	if err != nil {
		return nil, err
	}
	return &message.Message{
		Topic: topic, QueueID: int32(qid), Flag: h.Flag,
		SysFlag: message.ResetTransactionType(h.SysFlag, message.TransactionCommitType),
		Body:    h.Body, Properties: p, BornTimestamp: h.BornTimestamp, BornHost: h.BornHost,
		ReconsumeTimes: h.ReconsumeTimes, PreparedTransactionOffset: h.PhysicalOffset,
	}, nil
}

// opMessage marks the half message at queue offset halfOffset as done.
func opMessage(halfOffset, now int64, h *message.MessageExt) *message.Message {
	return &message.Message{
		Topic: OpTopic, QueueID: halfQueueID, Body: []byte(strconv.FormatInt(halfOffset, 10)),
		Properties:    message.AppendProperty("", message.PropertyTags, RemoveTag),
		BornTimestamp: now, BornHost: h.StoreHost,
	}
}

// renewHalf is the copy of a half message put back at the end of the half
// queue, with extra properties set.
func renewHalf(h *message.MessageExt, set map[string]string) (*message.Message, error) {
	props := message.DecodeProperties(h.Properties)
	for k, v := range set {
		props.Set(k, v)
	}
	p, err := props.Encode()
	if err != nil {
		return nil, err
	}
	return &message.Message{
		Topic: HalfTopic, QueueID: halfQueueID, Flag: h.Flag, SysFlag: h.SysFlag,
		Body: h.Body, Properties: p, BornTimestamp: h.BornTimestamp, BornHost: h.BornHost,
		ReconsumeTimes: h.ReconsumeTimes, PreparedTransactionOffset: h.PreparedTransactionOffset,
	}, nil
}
