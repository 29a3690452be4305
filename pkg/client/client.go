// Package client is a minimal RocketMQ 4.x client over package remoting: route lookup on
// the name server, SEND_MESSAGE_V2 (sync and async), PULL_MESSAGE with long polling and
// the offset requests a consumer needs. It has no rebalancing, heartbeats or retries:
// callers pick the queues themselves. cmd/rmqbench is built on it.
package client

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// ErrTopicNotExist is returned by Route when no name server knows the topic.
var ErrTopicNotExist = errors.New("client: topic route not found")

// ResponseError is a response whose code is not SUCCESS.
type ResponseError struct {
	Code   int16
	Remark string
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("client: response code %d: %s", e.Code, e.Remark)
}

// Client speaks to the name servers and brokers of one cluster.
type Client struct {
	rc      *remoting.Client
	namesrv []string
}

// New returns a client of the name servers in namesrvAddr ("host:port;host:port") over
// rc, which the caller owns and closes.
func New(rc *remoting.Client, namesrvAddr string) *Client {
	var ns []string
	for _, a := range strings.FieldsFunc(namesrvAddr, func(r rune) bool { return r == ';' || r == ',' }) {
		if a = strings.TrimSpace(a); a != "" {
			ns = append(ns, a)
		}
	}
	return &Client{rc: rc, namesrv: ns}
}

// Remoting returns the underlying remoting client.
func (c *Client) Remoting() *remoting.Client { return c.rc }

func (c *Client) invoke(ctx context.Context, addr string, code int16, fields map[string]string, body []byte) (*remoting.Command, error) {
	resp, err := c.rc.Invoke(ctx, addr, remoting.NewRequest(code, fields, body))
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// MessageQueue is one queue of a topic on one broker group, with the master's address.
type MessageQueue struct {
	Topic      string
	BrokerName string
	QueueID    int
	Addr       string
}

func (q MessageQueue) String() string {
	return fmt.Sprintf("%s@%s#%d", q.Topic, q.BrokerName, q.QueueID)
}

// Route asks the name servers, in turn, for the topic's route (GET_ROUTEINFO_BY_TOPIC).
func (c *Client) Route(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	if len(c.namesrv) == 0 {
		return nil, errors.New("client: no name server address")
	}
	var lastErr error
	for _, ns := range c.namesrv {
		resp, err := c.invoke(ctx, ns, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil)
		if err != nil {
			lastErr = err
			continue
		}
		if resp.Code == remoting.TopicNotExist {
			return nil, fmt.Errorf("%w: %s", ErrTopicNotExist, topic)
		}
		if resp.Code != remoting.Success {
			lastErr = &ResponseError{resp.Code, resp.Remark}
			continue
		}
		var rd protocol.TopicRouteData
		if err := protocol.Decode(resp.Body, &rd); err != nil {
			return nil, fmt.Errorf("client: route of %s: %w", topic, err)
		}
		return &rd, nil
	}
	return nil, lastErr
}

// WriteQueues lists the writable queues of route for topic on brokers with a master,
// ordered by broker name then queue id. limit > 0 caps the queues taken per broker (as a
// producer does with the default topic's route).
func WriteQueues(route *protocol.TopicRouteData, topic string, limit int) []MessageQueue {
	return queues(route, topic, limit, true)
}

// ReadQueues lists the readable queues of route for topic on brokers with a master.
func ReadQueues(route *protocol.TopicRouteData, topic string) []MessageQueue {
	return queues(route, topic, 0, false)
}

func queues(route *protocol.TopicRouteData, topic string, limit int, write bool) []MessageQueue {
	masters := MasterAddrs(route)
	qds := append([]*protocol.QueueData(nil), route.QueueDatas...)
	sort.Slice(qds, func(i, j int) bool { return qds[i].BrokerName < qds[j].BrokerName })
	var out []MessageQueue
	for _, qd := range qds {
		addr := masters[qd.BrokerName]
		if addr == "" {
			continue
		}
		n := qd.ReadQueueNums
		if write {
			if !protocol.IsWriteable(qd.Perm) {
				continue
			}
			n = qd.WriteQueueNums
		} else if !protocol.IsReadable(qd.Perm) {
			continue
		}
		if limit > 0 && n > limit {
			n = limit
		}
		for i := range n {
			out = append(out, MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: i, Addr: addr})
		}
	}
	return out
}

// MasterAddrs maps the broker names of route to their masters' addresses.
func MasterAddrs(route *protocol.TopicRouteData) map[string]string {
	m := make(map[string]string, len(route.BrokerDatas))
	for _, bd := range route.BrokerDatas {
		if a := bd.MasterAddr(); a != "" {
			m[bd.BrokerName] = a
		}
	}
	return m
}

// CreateTopic creates or updates topic on the broker at addr (UPDATE_AND_CREATE_TOPIC)
// with queues read and write queues, read-write.
func (c *Client) CreateTopic(ctx context.Context, addr, topic string, queues int) error {
	n := strconv.Itoa(queues)
	resp, err := c.invoke(ctx, addr, remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "defaultTopic": protocol.DefaultTopic, "readQueueNums": n, "writeQueueNums": n,
		"perm": strconv.Itoa(protocol.PermRead | protocol.PermWrite), "topicFilterType": protocol.TopicFilterTypeSingleTag,
		"topicSysFlag": "0", "order": "false",
	}, nil)
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success {
		return &ResponseError{resp.Code, resp.Remark}
	}
	return nil
}

// MaxOffset returns the queue's max offset (GET_MAX_OFFSET): the offset of the next message.
func (c *Client) MaxOffset(ctx context.Context, mq MessageQueue) (int64, error) {
	return c.queueOffset(ctx, remoting.GetMaxOffset, mq)
}

// MinOffset returns the queue's min offset (GET_MIN_OFFSET).
func (c *Client) MinOffset(ctx context.Context, mq MessageQueue) (int64, error) {
	return c.queueOffset(ctx, remoting.GetMinOffset, mq)
}

func (c *Client) queueOffset(ctx context.Context, code int16, mq MessageQueue) (int64, error) {
	resp, err := c.invoke(ctx, mq.Addr, code, map[string]string{
		"topic": mq.Topic, "queueId": strconv.Itoa(mq.QueueID), "bname": mq.BrokerName,
	}, nil)
	if err != nil {
		return 0, err
	}
	if resp.Code != remoting.Success {
		return 0, &ResponseError{resp.Code, resp.Remark}
	}
	return strconv.ParseInt(resp.Field("offset"), 10, 64)
}

// CommitOffset stores group's consume offset of mq on its broker (UPDATE_CONSUMER_OFFSET).
func (c *Client) CommitOffset(ctx context.Context, mq MessageQueue, group string, offset int64) error {
	resp, err := c.invoke(ctx, mq.Addr, remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": mq.Topic, "queueId": strconv.Itoa(mq.QueueID),
		"commitOffset": strconv.FormatInt(offset, 10), "bname": mq.BrokerName,
	}, nil)
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success {
		return &ResponseError{resp.Code, resp.Remark}
	}
	return nil
}

// deadline bounds ctx by d unless it ends sooner.
func deadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// ForEachRecord calls fn with every record of a pull body (concatenated commitlog
// records), stopping at the first error.
func ForEachRecord(body []byte, fn func(*message.RecordView) error) error {
	for len(body) > 0 {
		v, err := message.ParseRecord(body)
		if err != nil {
			return err
		}
		if err := fn(&v); err != nil {
			return err
		}
		body = body[v.Size():]
	}
	return nil
}
