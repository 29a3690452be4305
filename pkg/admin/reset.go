package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// Timestamps with a meaning of their own in ResetOffset.
const (
	Earliest int64 = 0  // the first message still stored
	Latest   int64 = -1 // past the last message: consume only what comes next
)

// QueueReset is one queue's committed offset before and after a reset.
type QueueReset struct {
	Queue         protocol.MessageQueue
	Before, After int64
}

// ResetOffset moves group's committed offsets for topic on one broker to the first
// message stored at or after timestampMillis (Earliest and Latest have their meaning).
// With force unset a queue only moves backwards. It asks the broker to do it
// (INVOKE_BROKER_TO_RESET_OFFSET), which also tells the group's online consumers. A Java
// broker refuses that for a group with no consumer online (CONSUMER_NOT_ONLINE); then the
// offsets are computed and committed queue by queue, as Java's admin tool does.
func (c *Client) ResetOffset(ctx context.Context, addr, topic, group string, timestampMillis int64, force bool) ([]QueueReset, error) {
	stats, err := c.ConsumeStats(ctx, addr, group, topic)
	var refused *Error
	if err != nil && !errors.As(err, &refused) {
		return nil, err
	}
	// A refusal leaves stats empty: a group the broker has no offsets for has no "before".
	resp, err := c.invoke(ctx, addr, remoting.InvokeBrokerToResetOffset, remoting.EncodeHeader(&protocol.ResetOffsetRequestHeader{
		Topic: topic, Group: group, Timestamp: timestampMillis, IsForce: force}), nil)
	switch {
	case err == nil:
		body, err := protocol.DecodeResetOffsetBody(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("admin: reset offset answer from %s: %w", addr, err)
		}
		return resets(stats, body.OffsetTable), nil
	case errors.As(err, &refused) && refused.Code == remoting.ConsumerNotOnline:
		return c.resetOffline(ctx, addr, group, stats, timestampMillis, force)
	default:
		return nil, err
	}
}

func resets(stats protocol.ConsumeStats, after map[protocol.MessageQueue]int64) []QueueReset {
	out := make([]QueueReset, 0, len(after))
	for mq, off := range after {
		out = append(out, QueueReset{Queue: mq, Before: stats.OffsetTable[mq].ConsumerOffset, After: off})
	}
	sortResets(out)
	return out
}

// resetOffline commits the new offsets itself, for brokers that only reset online groups.
func (c *Client) resetOffline(ctx context.Context, addr, group string, stats protocol.ConsumeStats, ts int64, force bool) ([]QueueReset, error) {
	var out []QueueReset
	for mq, w := range stats.OffsetTable {
		target, err := c.offsetAt(ctx, addr, mq, ts)
		if err != nil {
			return out, err
		}
		if !force && target > w.ConsumerOffset {
			target = w.ConsumerOffset
		}
		if err := c.CommitOffset(ctx, addr, group, mq, target); err != nil {
			return out, err
		}
		out = append(out, QueueReset{Queue: mq, Before: w.ConsumerOffset, After: target})
	}
	sortResets(out)
	return out, nil
}

// offsetAt returns the queue offset for a reset timestamp.
func (c *Client) offsetAt(ctx context.Context, addr string, mq protocol.MessageQueue, ts int64) (int64, error) {
	fields := map[string]string{"topic": mq.Topic, "queueId": strconv.Itoa(int(mq.QueueID))}
	code := remoting.GetMaxOffset
	if ts != Latest {
		code = remoting.SearchOffsetByTimestamp
		fields["timestamp"] = strconv.FormatInt(ts, 10)
	}
	resp, err := c.invoke(ctx, addr, code, fields, nil)
	if err != nil {
		return 0, err
	}
	off, err := strconv.ParseInt(resp.Field("offset"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("admin: offset answer from %s for %s: %q", addr, mq, resp.Field("offset"))
	}
	return off, nil
}

// CommitOffset sets group's committed offset of one queue (UPDATE_CONSUMER_OFFSET).
func (c *Client) CommitOffset(ctx context.Context, addr, group string, mq protocol.MessageQueue, offset int64) error {
	_, err := c.invoke(ctx, addr, remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": mq.Topic, "queueId": strconv.Itoa(int(mq.QueueID)),
		"commitOffset": strconv.FormatInt(offset, 10),
	}, nil)
	return err
}

func sortResets(r []QueueReset) {
	slices.SortFunc(r, func(a, b QueueReset) int {
		return cmp.Or(cmp.Compare(a.Queue.Topic, b.Queue.Topic), cmp.Compare(a.Queue.BrokerName, b.Queue.BrokerName),
			cmp.Compare(a.Queue.QueueID, b.Queue.QueueID))
	})
}
