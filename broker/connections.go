package broker

import (
	"context"
	"fmt"

	"github.com/openrmq/rocketmq-operator/broker/client"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

type connection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int16  `json:"version"`
}

type consumerConnection struct {
	ConnectionSet     []connection                       `json:"connectionSet"`
	SubscriptionTable map[string]client.SubscriptionData `json:"subscriptionTable"`
	ConsumeType       string                             `json:"consumeType"`
	MessageModel      string                             `json:"messageModel"`
	ConsumeFromWhere  string                             `json:"consumeFromWhere"`
}

// handleConsumerConnections serves GET_CONSUMER_CONNECTION_LIST.
func (b *Broker) handleConsumerConnections(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	group := req.Field("consumerGroup")
	g, ok := b.clients.Consumer(group)
	if !ok {
		return req.NewResponse(remoting.ConsumerNotOnline, fmt.Sprintf("the consumer group[%s] not online", group)), nil
	}
	cc := consumerConnection{SubscriptionTable: g.Subscriptions, ConsumeType: g.ConsumeType,
		MessageModel: g.MessageModel, ConsumeFromWhere: g.ConsumeFromWhere, ConnectionSet: []connection{}}
	for _, ch := range g.Channels {
		cc.ConnectionSet = append(cc.ConnectionSet, connection{ClientID: ch.ClientID, ClientAddr: ch.Addr(),
			Language: ch.Language.String(), Version: ch.Version})
	}
	return withBody(req, protocol.MustEncode(cc)), nil
}

// handleProducerConnections serves GET_PRODUCER_CONNECTION_LIST.
func (b *Broker) handleProducerConnections(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	group := req.Field("producerGroup")
	chans := b.clients.Producers(group)
	if len(chans) == 0 {
		return req.NewResponse(remoting.SystemError, fmt.Sprintf("the producer group[%s] not exist", group)), nil
	}
	out := struct {
		ConnectionSet []connection `json:"connectionSet"`
	}{ConnectionSet: []connection{}}
	for _, ch := range chans {
		out.ConnectionSet = append(out.ConnectionSet, connection{ClientID: ch.ClientID, ClientAddr: ch.Addr(),
			Language: ch.Language.String(), Version: ch.Version})
	}
	return withBody(req, protocol.MustEncode(out)), nil
}
