package broker

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openrmq/rocketmq-operator/broker/client"
	"github.com/openrmq/rocketmq-operator/broker/filter"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

type queryConsumeQueueHeader struct {
	Topic         string `rmq:"topic,required"`
	QueueID       int32  `rmq:"queueId,required"`
	Index         int64  `rmq:"index,required"`
	Count         int    `rmq:"count,required"`
	ConsumerGroup string `rmq:"consumerGroup"`
}

// consumeQueueData is one entry of QueryConsumeQueueResponseBody (fastjson order).
// The extension fields stay empty: this store keeps no consume-queue extension.
type consumeQueueData struct {
	BitMap         string `json:"bitMap,omitempty"`
	Eval           bool   `json:"eval"`
	ExtendDataJSON string `json:"extendDataJson,omitempty"`
	Msg            string `json:"msg,omitempty"`
	PhysicOffset   int64  `json:"physicOffset"`
	PhysicSize     int32  `json:"physicSize"`
	TagsCode       int64  `json:"tagsCode"`
}

type queryConsumeQueueBody struct {
	FilterData       string                   `json:"filterData,omitempty"`
	MaxQueueIndex    int64                    `json:"maxQueueIndex"`
	MinQueueIndex    int64                    `json:"minQueueIndex"`
	QueueData        []consumeQueueData       `json:"queueData,omitempty"`
	SubscriptionData *client.SubscriptionData `json:"subscriptionData,omitempty"`
}

// sqlFilterData is what Java's ConsumerFilterManager keeps for a SQL92 subscription;
// tag subscriptions have none ("null").
type sqlFilterData struct {
	ConsumerGroup  string `json:"consumerGroup"`
	Expression     string `json:"expression"`
	ExpressionType string `json:"expressionType"`
	Topic          string `json:"topic"`
}

// handleQueryConsumeQueue serves QUERY_CONSUME_QUEUE (mqadmin queryCq): raw consume-queue
// entries from an index, with the group's subscription when one is named.
func (b *Broker) handleQueryConsumeQueue(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h queryConsumeQueueHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	entries, minOff, maxOff, ok := b.store.ConsumeQueueEntries(h.Topic, h.QueueID, h.Index, max(h.Count, 0))
	if !ok {
		return req.NewResponse(remoting.SystemError, fmt.Sprintf("%d@%s is not exist!", h.QueueID, h.Topic)), nil
	}
	body := queryConsumeQueueBody{MaxQueueIndex: maxOff, MinQueueIndex: minOff}
	if h.ConsumerGroup != "" {
		if sub, online := b.clients.Subscription(h.ConsumerGroup, h.Topic); !online {
			body.FilterData = fmt.Sprintf("%s@%s is not online!", h.ConsumerGroup, h.Topic)
		} else {
			body.SubscriptionData = &sub
			body.FilterData = "null"
			if sub.ExpressionType == filter.TypeSQL92 {
				fd, _ := json.MarshalIndent(sqlFilterData{ConsumerGroup: h.ConsumerGroup, Expression: sub.SubString,
					ExpressionType: sub.ExpressionType, Topic: h.Topic}, "", "\t")
				body.FilterData = string(fd)
			}
		}
	}
	if len(entries) == 0 {
		// Java answers SUCCESS with this remark and no entries.
		resp := req.NewResponse(remoting.Success, fmt.Sprintf("Index %d of %d@%s is not exist!", h.Index, h.QueueID, h.Topic))
		resp.Body, _ = json.Marshal(body)
		return resp, nil
	}
	for _, e := range entries {
		body.QueueData = append(body.QueueData, consumeQueueData{PhysicOffset: e.PhyOffset, PhysicSize: e.Size, TagsCode: e.TagsCode})
	}
	resp := req.NewResponse(remoting.Success, "")
	resp.Body, _ = json.Marshal(body)
	return resp, nil
}

// handleCleanExpiredConsumeQueue serves CLEAN_EXPIRED_CONSUMEQUEUE (mqadmin
// cleanExpiredCQ): consume queues whose messages retention removed go.
func (b *Broker) handleCleanExpiredConsumeQueue(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	n := b.store.CleanExpiredConsumeQueues()
	b.log.Info("expired consume queues cleaned", "queues", n, "by", conn.RemoteAddr())
	return req.NewResponse(remoting.Success, ""), nil
}

// handleCleanUnusedTopic serves CLEAN_UNUSED_TOPIC (mqadmin cleanUnusedTopic): consume
// queues of topics without a topic config go.
func (b *Broker) handleCleanUnusedTopic(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	removed := b.store.CleanUnusedTopics(func(topic string) bool {
		_, ok := b.topics.Get(topic)
		return ok
	})
	b.log.Info("unused topics cleaned", "topics", removed, "by", conn.RemoteAddr())
	return req.NewResponse(remoting.Success, ""), nil
}
