package broker

import (
	"encoding/json"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// offsetMovedEvent is Java's OffsetMovedEvent, the body of a record in OFFSET_MOVED_EVENT:
// a consumer asked for an offset its queue does not hold and was told to move. Fields in
// fastjson's (alphabetical) order.
type offsetMovedEvent struct {
	ConsumerGroup string                `json:"consumerGroup"`
	MessageQueue  protocol.MessageQueue `json:"messageQueue"`
	OffsetNew     int64                 `json:"offsetNew"`
	OffsetRequest int64                 `json:"offsetRequest"`
}

// offsetMoved handles a PULL_OFFSET_MOVED answer as 4.9.7 does and reports whether it
// stands. A master (or a slave with offsetCheckInSlave) lets the consumer correct its
// offset and records the correction in OFFSET_MOVED_EVENT. Any other slave does not: it
// may only be behind its master, and moving the consumer on its word could skip messages
// the master still has (the caller answers PULL_RETRY_IMMEDIATELY instead).
func (b *Broker) offsetMoved(h *pullHeader, nextBegin int64, c *config.Config) bool {
	if c.BrokerRole == config.Slave && !c.OffsetCheckInSlave {
		b.log.Warn("PULL_OFFSET_MOVED: no correction on a slave", "topic", h.Topic, "group", h.ConsumerGroup,
			"queueId", h.QueueID, "requestOffset", h.QueueOffset)
		return false
	}
	ev := offsetMovedEvent{ConsumerGroup: h.ConsumerGroup, OffsetNew: nextBegin, OffsetRequest: h.QueueOffset,
		MessageQueue: protocol.MessageQueue{Topic: h.Topic, QueueID: h.QueueID, BrokerName: c.BrokerName}}
	b.log.Warn("PULL_OFFSET_MOVED: offset corrected", "topic", h.Topic, "group", h.ConsumerGroup,
		"queueId", h.QueueID, "requestOffset", h.QueueOffset, "newOffset", nextBegin)
	if c.BrokerRole == config.Slave {
		return true // a slave's store takes the master's records only (Java's put fails there)
	}
	if err := b.putOffsetMovedEvent(&ev); err != nil {
		b.log.Warn("cannot record an offset moved event", "group", h.ConsumerGroup, "topic", h.Topic, "err", err)
	}
	return true
}

// putOffsetMovedEvent stores ev as Java's generateOffsetMovedEvent does: queue 0,
// the group as tag and key, born and stored by this broker.
func (b *Broker) putOffsetMovedEvent(ev *offsetMovedEvent) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	props, err := message.EncodeProperties(map[string]string{
		message.PropertyTags: ev.ConsumerGroup, message.PropertyKeys: ev.ConsumerGroup,
		message.PropertyDelayTimeLevel: "0",
	})
	if err != nil {
		return err
	}
	m := &message.Message{Topic: protocol.OffsetMovedEventTopic, Body: body, Properties: props,
		BornTimestamp: time.Now().UnixMilli(), BornHost: b.storeHost}
	_, err = b.puts.put(putInternal, m)
	return err
}

// correctionWithheld reports whether a read's next offset is a correction the store made
// for an offset its queue does not hold. 4.9.7 (nextOffsetCorrection) applies those only
// on a master or with offsetCheckInSlave; otherwise the reader keeps its own offset.
func correctionWithheld(s store.GetStatus, c *config.Config) bool {
	if c.BrokerRole != config.Slave || c.OffsetCheckInSlave {
		return false
	}
	switch s {
	case store.NoMessageInQueue, store.OffsetTooSmall, store.OffsetOverflowOne, store.OffsetOverflowBadly, store.NoMatchedLogicQueue, store.OffsetFoundNull:
		return true
	}
	return false
}
