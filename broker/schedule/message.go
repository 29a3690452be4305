package schedule

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/openrmq/rocketmq-operator/pkg/message"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// Topic holds delayed messages, queue level-1 for each delay level.
const Topic = protocol.ScheduleTopic

// halfTopic is the transaction half topic; a scheduled message never goes
// back there.
const halfTopic = protocol.TransHalfTopic

// ErrNotScheduled reports a SCHEDULE_TOPIC_XXXX record without a usable
// REAL_TOPIC / REAL_QID.
var ErrNotScheduled = errors.New("schedule: no real topic or queue")

// QueueID is the SCHEDULE_TOPIC_XXXX queue of a delay level.
func QueueID(level int) int32 { return int32(level - 1) }

// Level is the delay level of a SCHEDULE_TOPIC_XXXX queue.
func Level(queueID int32) int { return int(queueID) + 1 }

// DelayLevel returns the DELAY property of m (0 without one or when it
// does not parse).
func DelayLevel(m *message.Message) int {
	p, ok := message.LookupProperty(m.Properties, message.PropertyDelayTimeLevel)
	if !ok {
		return 0 // most messages: no parse, whose error is an allocation
	}
	v, err := strconv.Atoi(p)
	if err != nil {
		return 0
	}
	return v
}

// ToSchedule rewrites m in place into its schedule form when it carries a
// DELAY level > 0 and is not a PREPARED or ROLLBACK transaction message:
// topic SCHEDULE_TOPIC_XXXX, queue level-1 (levels above maxLevel clamped
// to it, the DELAY property rewritten), REAL_TOPIC and REAL_QID holding
// the original topic and queue. It reports whether m was rewritten. The
// broker's send path (and transaction commit) call it before PutMessage.
func ToSchedule(m *message.Message, maxLevel int) (bool, error) {
	switch message.TransactionType(m.SysFlag) {
	case message.TransactionPreparedType, message.TransactionRollbackType:
		return false, nil
	}
	level := DelayLevel(m)
	if level <= 0 || maxLevel <= 0 {
		return false, nil
	}
	if level > maxLevel {
		level = maxLevel
	}
	props := message.DecodeProperties(m.Properties)
	props.Set(message.PropertyDelayTimeLevel, strconv.Itoa(level))
	props.Set(message.PropertyRealTopic, m.Topic)
	props.Set(message.PropertyRealQueueID, strconv.Itoa(int(m.QueueID)))
	p, err := props.Encode()
	if err != nil {
		return false, err
	}
	m.Properties, m.Topic, m.QueueID = p, Topic, QueueID(level)
	return true, nil
}

// Restore builds the message to put when a scheduled message is due: its
// real topic and queue, the record fields and the properties byte for byte.
// 4.9.7's messageTimeup clears DELAY and sets WAIT=false only on the copy's
// property map, after taking the properties string it stores, so clients
// see the DELAY level the message was sent with (getDelayTimeLevel) and
// the producer's WAIT, REAL_TOPIC and REAL_QID included. Our re-put does
// not wait for flush or slaves and is not scheduled again (only
// SCHEDULE_TOPIC_XXXX entries are), so nothing here needs the cleared map.
func Restore(m *message.MessageExt) (*message.Message, error) {
	topic, _ := message.LookupProperty(m.Properties, message.PropertyRealTopic)
	rq, _ := message.LookupProperty(m.Properties, message.PropertyRealQueueID)
	qid, err := strconv.Atoi(rq)
	if len(topic) == 0 || err != nil || qid < 0 {
		return nil, fmt.Errorf("%w: at commitlog offset %d", ErrNotScheduled, m.PhysicalOffset)
	}
	return &message.Message{
		Topic: topic, QueueID: int32(qid), Flag: m.Flag, SysFlag: m.SysFlag,
		Body: m.Body, Properties: m.Properties, BornTimestamp: m.BornTimestamp, BornHost: m.BornHost,
		ReconsumeTimes: m.ReconsumeTimes, PreparedTransactionOffset: m.PreparedTransactionOffset,
	}, nil
}
