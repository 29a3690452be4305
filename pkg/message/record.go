package message

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net/netip"
)

// Record constants.
const (
	// MagicCode marks a message record (RocketMQ 4.x, MESSAGE_MAGIC_CODE).
	MagicCode int32 = -626843481
	// BlankMagicCode marks the blank filler at the end of a segment.
	BlankMagicCode int32 = -875286124
	// MinBlankLength is the room always kept at the end of a segment for a
	// blank record (total size + magic).
	MinBlankLength = 8
	// MaxTopicLength is the longest topic the one-byte length field allows
	// (RocketMQ refuses more than 127 bytes).
	MaxTopicLength = 127
	// MaxPropertiesLength fits the two-byte, signed properties length.
	MaxPropertiesLength = 32767

	// Fixed offsets of the leading record fields.
	OffTotalSize      = 0
	OffMagic          = 4
	OffBodyCRC        = 8
	OffQueueID        = 12
	OffFlag           = 16
	OffQueueOffset    = 20
	OffPhysicalOffset = 28
	OffSysFlag        = 36
	OffBornTimestamp  = 40
	OffBornHost       = 48
)

// Errors of record encoding and decoding.
var (
	ErrTopicTooLong = errors.New("message: topic too long")
	ErrEmptyTopic   = errors.New("message: empty topic")
	ErrBadRecord    = errors.New("message: bad record")
	ErrBadHost      = errors.New("message: bad host address")
)

// Message is a message as a producer hands it to the store. Properties is
// the encoded properties string (see EncodeProperties).
type Message struct {
	Topic                     string
	QueueID                   int32
	Flag                      int32
	SysFlag                   int32
	Body                      []byte
	Properties                string
	BornTimestamp             int64
	BornHost                  netip.AddrPort
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
}

// Stamp holds the fields the store assigns when it appends a record.
type Stamp struct {
	QueueOffset    int64
	PhysicalOffset int64
	StoreTimestamp int64
	StoreHost      netip.AddrPort
	BodyCRC        int32
}

// MessageExt is a decoded commitlog record.
type MessageExt struct {
	Message
	StoreSize      int32
	BodyCRC        int32
	QueueOffset    int64
	PhysicalOffset int64
	StoreTimestamp int64
	StoreHost      netip.AddrPort
}

// BodyCRC returns the record body checksum as RocketMQ stores it.
func BodyCRC(body []byte) int32 {
	return int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF)
}

func hostLen(v6 bool) int {
	if v6 {
		return 20
	}
	return 8
}

// SysFlagFor returns sysFlag with the BORNHOST_V6/STOREHOST_V6 bits set to
// match the given addresses.
func SysFlagFor(sysFlag int32, born, store netip.AddrPort) int32 {
	sysFlag &^= FlagBornHostV6 | FlagStoreHostV6
	if is6(born) {
		sysFlag |= FlagBornHostV6
	}
	if is6(store) {
		sysFlag |= FlagStoreHostV6
	}
	return sysFlag
}

func is6(a netip.AddrPort) bool { return a.Addr().Is6() && !a.Addr().Is4In6() }

// RecordSize returns the encoded size of a record with the given sysflag
// (host bits decide the host lengths) and variable parts.
func RecordSize(sysFlag int32, bodyLen, topicLen, propsLen int) int {
	return 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + hostLen(sysFlag&FlagBornHostV6 != 0) +
		8 + hostLen(sysFlag&FlagStoreHostV6 != 0) + 4 + 8 +
		4 + bodyLen + 1 + topicLen + 2 + propsLen
}

// Check validates the message parts that the record format bounds.
func (m *Message) Check() error {
	if m.Topic == "" {
		return ErrEmptyTopic
	}
	if len(m.Topic) > MaxTopicLength {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTopicTooLong, len(m.Topic), MaxTopicLength)
	}
	return ValidateProperties(m.Properties)
}

func putHost(dst []byte, a netip.AddrPort) int {
	addr := a.Addr()
	if is6(a) {
		b := addr.As16()
		copy(dst, b[:])
		binary.BigEndian.PutUint32(dst[16:], uint32(a.Port()))
		return 20
	}
	var b [4]byte // an unknown host is written as 0.0.0.0, never refused
	if addr.IsValid() {
		b = addr.Unmap().As4()
	}
	copy(dst, b[:])
	binary.BigEndian.PutUint32(dst[4:], uint32(a.Port()))
	return 8
}

// EncodeRecord writes the record of m with the store stamp s into dst and
// returns its size. dst must hold RecordSize bytes; sysFlag host bits are
// derived from the addresses. The message must have passed Check.
func EncodeRecord(dst []byte, m *Message, s *Stamp) int {
	sysFlag := SysFlagFor(m.SysFlag, m.BornHost, s.StoreHost)
	size := RecordSize(sysFlag, len(m.Body), len(m.Topic), len(m.Properties))
	be := binary.BigEndian
	_ = dst[size-1]
	be.PutUint32(dst[0:], uint32(size))
	be.PutUint32(dst[4:], uint32(magicU))
	be.PutUint32(dst[8:], uint32(s.BodyCRC))
	be.PutUint32(dst[12:], uint32(m.QueueID))
	be.PutUint32(dst[16:], uint32(m.Flag))
	be.PutUint64(dst[20:], uint64(s.QueueOffset))
	be.PutUint64(dst[28:], uint64(s.PhysicalOffset))
	be.PutUint32(dst[36:], uint32(sysFlag))
	be.PutUint64(dst[40:], uint64(m.BornTimestamp))
	p := 48
	p += putHost(dst[p:], m.BornHost)
	be.PutUint64(dst[p:], uint64(s.StoreTimestamp))
	p += 8
	p += putHost(dst[p:], s.StoreHost)
	be.PutUint32(dst[p:], uint32(m.ReconsumeTimes))
	p += 4
	be.PutUint64(dst[p:], uint64(m.PreparedTransactionOffset))
	p += 8
	be.PutUint32(dst[p:], uint32(len(m.Body)))
	p += 4
	p += copy(dst[p:], m.Body)
	dst[p] = byte(len(m.Topic))
	p++
	p += copy(dst[p:], m.Topic)
	be.PutUint16(dst[p:], uint16(len(m.Properties)))
	p += 2
	p += copy(dst[p:], m.Properties)
	return p
}

// RecordView gives zero-copy access to the fields of an encoded record.
type RecordView struct {
	Raw        []byte
	SysFlag    int32
	storeAt    int // offset of the store timestamp
	bodyAt     int // offset of the body length field
	topicAt    int // offset of the topic length byte
	propsAt    int // offset of the properties length field
	propsEnd   int
	totalSize  int
	bodyLength int
}

// ParseRecord validates the framing of the record at the start of b (magic,
// total size, field lengths; not the CRC) and returns a view of it.
func ParseRecord(b []byte) (RecordView, error) {
	var v RecordView
	be := binary.BigEndian
	if len(b) < 8 {
		return v, fmt.Errorf("%w: short header", ErrBadRecord)
	}
	size := int(int32(be.Uint32(b)))
	if magic := int32(be.Uint32(b[4:])); magic != MagicCode {
		return v, fmt.Errorf("%w: magic %d", ErrBadRecord, magic)
	}
	if size < RecordSize(0, 0, 0, 0) || size > len(b) {
		return v, fmt.Errorf("%w: total size %d (room %d)", ErrBadRecord, size, len(b))
	}
	v.Raw = b[:size]
	v.totalSize = size
	v.SysFlag = int32(be.Uint32(b[OffSysFlag:]))
	p := OffBornHost + hostLen(v.SysFlag&FlagBornHostV6 != 0)
	v.storeAt = p
	p += 8 + hostLen(v.SysFlag&FlagStoreHostV6 != 0) + 4 + 8
	if p+4 > size {
		return v, fmt.Errorf("%w: truncated before body", ErrBadRecord)
	}
	v.bodyAt = p
	bl := int(int32(be.Uint32(b[p:])))
	if bl < 0 || p+4+bl+1 > size {
		return v, fmt.Errorf("%w: body length %d", ErrBadRecord, bl)
	}
	v.bodyLength = bl
	p += 4 + bl
	v.topicAt = p
	tl := int(b[p])
	if p+1+tl+2 > size {
		return v, fmt.Errorf("%w: topic length %d", ErrBadRecord, tl)
	}
	p += 1 + tl
	v.propsAt = p
	pl := int(int16(be.Uint16(b[p:])))
	if pl < 0 || p+2+pl != size {
		return v, fmt.Errorf("%w: properties length %d, total size %d", ErrBadRecord, pl, size)
	}
	v.propsEnd = p + 2 + pl
	return v, nil
}

// Size is the record's total size.
func (v *RecordView) Size() int { return v.totalSize }

// BodyCRC is the stored body checksum.
func (v *RecordView) BodyCRC() int32 { return int32(binary.BigEndian.Uint32(v.Raw[OffBodyCRC:])) }

// QueueID is the stored queue id.
func (v *RecordView) QueueID() int32 { return int32(binary.BigEndian.Uint32(v.Raw[OffQueueID:])) }

// QueueOffset is the stored queue offset.
func (v *RecordView) QueueOffset() int64 {
	return int64(binary.BigEndian.Uint64(v.Raw[OffQueueOffset:]))
}

// PhysicalOffset is the stored commitlog offset.
func (v *RecordView) PhysicalOffset() int64 {
	return int64(binary.BigEndian.Uint64(v.Raw[OffPhysicalOffset:]))
}

// StoreTimestamp is the stored store time in ms.
func (v *RecordView) StoreTimestamp() int64 {
	return int64(binary.BigEndian.Uint64(v.Raw[v.storeAt:]))
}

// Body is the record body (a slice of Raw).
func (v *RecordView) Body() []byte { return v.Raw[v.bodyAt+4 : v.bodyAt+4+v.bodyLength] }

// Topic is the record topic (a slice of Raw).
func (v *RecordView) Topic() []byte { return v.Raw[v.topicAt+1 : v.propsAt] }

// Properties is the encoded properties string (a slice of Raw).
func (v *RecordView) Properties() []byte { return v.Raw[v.propsAt+2 : v.propsEnd] }

// CheckCRC reports whether the body matches the stored CRC.
func (v *RecordView) CheckCRC() bool { return BodyCRC(v.Body()) == v.BodyCRC() }

func getHost(b []byte, v6 bool) netip.AddrPort {
	if v6 {
		a := netip.AddrFrom16([16]byte(b[:16]))
		return netip.AddrPortFrom(a, uint16(binary.BigEndian.Uint32(b[16:])))
	}
	a := netip.AddrFrom4([4]byte(b[:4]))
	return netip.AddrPortFrom(a, uint16(binary.BigEndian.Uint32(b[4:])))
}

// DecodeRecord decodes the record at the start of b into a MessageExt. The
// body is copied; checkCRC also verifies the body checksum.
func DecodeRecord(b []byte, checkCRC bool) (*MessageExt, error) {
	v, err := ParseRecord(b)
	if err != nil {
		return nil, err
	}
	if checkCRC && !v.CheckCRC() {
		return nil, fmt.Errorf("%w: body CRC mismatch", ErrBadRecord)
	}
	be := binary.BigEndian
	r := v.Raw
	m := &MessageExt{
		StoreSize:      int32(v.totalSize),
		BodyCRC:        v.BodyCRC(),
		QueueOffset:    v.QueueOffset(),
		PhysicalOffset: v.PhysicalOffset(),
		StoreTimestamp: v.StoreTimestamp(),
	}
	m.Topic = string(v.Topic())
	m.QueueID = v.QueueID()
	m.Flag = int32(be.Uint32(r[OffFlag:]))
	m.SysFlag = v.SysFlag
	m.BornTimestamp = int64(be.Uint64(r[OffBornTimestamp:]))
	m.BornHost = getHost(r[OffBornHost:], v.SysFlag&FlagBornHostV6 != 0)
	p := v.storeAt + 8
	m.StoreHost = getHost(r[p:], v.SysFlag&FlagStoreHostV6 != 0)
	p += hostLen(v.SysFlag&FlagStoreHostV6 != 0)
	m.ReconsumeTimes = int32(be.Uint32(r[p:]))
	m.PreparedTransactionOffset = int64(be.Uint64(r[p+4:]))
	m.Body = append([]byte(nil), v.Body()...)
	m.Properties = string(v.Properties())
	return m, nil
}

// OffsetMsgID returns the broker message id of the decoded record.
func (m *MessageExt) OffsetMsgID() string { return CreateOffsetMsgID(m.StoreHost, m.PhysicalOffset) }

// Property returns one property of the message.
func (m *Message) Property(key string) string {
	v, _ := LookupProperty(m.Properties, key)
	return v
}

var magicU, blankMagicU = MagicCode, BlankMagicCode

// PutBlank writes a blank end-of-segment record of len(dst) bytes header.
func PutBlank(dst []byte, size int) {
	binary.BigEndian.PutUint32(dst[0:], uint32(size))
	binary.BigEndian.PutUint32(dst[4:], uint32(blankMagicU))
}
