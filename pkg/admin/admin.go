// Package admin is a client for the administrative calls of RocketMQ brokers and name
// servers: the subset the operator makes (subscription groups, offsets, live broker
// configuration, cluster discovery). It speaks the documented protocol, so it works with
// Apache RocketMQ's Java broker as well as ours.
package admin

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/properties"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// DefaultTimeout bounds one call when the caller's context has no deadline.
const DefaultTimeout = 5 * time.Second

// Error is a broker's or name server's refusal: its response code and remark.
type Error struct {
	Request int16 // the request code
	Code    int16 // the response code
	Remark  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("admin: request %d refused with code %d: %s", e.Request, e.Code, e.Remark)
}

// Client makes admin calls over a remoting client, which it does not own, unless it
// made it (WithCredentials).
type Client struct {
	rc    *remoting.Client
	owned bool
	// OnCall, when set, is told of every call's request code and outcome: the response
	// (nil when none came) and the transport error, if any (the operator's metrics).
	OnCall func(code int16, resp *remoting.Command, err error)
}

// New returns a client that sends through rc.
func New(rc *remoting.Client) *Client { return &Client{rc: rc} }

// invoke sends a request and returns the response when its code is Success.
func (c *Client) invoke(ctx context.Context, addr string, code int16, fields map[string]string, body []byte) (*remoting.Command, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	resp, err := c.rc.Invoke(ctx, addr, remoting.NewRequest(code, fields, body))
	if c.OnCall != nil {
		c.OnCall(code, resp, err)
	}
	if err != nil {
		return nil, fmt.Errorf("admin: request %d to %s: %w", code, addr, err)
	}
	if resp.Code != remoting.Success {
		return resp, &Error{Request: code, Code: resp.Code, Remark: resp.Remark}
	}
	return resp, nil
}

// UpdateBrokerConfig changes broker configuration keys at runtime (UPDATE_BROKER_CONFIG).
func (c *Client) UpdateBrokerConfig(ctx context.Context, addr string, props map[string]string) error {
	_, err := c.invoke(ctx, addr, remoting.UpdateBrokerConfig, nil, []byte(properties.Format(props)))
	return err
}

// BrokerConfig returns the broker's configuration (GET_BROKER_CONFIG).
func (c *Client) BrokerConfig(ctx context.Context, addr string) (map[string]string, error) {
	resp, err := c.invoke(ctx, addr, remoting.GetBrokerConfig, nil, nil)
	if err != nil {
		return nil, err
	}
	props, err := properties.Parse(bytes.NewReader(resp.Body))
	if err != nil {
		return nil, fmt.Errorf("admin: broker config from %s: %w", addr, err)
	}
	out := make(map[string]string, len(props))
	for _, p := range props {
		out[p.Key] = p.Value
	}
	return out, nil
}

// CreateOrUpdateSubscriptionGroup writes a group's settings on one broker
// (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP).
func (c *Client) CreateOrUpdateSubscriptionGroup(ctx context.Context, addr string, cfg protocol.SubscriptionGroupConfig) error {
	body, err := protocol.Encode(cfg)
	if err != nil {
		return err
	}
	_, err = c.invoke(ctx, addr, remoting.UpdateAndCreateSubscriptionGroup, nil, body)
	return err
}

// SubscriptionGroups returns every group a broker knows (GET_ALL_SUBSCRIPTIONGROUP_CONFIG).
func (c *Client) SubscriptionGroups(ctx context.Context, addr string) (map[string]protocol.SubscriptionGroupConfig, error) {
	resp, err := c.invoke(ctx, addr, remoting.GetAllSubscriptionGroupConfig, nil, nil)
	if err != nil {
		return nil, err
	}
	var body struct {
		SubscriptionGroupTable map[string]protocol.SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	}
	if err := protocol.Decode(resp.Body, &body); err != nil {
		return nil, fmt.Errorf("admin: subscription groups from %s: %w", addr, err)
	}
	return body.SubscriptionGroupTable, nil
}

// DeleteSubscriptionGroup removes a group from one broker (DELETE_SUBSCRIPTIONGROUP).
// Brokers answer success for a group they do not know.
func (c *Client) DeleteSubscriptionGroup(ctx context.Context, addr, group string) error {
	_, err := c.invoke(ctx, addr, remoting.DeleteSubscriptionGroup, remoting.EncodeHeader(&protocol.DeleteSubscriptionGroupRequestHeader{GroupName: group}), nil)
	return err
}

// ConsumeStats returns a group's per-queue offsets on one broker (GET_CONSUME_STATS);
// topic "" covers every topic the group has offsets for.
func (c *Client) ConsumeStats(ctx context.Context, addr, group, topic string) (protocol.ConsumeStats, error) {
	resp, err := c.invoke(ctx, addr, remoting.GetConsumeStats, remoting.EncodeHeader(&protocol.GetConsumeStatsRequestHeader{ConsumerGroup: group, Topic: topic}), nil)
	if err != nil {
		return protocol.ConsumeStats{}, err
	}
	s, err := protocol.DecodeConsumeStats(resp.Body)
	if err != nil {
		return s, fmt.Errorf("admin: consume stats from %s: %w", addr, err)
	}
	return s, nil
}

// CloneGroupOffset copies srcGroup's committed offsets to destGroup on one broker
// (CLONE_GROUP_OFFSET); topic "" copies every topic srcGroup has offsets for.
func (c *Client) CloneGroupOffset(ctx context.Context, addr, srcGroup, destGroup, topic string, offline bool) error {
	_, err := c.invoke(ctx, addr, remoting.CloneGroupOffset, remoting.EncodeHeader(&protocol.CloneGroupOffsetRequestHeader{
		SrcGroup: srcGroup, DestGroup: destGroup, Topic: topic, Offline: offline}), nil)
	return err
}

// ClusterInfo returns the brokers registered with a name server (GET_BROKER_CLUSTER_INFO).
func (c *Client) ClusterInfo(ctx context.Context, namesrvAddr string) (*protocol.ClusterInfo, error) {
	resp, err := c.invoke(ctx, namesrvAddr, remoting.GetBrokerClusterInfo, nil, nil)
	if err != nil {
		return nil, err
	}
	var info protocol.ClusterInfo
	if err := protocol.Decode(resp.Body, &info); err != nil {
		return nil, fmt.Errorf("admin: cluster info from %s: %w", namesrvAddr, err)
	}
	return &info, nil
}

// MasterAddrs returns brokerName -> master address for one cluster, as the name server
// at namesrvAddr knows it. Broker groups without a registered master are left out.
func (c *Client) MasterAddrs(ctx context.Context, namesrvAddr, cluster string) (map[string]string, error) {
	info, err := c.ClusterInfo(ctx, namesrvAddr)
	if err != nil {
		return nil, err
	}
	masters := map[string]string{}
	for _, name := range info.ClusterAddrTable[cluster] {
		if bd := info.BrokerAddrTable[name]; bd != nil {
			if addr := bd.BrokerAddrs[protocol.MasterID]; addr != "" {
				masters[name] = addr
			}
		}
	}
	return masters, nil
}
