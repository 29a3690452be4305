package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/client"
	"github.com/openrmq/rocketmq-operator/broker/filter"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// heartbeatData is HEART_BEAT's body.
type heartbeatData struct {
	ClientID        string `json:"clientID"`
	ProducerDataSet []struct {
		GroupName string `json:"groupName"`
	} `json:"producerDataSet"`
	ConsumerDataSet []struct {
		GroupName           string                    `json:"groupName"`
		ConsumeType         string                    `json:"consumeType"`
		MessageModel        string                    `json:"messageModel"`
		ConsumeFromWhere    string                    `json:"consumeFromWhere"`
		SubscriptionDataSet []client.SubscriptionData `json:"subscriptionDataSet"`
		UnitMode            bool                      `json:"unitMode"`
	} `json:"consumerDataSet"`
}

func (b *Broker) handleHeartbeat(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var hb heartbeatData
	if err := protocol.Decode(req.Body, &hb); err != nil {
		return nil, fmt.Errorf("heartbeat body: %w", err)
	}
	var topics, groups []string
	for _, cd := range hb.ConsumerDataSet {
		groups = append(groups, cd.GroupName)
		for _, sub := range cd.SubscriptionDataSet {
			topics = append(topics, sub.Topic)
		}
	}
	for _, pd := range hb.ProducerDataSet {
		groups = append(groups, pd.GroupName)
	}
	if err := checkBodyNames(topics, groups); err != nil {
		return nil, err
	}
	c := b.cfg.Get()
	now := time.Now()
	var refused []string
	ch := client.Channel{Conn: conn, ClientID: hb.ClientID, Language: req.Language, Version: req.Version, LastUpdate: now}
	for _, cd := range hb.ConsumerDataSet {
		gc, ok, err := b.groups.GetOrCreate(cd.GroupName, c.AutoCreateSubscriptionGroup)
		if err != nil {
			b.log.Error("cannot create subscription group", "group", cd.GroupName, "err", err)
		}
		notify := true
		if ok {
			notify = gc.NotifyConsumerIDsChangedEnable
			retry := protocol.RetryGroupTopicPrefix + cd.GroupName
			if _, err := b.topics.Ensure(retry, max(gc.RetryQueueNums, 1), protocol.PermRead|protocol.PermWrite, 0); err != nil {
				b.log.Error("cannot create retry topic", "topic", retry, "err", err)
			}
		}
		// Registered even so, as Java does; its pulls are refused (FILTER_DATA_NOT_EXIST).
		for _, sub := range cd.SubscriptionDataSet {
			if err := checkExpression(sub.ExpressionType, sub.SubString); err != nil {
				refused = append(refused, fmt.Sprintf("group %s topic %s: %v", cd.GroupName, sub.Topic, err))
			}
		}
		changed, _ := b.clients.RegisterConsumer(client.ConsumerRegistration{
			Group: cd.GroupName, ConsumeType: cd.ConsumeType, MessageModel: cd.MessageModel,
			ConsumeFromWhere: cd.ConsumeFromWhere, Subscriptions: cd.SubscriptionDataSet,
		}, ch)
		if changed {
			b.log.Info("consumer registered", "group", cd.GroupName, "client", hb.ClientID, "remote", conn.RemoteAddr())
			if notify {
				b.notifyConsumerIDsChanged(cd.GroupName)
			}
		}
	}
	for _, pd := range hb.ProducerDataSet {
		b.clients.RegisterProducer(pd.GroupName, ch)
	}
	if len(refused) > 0 {
		// Java answers SUCCESS and only logs; the clients log a failed heartbeat and
		// carry on, so saying it costs nothing and tells the user why nothing arrives.
		remark := "parse the consumer's subscription failed: " + strings.Join(refused, "; ")
		b.log.Warn("heartbeat with a subscription that does not compile", "client", hb.ClientID, "remote", conn.RemoteAddr(), "err", remark)
		return req.NewResponse(remoting.SubscriptionParseFailed, remark), nil
	}
	return req.NewResponse(remoting.Success, ""), nil
}

// checkExpression compiles a subscription's expression; tag expressions always pass
// (the clients have split them already).
func checkExpression(exprType, expr string) error {
	if exprType == "" || exprType == filter.TypeTag {
		return nil
	}
	_, err := filter.New(exprType, expr)
	return err
}

type unregisterClientHeader struct {
	ClientID      string `rmq:"clientID,required"`
	ProducerGroup string `rmq:"producerGroup"`
	ConsumerGroup string `rmq:"consumerGroup"`
}

func (b *Broker) handleUnregisterClient(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h unregisterClientHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	if h.ProducerGroup != "" {
		b.clients.UnregisterProducer(h.ProducerGroup, conn)
	}
	if h.ConsumerGroup != "" {
		// A consumer leaving its group gives its queues up at once (the official clients
		// unlock before they unregister; this covers those that do not).
		b.locks.UnlockGroupClient(h.ConsumerGroup, h.ClientID)
	}
	if h.ConsumerGroup != "" && b.clients.UnregisterConsumer(h.ConsumerGroup, conn) {
		b.log.Info("consumer unregistered", "group", h.ConsumerGroup, "client", h.ClientID)
		if gc, ok := b.groups.Get(h.ConsumerGroup); !ok || gc.NotifyConsumerIDsChangedEnable {
			b.notifyConsumerIDsChanged(h.ConsumerGroup)
		}
	}
	return req.NewResponse(remoting.Success, ""), nil
}

// checkClientBody is CheckClientRequestBody: the Java consumer sends each non-TAG
// subscription before it starts, and does not start when it is refused.
type checkClientBody struct {
	ClientID         string                   `json:"clientId"`
	Group            string                   `json:"group"`
	SubscriptionData *client.SubscriptionData `json:"subscriptionData"`
}

// handleCheckClientConfig serves CHECK_CLIENT_CONFIG as Java does: SQL92 needs
// enablePropertyFilter (SYSTEM_ERROR), and the expression must compile
// (SUBSCRIPTION_PARSE_FAILED with the compiler's message).
func (b *Broker) handleCheckClientConfig(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var body checkClientBody
	if len(req.Body) > 0 {
		if err := protocol.Decode(req.Body, &body); err != nil {
			return nil, fmt.Errorf("check client config body: %w", err)
		}
	}
	sub := body.SubscriptionData
	if sub == nil || sub.ExpressionType == "" || sub.ExpressionType == filter.TypeTag {
		return req.NewResponse(remoting.Success, ""), nil
	}
	if !b.cfg.Get().EnablePropertyFilter {
		return req.NewResponse(remoting.SystemError, "The broker does not support consumer to filter message by "+sub.ExpressionType), nil
	}
	if err := checkExpression(sub.ExpressionType, sub.SubString); err != nil {
		b.log.Warn("client config refused", "group", body.Group, "client", body.ClientID, "expression", sub.SubString, "err", err)
		return req.NewResponse(remoting.SubscriptionParseFailed, err.Error()), nil
	}
	return req.NewResponse(remoting.Success, ""), nil
}

func (b *Broker) handleGetConsumerList(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	group := req.Field("consumerGroup")
	if group == "" {
		return req.NewResponse(remoting.SystemError, "the custom field <consumerGroup> is null"), nil
	}
	g, ok := b.clients.Consumer(group)
	if !ok || len(g.Channels) == 0 {
		// As 4.9.7 logs it: a client that asks before its heartbeat reached this broker gets
		// the error, and the official Go client then drops every queue of its rebalance.
		b.log.Warn("consumer list asked for a group with no consumer here", "group", group, "remote", conn.RemoteAddr())
		return req.NewResponse(remoting.SystemError, fmt.Sprintf("no consumer for this group, %s", group)), nil
	}
	resp := req.NewResponse(remoting.Success, "")
	resp.Body, _ = json.Marshal(map[string][]string{"consumerIdList": g.ClientIDs()})
	return resp, nil
}

// notifyConsumerIDsChanged tells every consumer of group, oneway, to rebalance now.
func (b *Broker) notifyConsumerIDsChanged(group string) {
	g, ok := b.clients.Consumer(group)
	if !ok {
		return
	}
	for conn := range g.Channels {
		req := remoting.NewRequest(remoting.NotifyConsumerIDsChanged, map[string]string{"consumerGroup": group}, nil)
		req.MarkOneway()
		if err := conn.InvokeOneway(req); err != nil {
			b.log.Debug("cannot notify consumer", "group", group, "remote", conn.RemoteAddr(), "err", err)
		}
	}
}

// connClosed forgets a closed connection, releases the queue locks taken over it and
// tells the groups it left.
func (b *Broker) connClosed(conn *remoting.Conn) {
	b.releaseConnLocks(conn)
	for _, group := range b.clients.RemoveConn(conn) {
		if gc, ok := b.groups.Get(group); !ok || gc.NotifyConsumerIDsChangedEnable {
			b.notifyConsumerIDsChanged(group)
		}
	}
}

// scanExpiredClients closes connections silent for channelExpiredTimeout; closing them
// runs connClosed.
func (b *Broker) scanExpiredClients() {
	timeout := b.cfg.Get().ChannelExpiredTimeout
	for _, conn := range b.clients.Expired(time.Now().Add(-timeout)) {
		b.log.Info("client channel expired", "remote", conn.RemoteAddr(), "silentFor", timeout)
		conn.Close()
	}
}
