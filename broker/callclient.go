package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/client"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

const (
	// callClientTimeout is how long a request forwarded to a client may take (Java's
	// Broker2Client.callClient); an admin worker waits meanwhile.
	callClientTimeout = 10 * time.Second
	// versionV3_1_8Snapshot is the oldest client that answers forwarded requests.
	versionV3_1_8Snapshot = 62
)

type consumerRunningInfoHeader struct {
	ConsumerGroup string `rmq:"consumerGroup,required"`
	ClientID      string `rmq:"clientId,required"`
	JstackEnable  bool   `rmq:"jstackEnable"`
}

// handleConsumerRunningInfo serves GET_CONSUMER_RUNNING_INFO (mqadmin consumerStatus,
// consumerProgress -s): the consumer itself answers; the broker relays.
func (b *Broker) handleConsumerRunningInfo(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h consumerRunningInfoHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	return b.callConsumer(ctx, req, req.Body, h.ConsumerGroup, h.ClientID), nil
}

type consumeMessageDirectlyHeader struct {
	ConsumerGroup string `rmq:"consumerGroup,required"`
	ClientID      string `rmq:"clientId"`
	MsgID         string `rmq:"msgId"`
	BrokerName    string `rmq:"brokerName"`
}

// handleConsumeMessageDirectly serves CONSUME_MESSAGE_DIRECTLY (mqadmin queryMsgById
// -g -d): the message at the offset msgId names goes, as stored, to the consumer, which
// runs its listener on it and reports the result.
func (b *Broker) handleConsumeMessageDirectly(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h consumeMessageDirectlyHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	_, phy, err := message.ParseOffsetMsgID(h.MsgID)
	if err != nil {
		return nil, fmt.Errorf("bad msgId %q: %w", h.MsgID, err)
	}
	rec, err := b.store.CopyRawMessage(phy)
	if err != nil {
		return req.NewResponse(remoting.SystemError, fmt.Sprintf("can not find message by the offset, %d", phy)), nil
	}
	// The client puts the message's brokerName from here (its store host is not enough
	// to tell the master-slave set).
	req.SetField("brokerName", b.cfg.Get().BrokerName)
	return b.callConsumer(ctx, req, rec, h.ConsumerGroup, h.ClientID), nil
}

// callConsumer forwards req (code and ext fields) with body to clientID's connection in
// group and returns the client's response, with Java's remarks when it cannot.
func (b *Broker) callConsumer(ctx context.Context, req *remoting.Command, body []byte, group, clientID string) *remoting.Command {
	ch, ok := b.consumerChannel(group, clientID)
	if !ok {
		return req.NewResponse(remoting.SystemError, fmt.Sprintf("The Consumer <%s> <%s> not online", group, clientID))
	}
	if ch.Version < versionV3_1_8Snapshot {
		return req.NewResponse(remoting.SystemError, fmt.Sprintf(
			"The Consumer <%s> Version <%d> too low to finish, please upgrade it to V3_1_8_SNAPSHOT", clientID, ch.Version))
	}
	ctx, cancel := context.WithTimeout(ctx, callClientTimeout)
	defer cancel()
	resp, err := ch.Conn.Invoke(ctx, remoting.NewRequest(req.Code, maps.Clone(req.Fields()), body))
	switch {
	case errors.Is(err, remoting.ErrTimeout):
		return req.NewResponse(remoting.ConsumeMsgTimeout, fmt.Sprintf("consumer <%s> <%s> Timeout: %v", group, clientID, err))
	case err != nil:
		return req.NewResponse(remoting.SystemError, fmt.Sprintf("invoke consumer <%s> <%s> Exception: %v", group, clientID, err))
	}
	return resp
}

// consumerChannel finds clientID's connection in group.
func (b *Broker) consumerChannel(group, clientID string) (client.Channel, bool) {
	g, ok := b.clients.Consumer(group)
	if !ok {
		return client.Channel{}, false
	}
	for _, ch := range g.Channels {
		if ch.ClientID == clientID {
			return *ch, true
		}
	}
	return client.Channel{}, false
}
