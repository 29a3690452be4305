package admin

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// Topics and their routes: the calls mqadmin's updateTopic, deleteTopic, topicStatus and
// topicRoute make, on a broker or on a name server as each method says.

// CreateOrUpdateTopic writes a topic's config on one broker (UPDATE_AND_CREATE_TOPIC), as
// mqadmin updateTopic does. A broker bumps its topic table's version on every such call,
// changed or not, and registers with its name servers, so calling it again for an
// unchanged topic publishes the topic's route anew.
func (c *Client) CreateOrUpdateTopic(ctx context.Context, addr string, tc protocol.TopicConfig) error {
	filter := tc.TopicFilterType
	if filter == "" {
		filter = protocol.TopicFilterTypeSingleTag
	}
	_, err := c.invoke(ctx, addr, remoting.UpdateAndCreateTopic, map[string]string{
		"topic":           tc.TopicName,
		"defaultTopic":    protocol.DefaultTopic,
		"readQueueNums":   strconv.Itoa(tc.ReadQueueNums),
		"writeQueueNums":  strconv.Itoa(tc.WriteQueueNums),
		"perm":            strconv.Itoa(tc.Perm),
		"topicFilterType": filter,
		"topicSysFlag":    strconv.Itoa(tc.TopicSysFlag),
		"order":           strconv.FormatBool(tc.Order),
	}, nil)
	return err
}

// DeleteTopicInBroker removes a topic, its consume queues and its consumer offsets from
// one broker (DELETE_TOPIC_IN_BROKER). Brokers answer success for a topic they do not
// have. The name servers keep routing it until DeleteTopicInNameServer.
func (c *Client) DeleteTopicInBroker(ctx context.Context, addr, topic string) error {
	_, err := c.invoke(ctx, addr, remoting.DeleteTopicInBroker, map[string]string{"topic": topic}, nil)
	return err
}

// TopicConfigs returns one broker's topic table (GET_ALL_TOPIC_CONFIG).
func (c *Client) TopicConfigs(ctx context.Context, addr string) (protocol.TopicConfigSerializeWrapper, error) {
	var w protocol.TopicConfigSerializeWrapper
	resp, err := c.invoke(ctx, addr, remoting.GetAllTopicConfig, nil, nil)
	if err != nil {
		return w, err
	}
	if err := protocol.Decode(resp.Body, &w); err != nil {
		return w, fmt.Errorf("admin: topic table from %s: %w", addr, err)
	}
	return w, nil
}

// TopicStats returns the min and max offset of each of a topic's write queues on one broker
// (GET_TOPIC_STATS_INFO). A broker without the topic refuses with TOPIC_NOT_EXIST.
func (c *Client) TopicStats(ctx context.Context, addr, topic string) (map[protocol.MessageQueue]protocol.TopicOffset, error) {
	resp, err := c.invoke(ctx, addr, remoting.GetTopicStatsInfo, map[string]string{"topic": topic}, nil)
	if err != nil {
		return nil, err
	}
	out, err := protocol.DecodeTopicStatsTable(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("admin: topic stats from %s: %w", addr, err)
	}
	return out, nil
}

// ErrNoRoute: the name server routes no live broker for the topic (TOPIC_NOT_EXIST).
var ErrNoRoute = errors.New("admin: no route")

// TopicRoute returns the topic's route as a name server publishes it to clients
// (GET_ROUTEINFO_BY_TOPIC). A topic no live broker serves is ErrNoRoute, wrapping the
// name server's refusal.
func (c *Client) TopicRoute(ctx context.Context, namesrvAddr, topic string) (*protocol.TopicRouteData, error) {
	resp, err := c.invoke(ctx, namesrvAddr, remoting.GetRouteInfoByTopic,
		remoting.EncodeHeader(&protocol.GetRouteInfoRequestHeader{Topic: topic}), nil)
	var refused *Error
	if errors.As(err, &refused) && refused.Code == remoting.TopicNotExist {
		return nil, fmt.Errorf("%w: %w", ErrNoRoute, err)
	}
	if err != nil {
		return nil, err
	}
	var rd protocol.TopicRouteData
	if err := protocol.Decode(resp.Body, &rd); err != nil {
		return nil, fmt.Errorf("admin: route of %s from %s: %w", topic, namesrvAddr, err)
	}
	return &rd, nil
}

// DeleteTopicInNameServer removes a topic's route from one name server
// (DELETE_TOPIC_IN_NAMESRV). cluster narrows it to that cluster's brokers on name servers
// that know the field (5.x, ours); a 4.x Java name server ignores it and drops the whole
// route. A broker that still has the topic publishes it again when its topic table next
// changes.
func (c *Client) DeleteTopicInNameServer(ctx context.Context, namesrvAddr, topic, cluster string) error {
	_, err := c.invoke(ctx, namesrvAddr, remoting.DeleteTopicInNameServer,
		remoting.EncodeHeader(&protocol.DeleteTopicFromNamesrvRequestHeader{Topic: topic, ClusterName: cluster}), nil)
	return err
}

// PutKVConfig sets a key of one name server's KV store (PUT_KV_CONFIG); mqadmin
// updateTopic -o keeps an ordered topic's queues there, namespace ORDER_TOPIC_CONFIG.
func (c *Client) PutKVConfig(ctx context.Context, namesrvAddr, namespace, key, value string) error {
	_, err := c.invoke(ctx, namesrvAddr, remoting.PutKVConfig,
		remoting.EncodeHeader(&protocol.PutKVConfigRequestHeader{Namespace: namespace, Key: key, Value: value}), nil)
	return err
}

// KVConfig reads a key of one name server's KV store (GET_KV_CONFIG); found is false when
// the name server has no such key (QUERY_NOT_FOUND).
func (c *Client) KVConfig(ctx context.Context, namesrvAddr, namespace, key string) (value string, found bool, err error) {
	resp, err := c.invoke(ctx, namesrvAddr, remoting.GetKVConfig,
		remoting.EncodeHeader(&protocol.GetKVConfigRequestHeader{Namespace: namespace, Key: key}), nil)
	var refused *Error
	if errors.As(err, &refused) && refused.Code == remoting.QueryNotFound {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return resp.Field("value"), true, nil
}

// DeleteKVConfig removes a key from one name server's KV store (DELETE_KV_CONFIG); a
// missing key is not an error.
func (c *Client) DeleteKVConfig(ctx context.Context, namesrvAddr, namespace, key string) error {
	_, err := c.invoke(ctx, namesrvAddr, remoting.DeleteKVConfig,
		remoting.EncodeHeader(&protocol.DeleteKVConfigRequestHeader{Namespace: namespace, Key: key}), nil)
	return err
}

// WipeWritePerm takes the write permission of every topic of brokerName away at one name
// server (WIPE_WRITE_PERM_OF_BROKER, mqadmin wipeWritePerm): producers stop choosing that
// group at their next route refresh. It returns the topics changed.
func (c *Client) WipeWritePerm(ctx context.Context, namesrvAddr, brokerName string) (int, error) {
	resp, err := c.invoke(ctx, namesrvAddr, remoting.WipeWritePermOfBroker,
		remoting.EncodeHeader(&protocol.WipeWritePermOfBrokerRequestHeader{BrokerName: brokerName}), nil)
	if err != nil {
		return 0, err
	}
	var h protocol.WipeWritePermOfBrokerResponseHeader
	if err := remoting.DecodeHeader(resp, &h); err != nil {
		return 0, err
	}
	return int(h.WipeTopicCount), nil
}

// AddWritePerm gives every topic of brokerName read and write permission again at one
// name server (ADD_WRITE_PERM_OF_BROKER, mqadmin addWritePerm). It returns the topics
// changed.
func (c *Client) AddWritePerm(ctx context.Context, namesrvAddr, brokerName string) (int, error) {
	resp, err := c.invoke(ctx, namesrvAddr, remoting.AddWritePermOfBroker,
		remoting.EncodeHeader(&protocol.AddWritePermOfBrokerRequestHeader{BrokerName: brokerName}), nil)
	if err != nil {
		return 0, err
	}
	var h protocol.AddWritePermOfBrokerResponseHeader
	if err := remoting.DecodeHeader(resp, &h); err != nil {
		return 0, err
	}
	return int(h.AddTopicCount), nil
}

// RuntimeInfo returns a broker's runtime table (GET_BROKER_RUNTIME_INFO): versions,
// offsets, connection counts. Under plain ACL it needs a valid signature and no
// permission, so a client signing as an account learns whether the broker has loaded it.
func (c *Client) RuntimeInfo(ctx context.Context, addr string) (map[string]string, error) {
	resp, err := c.invoke(ctx, addr, remoting.GetBrokerRuntimeInfo, nil, nil)
	if err != nil {
		return nil, err
	}
	var body struct {
		Table map[string]string `json:"table"`
	}
	if err := protocol.Decode(resp.Body, &body); err != nil {
		return nil, fmt.Errorf("admin: runtime info from %s: %w", addr, err)
	}
	return body.Table, nil
}
