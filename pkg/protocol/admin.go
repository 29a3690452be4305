package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// SubscriptionGroupConfig is a consumer group's broker-side settings, as Java's
// SubscriptionGroupConfig serializes them (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP's body and
// subscriptionGroup.json's entries).
type SubscriptionGroupConfig struct {
	GroupName                      string `json:"groupName"`
	ConsumeEnable                  bool   `json:"consumeEnable"`
	ConsumeFromMinEnable           bool   `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable         bool   `json:"consumeBroadcastEnable"`
	RetryQueueNums                 int    `json:"retryQueueNums"`
	RetryMaxTimes                  int    `json:"retryMaxTimes"`
	BrokerID                       int64  `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64  `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIDsChangedEnable bool   `json:"notifyConsumerIdsChangedEnable"`
}

// NewSubscriptionGroupConfig returns Java's defaults for group.
func NewSubscriptionGroupConfig(group string) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{
		GroupName: group, ConsumeEnable: true, ConsumeFromMinEnable: true, ConsumeBroadcastEnable: true,
		RetryQueueNums: 1, RetryMaxTimes: 16, WhichBrokerWhenConsumeSlowly: 1, NotifyConsumerIDsChangedEnable: true,
	}
}

// UnmarshalJSON fills absent fields with the defaults, as Java's field initializers do.
func (g *SubscriptionGroupConfig) UnmarshalJSON(b []byte) error {
	type plain SubscriptionGroupConfig
	p := plain(NewSubscriptionGroupConfig(""))
	if err := json.Unmarshal(QuoteBareKeys(b), &p); err != nil {
		return err
	}
	*g = SubscriptionGroupConfig(p)
	return nil
}

// OffsetWrapper is one queue's line in ConsumeStats.
type OffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
}

// ConsumeStats is GET_CONSUME_STATS's body: per queue, the broker's max offset, the
// group's committed offset and the store time of the last consumed message.
type ConsumeStats struct {
	OffsetTable map[MessageQueue]OffsetWrapper
	ConsumeTps  float64
}

// Encode writes s as a Java broker does.
func (s ConsumeStats) Encode() ([]byte, error) {
	table, err := EncodeMQTable(s.OffsetTable)
	if err != nil {
		return nil, err
	}
	tps := strconv.FormatFloat(s.ConsumeTps, 'f', -1, 64)
	if !bytes.ContainsAny([]byte(tps), ".eE") {
		tps += ".0" // a double, as fastjson writes it
	}
	return fmt.Appendf(nil, `{"consumeTps":%s,"offsetTable":%s}`, tps, table), nil
}

// DecodeConsumeStats parses GET_CONSUME_STATS's body.
func DecodeConsumeStats(data []byte) (ConsumeStats, error) {
	var s ConsumeStats
	pairs, err := splitObject(data)
	if err != nil {
		return s, err
	}
	for _, p := range pairs {
		switch string(p.key) {
		case `"offsetTable"`:
			if s.OffsetTable, err = DecodeMQTable[OffsetWrapper](p.value); err != nil {
				return s, err
			}
		case `"consumeTps"`:
			if s.ConsumeTps, err = strconv.ParseFloat(string(p.value), 64); err != nil {
				return s, fmt.Errorf("%w: consumeTps %s", errMQTable, p.value)
			}
		}
	}
	return s, nil
}

// ResetOffsetBody is the body of INVOKE_BROKER_TO_RESET_OFFSET's response and of
// RESET_CONSUMER_CLIENT_OFFSET: the new offset of each queue.
type ResetOffsetBody struct {
	OffsetTable map[MessageQueue]int64
}

// Encode writes b as a Java broker does.
func (b ResetOffsetBody) Encode() ([]byte, error) {
	table, err := EncodeMQTable(b.OffsetTable)
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, `{"offsetTable":%s}`, table), nil
}

// DecodeResetOffsetBody parses a ResetOffsetBody.
func DecodeResetOffsetBody(data []byte) (ResetOffsetBody, error) {
	var b ResetOffsetBody
	pairs, err := splitObject(data)
	if err != nil {
		return b, err
	}
	for _, p := range pairs {
		if string(p.key) == `"offsetTable"` {
			if b.OffsetTable, err = DecodeMQTable[int64](p.value); err != nil {
				return b, err
			}
		}
	}
	if b.OffsetTable == nil {
		b.OffsetTable = map[MessageQueue]int64{}
	}
	return b, nil
}

// Request headers of the admin calls the operator makes, with Java's field names.

type ResetOffsetRequestHeader struct {
	Topic     string `rmq:"topic,required"`
	Group     string `rmq:"group,required"`
	Timestamp int64  `rmq:"timestamp,required"`
	IsForce   bool   `rmq:"isForce,required"`
}

type CloneGroupOffsetRequestHeader struct {
	SrcGroup  string `rmq:"srcGroup,required"`
	DestGroup string `rmq:"destGroup,required"`
	Topic     string `rmq:"topic"`
	Offline   bool   `rmq:"offline"`
}

type GetConsumeStatsRequestHeader struct {
	ConsumerGroup string `rmq:"consumerGroup,required"`
	Topic         string `rmq:"topic"`
}

type DeleteSubscriptionGroupRequestHeader struct {
	GroupName string `rmq:"groupName,required"`
}

// TopicOffset is one queue's line in GET_TOPIC_STATS_INFO's TopicStatsTable.
type TopicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

// DecodeTopicStatsTable parses GET_TOPIC_STATS_INFO's body, {"offsetTable":{queue:offsets}}.
func DecodeTopicStatsTable(data []byte) (map[MessageQueue]TopicOffset, error) {
	pairs, err := splitObject(data)
	if err != nil {
		return nil, err
	}
	for _, p := range pairs {
		if string(p.key) == `"offsetTable"` {
			return DecodeMQTable[TopicOffset](p.value)
		}
	}
	return map[MessageQueue]TopicOffset{}, nil
}
