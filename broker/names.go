package broker

import (
	"github.com/openrmq/rocketmq-operator/pkg/names"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// Request fields that carry topic and group names, checked ahead of every handler: a
// name becomes a directory of the store or a key of the broker's tables, and no handler
// should have to remember to check it. The sends are the exception: they check their
// topic where Java's msgCheck does (checkSendTarget), so that a refusal carries the
// send response's fields. Names in bodies (heartbeats, queue locks) are checked by their
// handlers. Empty fields are left to the handlers, which know whether one is needed.
var (
	topicFields = []string{"topic", "defaultTopic", "originTopic"}
	groupFields = []string{"consumerGroup", "producerGroup", "group", "groupName", "srcGroup", "destGroup"}
)

// beforeHandle is the remoting server's BeforeHandle: names first, then ACL.
func (b *Broker) beforeHandle(conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	if err := checkNames(req); err != nil {
		// Ahead of the handler, so not through ErrHandlerFunc: the same answer.
		return req.NewResponse(remoting.SystemError, err.Error())
	}
	if b.acl != nil {
		return b.checkACL(conn, req)
	}
	return nil
}

// checkNames returns Java's refusal of the first topic or group field that holds an
// illegal name; beforeHandle answers it with SYSTEM_ERROR.
func checkNames(req *remoting.Command) error {
	switch req.Code {
	case remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage,
		remoting.SendReplyMessage, remoting.SendReplyMessageV2:
		return nil
	}
	if err := checkFields(req, topicFields, names.Topic); err != nil {
		return err
	}
	return checkFields(req, groupFields, names.Group)
}

func checkFields(req *remoting.Command, fields []string, check func(string) error) error {
	for _, f := range fields {
		if v := req.Field(f); v != "" {
			if err := check(v); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkBodyNames checks the topics and groups a request body names.
func checkBodyNames(topics, groups []string) error {
	for _, t := range topics {
		if err := names.Topic(t); err != nil {
			return err
		}
	}
	for _, g := range groups {
		if err := names.Group(g); err != nil {
			return err
		}
	}
	return nil
}
