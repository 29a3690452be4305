package client

import (
	"context"
	"encoding/binary"
	"strconv"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// PullSysFlag bits (Java's PullSysFlag).
const (
	PullFlagCommitOffset = 1 << 0
	PullFlagSuspend      = 1 << 1
	PullFlagSubscription = 1 << 2
)

// PullStatus is the outcome of a pull, as Java's PullStatus.
type PullStatus int

const (
	Found PullStatus = iota
	NoNewMessage
	NoMatchedMessage
	OffsetIllegal
)

func (s PullStatus) String() string {
	switch s {
	case Found:
		return "FOUND"
	case NoNewMessage:
		return "NO_NEW_MSG"
	case NoMatchedMessage:
		return "NO_MATCHED_MSG"
	case OffsetIllegal:
		return "OFFSET_ILLEGAL"
	}
	return "PullStatus(" + strconv.Itoa(int(s)) + ")"
}

// PullRequest is one PULL_MESSAGE. Subscription "" is "*" (TAG expression); it is always
// sent with the subscription flag, so the broker needs no heartbeat from the group.
type PullRequest struct {
	Group        string
	Offset       int64
	MaxNums      int           // [32]
	Subscription string        // ["*"]
	Suspend      time.Duration // > 0: long polling, the broker holds the pull this long
	CommitOffset int64         // > 0: the broker stores it as group's offset (commit flag)
}

// PullResult is a pull's outcome. Body holds the records found (see ForEachRecord).
type PullResult struct {
	Status          PullStatus
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	Body            []byte
}

// Pull pulls mq. A long-polling pull waits up to Suspend plus a margin; ctx ends it sooner.
func (c *Client) Pull(ctx context.Context, mq MessageQueue, p PullRequest) (*PullResult, error) {
	if p.MaxNums <= 0 {
		p.MaxNums = 32
	}
	if p.Subscription == "" {
		p.Subscription = "*"
	}
	sysFlag := PullFlagSubscription
	if p.Suspend > 0 {
		sysFlag |= PullFlagSuspend
	}
	if p.CommitOffset > 0 {
		sysFlag |= PullFlagCommitOffset
	}
	fields := map[string]string{
		"consumerGroup":        p.Group,
		"topic":                mq.Topic,
		"queueId":              strconv.Itoa(mq.QueueID),
		"queueOffset":          strconv.FormatInt(p.Offset, 10),
		"maxMsgNums":           strconv.Itoa(p.MaxNums),
		"sysFlag":              strconv.Itoa(sysFlag),
		"commitOffset":         strconv.FormatInt(p.CommitOffset, 10),
		"suspendTimeoutMillis": strconv.FormatInt(p.Suspend.Milliseconds(), 10),
		"subscription":         p.Subscription,
		"subVersion":           "0",
		"expressionType":       "TAG",
		"bname":                mq.BrokerName,
	}
	ctx, cancel := deadline(ctx, p.Suspend+SendTimeout)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, mq.Addr, remoting.NewRequest(remoting.PullMessage, fields, nil))
	if err != nil {
		return nil, err
	}
	r := &PullResult{}
	switch resp.Code {
	case remoting.Success:
		r.Status, r.Body = Found, resp.Body
	case remoting.PullNotFound:
		r.Status = NoNewMessage
	case remoting.PullRetryImmediately:
		r.Status = NoMatchedMessage
	case remoting.PullOffsetMoved:
		r.Status = OffsetIllegal
	default:
		return nil, &ResponseError{resp.Code, resp.Remark}
	}
	r.NextBeginOffset, _ = strconv.ParseInt(resp.Field("nextBeginOffset"), 10, 64)
	r.MinOffset, _ = strconv.ParseInt(resp.Field("minOffset"), 10, 64)
	r.MaxOffset, _ = strconv.ParseInt(resp.Field("maxOffset"), 10, 64)
	return r, nil
}

// BornTimestamp is the record's born time in ms (the producer's clock).
func BornTimestamp(v *message.RecordView) int64 {
	return int64(binary.BigEndian.Uint64(v.Raw[message.OffBornTimestamp:]))
}
