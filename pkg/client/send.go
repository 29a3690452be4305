package client

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// Message is what a producer sends. Properties may carry any user properties; Tags and
// Keys fill TAGS and KEYS. UNIQ_KEY and WAIT are added by Send.
type Message struct {
	Topic      string
	Body       []byte
	Tags       string
	Keys       string
	Properties map[string]string
}

// SendResult is a successful send's outcome. Code is SUCCESS or one of the
// stored-but-not-confirmed codes (FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT,
// SLAVE_NOT_AVAILABLE), as Java's SendStatus.
type SendResult struct {
	Code        int16
	MsgID       string // UNIQ_KEY
	OffsetMsgID string
	Queue       MessageQueue
	QueueOffset int64
}

// SendTimeout bounds a send when the context has no deadline of its own.
const SendTimeout = 3 * time.Second

// sendRequest builds SEND_MESSAGE_V2 with the single-letter header of
// SendMessageRequestHeaderV2, as the Go and Java clients send it.
func sendRequest(mq MessageQueue, group string, m *Message) (*remoting.Command, string, error) {
	props := make(map[string]string, len(m.Properties)+4)
	for k, v := range m.Properties {
		props[k] = v
	}
	id := NewUniqID()
	props[message.PropertyUniqClientMessageIDKey] = id
	props[message.PropertyWaitStoreMsgOK] = "true"
	if m.Tags != "" {
		props[message.PropertyTags] = m.Tags
	}
	if m.Keys != "" {
		props[message.PropertyKeys] = m.Keys
	}
	encoded, err := message.EncodeProperties(props)
	if err != nil {
		return nil, "", err
	}
	fields := map[string]string{
		"a": group,
		"b": mq.Topic,
		"c": protocol.DefaultTopic,
		"d": "4",
		"e": strconv.Itoa(mq.QueueID),
		"f": "0",
		"g": strconv.FormatInt(time.Now().UnixMilli(), 10),
		"h": "0",
		"i": encoded,
		"j": "0",
		"k": "false",
		"l": "16",
		"m": "false",
		"n": mq.BrokerName,
	}
	return remoting.NewRequest(remoting.SendMessageV2, fields, m.Body), id, nil
}

func sendResult(mq MessageQueue, id string, resp *remoting.Command) (*SendResult, error) {
	switch resp.Code {
	case remoting.Success, remoting.FlushDiskTimeout, remoting.FlushSlaveTimeout, remoting.SlaveNotAvailable:
	default:
		return nil, &ResponseError{resp.Code, resp.Remark}
	}
	r := &SendResult{Code: resp.Code, MsgID: id, OffsetMsgID: resp.Field("msgId"), Queue: mq}
	if qid, err := strconv.Atoi(resp.Field("queueId")); err == nil {
		r.Queue.QueueID = qid
	}
	r.QueueOffset, _ = strconv.ParseInt(resp.Field("queueOffset"), 10, 64)
	return r, nil
}

// Send sends m to mq as producer group and waits for the broker's answer.
func (c *Client) Send(ctx context.Context, mq MessageQueue, group string, m *Message) (*SendResult, error) {
	req, id, err := sendRequest(mq, group, m)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = deadline(ctx, SendTimeout)
		defer cancel()
	}
	resp, err := c.rc.Invoke(ctx, mq.Addr, req)
	if err != nil {
		return nil, err
	}
	return sendResult(mq, id, resp)
}

// SendAsync sends m to mq and returns once the request is queued; done is called from
// another goroutine with the outcome. A non-nil error means done will not be called.
// The send gives up after timeout (SendTimeout when 0) or when ctx ends.
func (c *Client) SendAsync(ctx context.Context, mq MessageQueue, group string, m *Message, timeout time.Duration,
	done func(*SendResult, error)) error {
	req, id, err := sendRequest(mq, group, m)
	if err != nil {
		return err
	}
	if timeout <= 0 {
		timeout = SendTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	err = c.rc.InvokeAsync(ctx, mq.Addr, req, func(resp *remoting.Command, err error) {
		cancel()
		if err != nil {
			done(nil, err)
			return
		}
		done(sendResult(mq, id, resp))
	})
	if err != nil {
		cancel()
	}
	return err
}

// Unique message ids in the layout of Java's MessageClientIDSetter: a 10-byte prefix
// (IPv4 address, pid, a random number) and a 6-byte suffix (milliseconds since the start
// of the month, a counter), 32 upper-case hex digits.
var (
	uniqPrefix  string
	uniqCounter atomic.Uint32
	monthStart  time.Time
)

func init() {
	var b [10]byte
	copy(b[:4], localIPv4())
	binary.BigEndian.PutUint16(b[4:], uint16(os.Getpid()))
	rand.Read(b[6:])
	uniqPrefix = fmt.Sprintf("%X", b[:])
	now := time.Now()
	monthStart = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, now.Location())
}

func localIPv4() []byte {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() {
				if ip4 := ipn.IP.To4(); ip4 != nil {
					return ip4
				}
			}
		}
	}
	return []byte{127, 0, 0, 1}
}

// NewUniqID returns a fresh UNIQ_KEY.
func NewUniqID() string {
	var b [6]byte
	binary.BigEndian.PutUint32(b[:], uint32(time.Since(monthStart).Milliseconds()))
	binary.BigEndian.PutUint16(b[4:], uint16(uniqCounter.Add(1)))
	var out [32]byte
	copy(out[:], uniqPrefix)
	hex.Encode(out[20:], b[:])
	for i := 20; i < 32; i++ {
		if out[i] >= 'a' {
			out[i] -= 'a' - 'A'
		}
	}
	return string(out[:])
}
