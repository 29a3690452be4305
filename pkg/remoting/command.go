package remoting

import (
	"fmt"
	"sync/atomic"
	"time"
)

// SerializeType is how a frame's header is encoded.
type SerializeType byte

const (
	JSON   SerializeType = 0 // header as JSON text
	Binary SerializeType = 1 // header in the ROCKETMQ binary layout
)

func (t SerializeType) String() string {
	switch t {
	case JSON:
		return "JSON"
	case Binary:
		return "ROCKETMQ"
	}
	return fmt.Sprintf("SerializeType(%d)", byte(t))
}

// LanguageCode names the implementation that sent a command.
type LanguageCode byte

// Language codes in the order of Java's LanguageCode enum, whose ordinal is the wire value.
const (
	Java LanguageCode = iota
	CPP
	DotNet
	Python
	Delphi
	Erlang
	Ruby
	Other
	HTTP
	Go
	PHP
	OMS
	Rust
)

var languageNames = [...]string{"JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO", "PHP", "OMS", "RUST"}

func (l LanguageCode) String() string {
	if int(l) < len(languageNames) {
		return languageNames[l]
	}
	return "OTHER"
}

func parseLanguage(name string) LanguageCode {
	for i, n := range languageNames {
		if n == name {
			return LanguageCode(i)
		}
	}
	return Other
}

// Flag bits.
const (
	flagResponse = 1 << 0
	flagOneway   = 1 << 1
)

// Version is the protocol version this implementation announces: RocketMQ 4.9.7, whose
// MQVersion.Version.V4_9_7 has ordinal 407. Higher numbers make Java clients treat the
// peer as a 5.x broker.
const Version int16 = 407

// Command is one remoting request or response.
type Command struct {
	Code     int16
	Language LanguageCode
	Version  int16
	Opaque   int32
	Flag     int32
	Remark   string
	// ExtFields are the header's custom fields, when they are a map. Two kinds of command
	// keep them as a list instead, with ExtFields nil: a request whose code its server
	// lists in ServerConfig.UnmappedFieldCodes (its fields as they came), and a response
	// made by NewResponse (the fields SetField set). Read fields through Field,
	// LookupField or a header decoder, which need no map, or Fields, which makes it.
	ExtFields map[string]string
	Body      []byte
	// BodyParts follow Body in the frame's body. Unlike Body, which is copied when the
	// command is sent, they are written as they are by the connection's writer, so they
	// must stay valid and unchanged until OnWritten runs (the broker's pulls: slices of
	// the mapped commitlog).
	BodyParts [][]byte
	// OnWritten, when set, runs exactly once when a connection is done with the command:
	// after its frame was written or failed to be, or when it is dropped unsent (closed
	// connection, encode error, a response nobody waits for). Conn's sending methods
	// take it over; a command that will not be sent must be given to Discard.
	OnWritten func()

	// Serialize is the header encoding: the one a decoded command arrived in, the one an
	// encoded command is written in.
	Serialize SerializeType

	// Suspended marks a request a handler held to answer later (a long poll), as Java's
	// RemotingCommand.suspended does; not on the wire. Metrics label by it.
	Suspended bool
	// received is when a server took the request from its connection, in monoNow's
	// nanoseconds (zero unless the server has an OnReply hook).
	received int64
	// size is the length of the frame a command read from a connection came in (its
	// body aliases it); 0 for one made here.
	size int
	// fieldList holds the extFields of a command whose ExtFields is nil (see there), in
	// the order they came or were set; nil otherwise, and never empty. Fields moves them
	// into ExtFields.
	fieldList []field
	// frame is the reused buffer the request's frame was read into (its Body aliases
	// it), given back by releaseFrame once the request is answered; nil for the others.
	frame *[]byte
}

// releaseFrame gives back the buffer of a request read into one (ReusedFrameCodes):
// its handler has returned, and from then on nothing reads its Body, which is cleared.
func (c *Command) releaseFrame() {
	if c.frame == nil {
		return
	}
	c.Body = nil
	putReusedFrame(c.frame)
	c.frame = nil
}

// field is one extFields entry.
type field struct{ name, value string }

// epoch anchors monoNow: time.Since on a time with a monotonic reading reads only the
// monotonic clock, half the cost of time.Now (which reads the wall clock too).
var epoch = time.Now()

// monoNow is the monotonic clock in nanoseconds since the process started.
func monoNow() int64 { return int64(time.Since(epoch)) }

var nextOpaque atomic.Int32

// NewRequest returns a request with a fresh opaque, JSON-serialized like the clients do.
func NewRequest(code int16, fields map[string]string, body []byte) *Command {
	if fields == nil {
		fields = map[string]string{}
	}
	return &Command{
		Code:      code,
		Language:  Go,
		Version:   Version,
		Opaque:    nextOpaque.Add(1),
		ExtFields: fields,
		Body:      body,
	}
}

// NewResponse returns the response to c with the given code and remark. It carries c's
// opaque and serialization, as clients expect. Its fields are a list (see ExtFields):
// most responses have a few, and a map for them cost a send more than its header did.
func (c *Command) NewResponse(code int16, remark string) *Command {
	return &Command{
		Code:      code,
		Language:  Go,
		Version:   Version,
		Opaque:    c.Opaque,
		Flag:      flagResponse,
		Remark:    remark,
		Serialize: c.Serialize,
	}
}

// BodyLen is the length of the body: Body and BodyParts.
func (c *Command) BodyLen() int {
	n := len(c.Body)
	for _, p := range c.BodyParts {
		n += len(p)
	}
	return n
}

// Discard runs OnWritten, if still due, for a command that will not be sent.
func (c *Command) Discard() {
	if f := c.OnWritten; f != nil {
		c.OnWritten = nil
		f()
	}
}

// IsResponse reports whether c answers a request.
func (c *Command) IsResponse() bool { return c.Flag&flagResponse != 0 }

// IsOneway reports whether c is a request that wants no response.
func (c *Command) IsOneway() bool { return c.Flag&flagOneway != 0 }

// MarkOneway marks c as a request that wants no response.
func (c *Command) MarkOneway() { c.Flag |= flagOneway }

// Field returns the header field name, or "" when absent.
func (c *Command) Field(name string) string {
	v, _ := c.LookupField(name)
	return v
}

// LookupField returns the header field name and whether c has it.
func (c *Command) LookupField(name string) (string, bool) {
	if c.fieldList == nil {
		v, ok := c.ExtFields[name]
		return v, ok
	}
	// From the end: of a name sent twice the last counts, as in a map.
	for i := len(c.fieldList) - 1; i >= 0; i-- {
		if c.fieldList[i].name == name {
			return c.fieldList[i].value, true
		}
	}
	return "", false
}

// Fields returns ExtFields, made first from c's field list if it keeps one.
func (c *Command) Fields() map[string]string {
	if c.fieldList != nil {
		c.ExtFields, c.fieldList = c.fieldMap(), nil
	}
	return c.ExtFields
}

// fieldMap returns c's fields as a map, leaving c as it is.
func (c *Command) fieldMap() map[string]string {
	if c.fieldList == nil {
		return c.ExtFields
	}
	m := make(map[string]string, len(c.fieldList))
	for _, f := range c.fieldList {
		m[f.name] = f.value
	}
	return m
}

// SetField sets header field name: in the list of a command that keeps one, and of a
// response without fields (see ExtFields), else in ExtFields.
func (c *Command) SetField(name, value string) {
	if c.ExtFields != nil || c.fieldList == nil && !c.IsResponse() {
		if c.ExtFields == nil {
			c.ExtFields = map[string]string{}
		}
		c.ExtFields[name] = value
		return
	}
	// Of a name listed twice the last counts.
	for i := len(c.fieldList) - 1; i >= 0; i-- {
		if c.fieldList[i].name == name {
			c.fieldList[i].value = value
			return
		}
	}
	if c.fieldList == nil {
		c.fieldList = make([]field, 0, 8) // a send's response has 5
	}
	c.fieldList = append(c.fieldList, field{name, value})
}

func (c *Command) String() string {
	kind := "request"
	if c.IsResponse() {
		kind = "response"
	}
	return fmt.Sprintf("%s{code=%d opaque=%d remark=%q fields=%v body=%dB}", kind, c.Code, c.Opaque, c.Remark, c.fieldMap(), c.BodyLen())
}
