package broker

import (
	"context"
	"fmt"
	"slices"

	"github.com/openrmq/rocketmq-operator/broker/metadata"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// groupGetKey is GROUP_GET_NUMS's key, Java's BrokerStatsManager.buildStatsKey.
func groupGetKey(topic, group string) string { return topic + metadata.OffsetKeySeparator + group }

type viewBrokerStatsHeader struct {
	StatsName string `rmq:"statsName,required"`
	StatsKey  string `rmq:"statsKey,required"`
}

// handleViewBrokerStats serves VIEW_BROKER_STATS_DATA: one counter's last minute, hour
// and day (mqadmin statsAll asks TOPIC_PUT_NUMS and GROUP_GET_NUMS).
func (b *Broker) handleViewBrokerStats(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h viewBrokerStatsHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	it, ok := b.stats.lookup(h.StatsName, h.StatsKey)
	if !ok {
		return req.NewResponse(remoting.SystemError, fmt.Sprintf("The stats <%s> <%s> not exist", h.StatsName, h.StatsKey)), nil
	}
	return withBody(req, it.data().Encode()), nil
}

// groupTps is Java's consumeTps of a group in some topics: the sum of their GROUP_GET_NUMS
// rates over the last minute.
func (b *Broker) groupTps(group string, topics []string) float64 {
	var tps float64
	for _, t := range topics {
		tps += b.stats.minuteTps(statsGroupGetNums, groupGetKey(t, group))
	}
	return tps
}

// handleConsumeStats serves GET_CONSUME_STATS: the group's offsets in the queues of one
// topic, or of every topic it has offsets in, and its consume rate in those topics.
func (b *Broker) handleConsumeStats(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	group := req.Field("consumerGroup")
	if group == "" {
		return req.NewResponse(remoting.SystemError, "the custom field <consumerGroup> is null"), nil
	}
	topics := b.offsets.TopicsOf(group)
	if t := req.Field("topic"); t != "" {
		topics = []string{t}
	}
	st := protocol.ConsumeStats{OffsetTable: map[protocol.MessageQueue]protocol.OffsetWrapper{}}
	var covered []string
	for _, topic := range topics {
		if tc, ok := b.topics.Get(topic); ok && tc.WriteQueueNums > 0 {
			b.addConsumeOffsets(&st, group, topic, tc.WriteQueueNums)
			covered = append(covered, topic)
		}
	}
	st.ConsumeTps = b.groupTps(group, covered)
	body, err := st.Encode()
	if err != nil {
		return nil, err
	}
	return withBody(req, body), nil
}

type brokerConsumeStatsHeader struct {
	IsOrder bool `rmq:"isOrder,required"`
}

// handleBrokerConsumeStats serves GET_BROKER_CONSUME_STATS (mqadmin brokerConsumeStats)
// as Java's fetchAllConsumeStatsInBroker: for every subscription group, a ConsumeStats per
// topic it has offsets in; with isOrder only order topics; an online group's topics only
// when it subscribes them.
func (b *Broker) handleBrokerConsumeStats(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h brokerConsumeStatsHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	out := protocol.ConsumeStatsList{BrokerAddr: b.Addr(), ConsumeStatsList: []map[string][]protocol.ConsumeStats{}}
	for _, group := range b.groups.Names() {
		online, isOnline := b.clients.Consumer(group)
		list := []protocol.ConsumeStats{}
		topics := b.offsets.TopicsOf(group)
		slices.Sort(topics)
		for _, topic := range topics {
			tc, ok := b.topics.Get(topic)
			if !ok || (h.IsOrder && !tc.Order) {
				continue
			}
			if isOnline && len(online.Subscriptions) > 0 {
				if _, ok := online.Subscriptions[topic]; !ok {
					continue
				}
			}
			st := protocol.ConsumeStats{OffsetTable: map[protocol.MessageQueue]protocol.OffsetWrapper{}}
			b.addConsumeOffsets(&st, group, topic, tc.WriteQueueNums)
			st.ConsumeTps = b.groupTps(group, []string{topic})
			out.TotalDiff += st.TotalDiff()
			list = append(list, st)
		}
		out.ConsumeStatsList = append(out.ConsumeStatsList, map[string][]protocol.ConsumeStats{group: list})
	}
	body, err := out.Encode()
	if err != nil {
		return nil, err
	}
	return withBody(req, body), nil
}

// addConsumeOffsets adds group's offsets in the queues of topic to st, as GET_CONSUME_STATS
// and GET_BROKER_CONSUME_STATS give them: the queue's end, the group's committed offset
// (0 without one) and the store time of the last message it consumed.
func (b *Broker) addConsumeOffsets(st *protocol.ConsumeStats, group, topic string, queues int) {
	name := b.cfg.Get().BrokerName
	for q := range int32(queues) {
		w := protocol.OffsetWrapper{BrokerOffset: b.store.MaxOffsetInQueue(topic, q), ConsumerOffset: max(b.offsets.Query(group, topic, q), 0)}
		if w.ConsumerOffset > 0 {
			if ts := b.store.MessageStoreTime(topic, q, w.ConsumerOffset-1); ts > 0 {
				w.LastTimestamp = ts
			}
		}
		st.OffsetTable[protocol.MessageQueue{BrokerName: name, QueueID: q, Topic: topic}] = w
	}
}
