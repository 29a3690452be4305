package remoting

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// DefaultMaxFrameSize bounds a frame's length field unless configured otherwise.
const DefaultMaxFrameSize = 16 << 20

const (
	lengthFieldSize     = 4
	headerLenFieldSize  = 4
	maxHeaderLength     = 1<<24 - 1 // the header length has 3 bytes
	binaryHeaderMinSize = 2 + 1 + 2 + 4 + 4 + 4 + 4
	frameReadChunk      = 64 << 10 // ReadFrame grows a frame by at most this much per read
)

var (
	ErrFrameTooLarge  = errors.New("remoting: frame exceeds the maximum size")
	ErrFrameTooShort  = errors.New("remoting: frame shorter than its header length field")
	ErrHeaderTooLarge = errors.New("remoting: header length exceeds the frame")
	ErrBadHeader      = errors.New("remoting: undecodable header")
	ErrSerializeType  = errors.New("remoting: unknown header serialize type")
	ErrFieldTooLong   = errors.New("remoting: header field too long for the binary header")
)

// Encode returns c as one frame, length field included, with its header in c.Serialize
// and its BodyParts copied in after Body.
func Encode(c *Command) ([]byte, error) {
	bp := frameBufs.Get().(*[]byte)
	defer putFrameBuf(bp)
	head, err := appendFrameHead((*bp)[:0], c)
	*bp = head
	if err != nil {
		return nil, err
	}
	buf := make([]byte, len(head), len(head)+c.BodyLen()-len(c.Body))
	copy(buf, head)
	for _, p := range c.BodyParts {
		buf = append(buf, p...)
	}
	return buf, nil
}

// appendFrameHead appends c's frame but its BodyParts to dst: the length field, which
// counts them, the header and Body. On error dst comes back as it was.
func appendFrameHead(dst []byte, c *Command) ([]byte, error) {
	var buf [32]field
	fields := c.sortedFields(buf[:0])
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0) // frame and header lengths, set below
	var err error
	switch c.Serialize {
	case JSON:
		dst = appendJSONHeader(dst, c, fields)
	case Binary:
		dst, err = appendBinaryHeader(dst, c, fields)
	default:
		err = fmt.Errorf("%w: %d", ErrSerializeType, c.Serialize)
	}
	if err != nil {
		return dst[:start], err
	}
	headerLen := len(dst) - start - lengthFieldSize - headerLenFieldSize
	if headerLen > maxHeaderLength {
		return dst[:start], fmt.Errorf("%w: header of %d bytes", ErrHeaderTooLarge, headerLen)
	}
	frameLen := headerLenFieldSize + headerLen + c.BodyLen()
	binary.BigEndian.PutUint32(dst[start:], uint32(frameLen))
	binary.BigEndian.PutUint32(dst[start+lengthFieldSize:], uint32(c.Serialize)<<24|uint32(headerLen))
	return append(dst, c.Body...), nil
}

// frameBufs holds buffers for frame heads, which the writer gives back once written.
var frameBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// maxPooledFrameBuf: larger buffers (a big Body) go to the garbage collector, not back
// to the pool, lest every pooled buffer grow to the largest frame.
const maxPooledFrameBuf = 64 << 10

func putFrameBuf(bp *[]byte) {
	if bp == nil || cap(*bp) > maxPooledFrameBuf {
		return
	}
	*bp = (*bp)[:0]
	frameBufs.Put(bp)
}

// sortedFields returns c's fields in the order the encoders write them, sorted by name,
// one per name (the last set), in buf when they fit: a command's bytes must not depend
// on a map's iteration order (fixtures, caches).
func (c *Command) sortedFields(buf []field) []field {
	fields := buf[:0]
	byName := func(a, b field) int { return strings.Compare(a.name, b.name) }
	if c.fieldList == nil {
		for k, v := range c.ExtFields {
			fields = append(fields, field{k, v})
		}
		slices.SortFunc(fields, byName)
		return fields
	}
	fields = append(fields, c.fieldList...)
	slices.SortStableFunc(fields, byName) // a name's entries stay in the order they came
	unique := fields[:0]
	for i, f := range fields {
		if i+1 == len(fields) || fields[i+1].name != f.name {
			unique = append(unique, f)
		}
	}
	return unique
}

// ReadFrame reads one frame from r and returns what follows its length field. A length
// above maxSize fails with ErrFrameTooLarge before anything is allocated for it.
func ReadFrame(r *bufio.Reader, maxSize int) ([]byte, error) {
	frame, _, err := readFrame(r, maxSize, false)
	return frame, err
}

// readFrame is ReadFrame that, with reuse, reads a frame of up to maxReusedFrame bytes
// into a buffer of reusedFrames, which it returns too; nil for a larger frame.
func readFrame(r *bufio.Reader, maxSize int, reuse bool) (frame []byte, buf *[]byte, err error) {
	// Peek, not ReadFull into an array: that array would escape, one allocation a frame.
	lenBuf, err := r.Peek(lengthFieldSize)
	if err != nil {
		if len(lenBuf) > 0 && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, nil, err
	}
	n := binary.BigEndian.Uint32(lenBuf)
	r.Discard(lengthFieldSize)
	if uint64(n) > uint64(maxSize) {
		return nil, nil, fmt.Errorf("%w: %d > %d bytes", ErrFrameTooLarge, n, maxSize)
	}
	if n < headerLenFieldSize {
		return nil, nil, fmt.Errorf("%w: length %d", ErrFrameTooShort, n)
	}
	if reuse && n <= maxReusedFrame {
		buf = getReusedFrame(int(n))
		if err := readFull(r, *buf); err != nil {
			putReusedFrame(buf)
			return nil, nil, err
		}
		return *buf, buf, nil
	}
	// Memory follows the bytes that arrive, not the length a peer announces: a peer
	// that claims 16 MiB and sends nothing costs one chunk, not 16 MiB.
	frame = make([]byte, 0, min(int(n), frameReadChunk))
	for len(frame) < int(n) {
		step := min(int(n)-len(frame), frameReadChunk)
		frame = slices.Grow(frame, step)
		if err := readFull(r, frame[len(frame):len(frame)+step]); err != nil {
			return nil, nil, err
		}
		frame = frame[:len(frame)+step]
	}
	return frame, nil, nil
}

// readFull is io.ReadFull of a frame's bytes: past its length field, even none read is
// a frame cut short.
func readFull(r io.Reader, p []byte) error {
	_, err := io.ReadFull(r, p)
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// Request frames of the codes a server names in ServerConfig.ReusedFrameCodes are read
// into buffers taken from reusedFrames, by size class, and given back once the request
// is answered: a send's frame was the most the broker allocated per message. Frames of
// other requests leave theirs to the garbage collector, a class at most twice their
// size.
const (
	minReusedFrame = 512
	maxReusedFrame = 64 << 10 // frameReadChunk: what one read of a frame costs anyway
)

var reusedFrames [8]sync.Pool // class i: buffers of minReusedFrame<<i bytes

// frameClass is the class of a frame of n bytes, n <= maxReusedFrame.
func frameClass(n int) int {
	if n <= minReusedFrame {
		return 0
	}
	return bits.Len(uint(n-1)) - bits.Len(minReusedFrame-1)
}

// getReusedFrame returns a buffer of length n from its class.
func getReusedFrame(n int) *[]byte {
	class := frameClass(n)
	bp, _ := reusedFrames[class].Get().(*[]byte)
	if bp == nil {
		b := make([]byte, minReusedFrame<<class)
		bp = &b
	}
	*bp = (*bp)[:n]
	return bp
}

func putReusedFrame(bp *[]byte) {
	reusedFrames[frameClass(cap(*bp))].Put(bp)
}

// Decode parses a frame without its length field, as ReadFrame returns it. The body
// aliases frame.
func Decode(frame []byte) (*Command, error) { return decode(frame, nil) }

// decode is Decode, leaving unmapped the extFields of JSON requests whose code is in
// unmappedCodes (see Command.ExtFields).
func decode(frame []byte, unmappedCodes []int16) (*Command, error) {
	if len(frame) < headerLenFieldSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrFrameTooShort, len(frame))
	}
	mark := binary.BigEndian.Uint32(frame)
	serialize := SerializeType(mark >> 24)
	headerLen := int(mark & maxHeaderLength)
	if headerLen > len(frame)-headerLenFieldSize {
		return nil, fmt.Errorf("%w: header %d bytes, frame %d", ErrHeaderTooLarge, headerLen, len(frame))
	}
	header := frame[headerLenFieldSize : headerLenFieldSize+headerLen]
	var (
		c   *Command
		err error
	)
	switch serialize {
	case JSON:
		c, err = decodeJSONHeader(header, unmappedCodes)
	case Binary:
		c, err = decodeBinaryHeader(header)
	default:
		return nil, fmt.Errorf("%w: %d", ErrSerializeType, serialize)
	}
	if err != nil {
		return nil, err
	}
	if c.IsResponse() {
		c.Fields() // response codes are not request codes: whoever waits reads ExtFields
	}
	c.Serialize = serialize
	if body := frame[headerLenFieldSize+headerLen:]; len(body) > 0 {
		c.Body = body
	}
	return c, nil
}

// jsonHeader mirrors the JSON Java's fastjson writes for a RemotingCommand.
type jsonHeader struct {
	Code      int16             `json:"code"`
	ExtFields map[string]string `json:"extFields,omitempty"`
	Flag      int32             `json:"flag"`
	Language  json.RawMessage   `json:"language"`
	Opaque    int32             `json:"opaque"`
	Remark    *string           `json:"remark,omitempty"`
	Serialize string            `json:"serializeTypeCurrentRPC,omitempty"`
	Version   int16             `json:"version"`
}

// encodeJSONHeader returns the bytes json.Marshal writes for c's jsonHeader.
func encodeJSONHeader(c *Command) ([]byte, error) {
	return appendJSONHeader(nil, c, c.sortedFields(nil)), nil
}

// appendJSONHeader appends the bytes json.Marshal writes for c's jsonHeader (keys in
// field order, extFields sorted, strings escaped alike), several times faster. fields
// are c's, from sortedFields.
func appendJSONHeader(b []byte, c *Command, fields []field) []byte {
	b = append(b, `{"code":`...)
	b = strconv.AppendInt(b, int64(c.Code), 10)
	if len(fields) > 0 {
		b = append(b, `,"extFields":{`...)
		for i, f := range fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, f.name)
			b = append(b, ':')
			b = appendJSONString(b, f.value)
		}
		b = append(b, '}')
	}
	b = append(b, `,"flag":`...)
	b = strconv.AppendInt(b, int64(c.Flag), 10)
	b = append(b, `,"language":`...)
	b = appendJSONString(b, c.Language.String())
	b = append(b, `,"opaque":`...)
	b = strconv.AppendInt(b, int64(c.Opaque), 10)
	if c.Remark != "" {
		b = append(b, `,"remark":`...)
		b = appendJSONString(b, c.Remark)
	}
	b = append(b, `,"serializeTypeCurrentRPC":"JSON","version":`...)
	b = strconv.AppendInt(b, int64(c.Version), 10)
	return append(b, '}')
}

// appendJSONString appends s quoted as encoding/json quotes it: short escapes for
// \b \f \n \r \t, \u00XX for other control bytes and for < > &, \ufffd for invalid
// UTF-8, and \u2028, \u2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func decodeJSONHeader(b []byte, unmappedCodes []int16) (*Command, error) {
	if c, ok := decodeJSONHeaderFast(b, unmappedCodes); ok {
		return c, nil
	}
	return decodeJSONHeaderStd(b)
}

// decodeJSONHeaderStd decodes any JSON header with encoding/json.
func decodeJSONHeaderStd(b []byte) (*Command, error) {
	// encoding/json takes null for a struct and leaves it zero: that would be a
	// request with code 0, not the undecodable header it is.
	if b := bytes.TrimLeft(b, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrBadHeader)
	}
	var h jsonHeader
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadHeader, err)
	}
	c := &Command{
		Code:      h.Code,
		Version:   h.Version,
		Opaque:    h.Opaque,
		Flag:      h.Flag,
		ExtFields: h.ExtFields,
	}
	if h.Remark != nil {
		c.Remark = *h.Remark
	}
	if c.ExtFields == nil {
		c.ExtFields = map[string]string{}
	}
	// Java writes the enum name; some encoders write its ordinal.
	var name string
	var ordinal uint8
	switch {
	case len(h.Language) == 0 || string(h.Language) == "null":
	case json.Unmarshal(h.Language, &name) == nil:
		c.Language = parseLanguage(name)
	case json.Unmarshal(h.Language, &ordinal) == nil:
		c.Language = parseLanguage(LanguageCode(ordinal).String())
	default:
		return nil, fmt.Errorf("%w: language %s", ErrBadHeader, h.Language)
	}
	return c, nil
}

// maxBinaryKeyLength is the longest extFields key the binary header carries: Java reads
// the key length as a signed short.
const maxBinaryKeyLength = math.MaxInt16

// appendBinaryHeader appends c's header in the binary layout; fields are c's, from
// sortedFields.
func appendBinaryHeader(b []byte, c *Command, fields []field) ([]byte, error) {
	size := binaryHeaderMinSize + len(c.Remark)
	for _, f := range fields {
		if len(f.name) > maxBinaryKeyLength {
			return b, fmt.Errorf("%w: key of %d bytes", ErrFieldTooLong, len(f.name))
		}
		size += 2 + len(f.name) + 4 + len(f.value)
	}
	if size > maxHeaderLength {
		return b, fmt.Errorf("%w: header of %d bytes", ErrHeaderTooLarge, size)
	}
	b = slices.Grow(b, size)
	b = binary.BigEndian.AppendUint16(b, uint16(c.Code))
	b = append(b, byte(c.Language))
	b = binary.BigEndian.AppendUint16(b, uint16(c.Version))
	b = binary.BigEndian.AppendUint32(b, uint32(c.Opaque))
	b = binary.BigEndian.AppendUint32(b, uint32(c.Flag))
	b = binary.BigEndian.AppendUint32(b, uint32(len(c.Remark)))
	b = append(b, c.Remark...)
	extStart := len(b)
	b = binary.BigEndian.AppendUint32(b, 0)
	for _, f := range fields {
		b = binary.BigEndian.AppendUint16(b, uint16(len(f.name)))
		b = append(b, f.name...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(f.value)))
		b = append(b, f.value...)
	}
	binary.BigEndian.PutUint32(b[extStart:], uint32(len(b)-extStart-4))
	return b, nil
}

// binaryReader reads the binary header's fields, remembering the first shortfall.
type binaryReader struct {
	b   []byte
	src string // the whole header as a string, which strings slice
	off int    // of b in src
	err error
}

func (r *binaryReader) next(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("%w: field of %d bytes, %d left", ErrBadHeader, n, len(r.b))
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	r.off += n
	return v
}

func (r *binaryReader) u8() byte {
	if v := r.next(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *binaryReader) u16() uint16 {
	if v := r.next(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

func (r *binaryReader) u32() uint32 {
	if v := r.next(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

// str reads n bytes as a string, without copying them again.
func (r *binaryReader) str(n int) string {
	start := r.off
	if r.next(n) == nil {
		return ""
	}
	return r.src[start:r.off]
}

func (r *binaryReader) str32() string { return r.str(int(int32(r.u32()))) }

// maxFieldsHint bounds the size a header's extFields map is made at: the hint comes
// from the peer's bytes, and a header of millions of empty entries must not buy a map
// of millions of slots before a single one is read. Requests carry at most about 20.
const maxFieldsHint = 32

// binaryFieldCount counts the well-formed extFields entries of b, up to maxFieldsHint, so
// that the map is made at its size once: growing it was a noticeable part of decoding a
// send.
func binaryFieldCount(b []byte) int {
	n := 0
	for len(b) >= 2 && n < maxFieldsHint {
		k := int(int16(binary.BigEndian.Uint16(b)))
		if b = b[2:]; k < 0 || k+4 > len(b) {
			break
		}
		v := int(int32(binary.BigEndian.Uint32(b[k:])))
		if b = b[k+4:]; v < 0 || v > len(b) {
			break
		}
		b = b[v:]
		n++
	}
	return n
}

func decodeBinaryHeader(b []byte) (*Command, error) {
	r := &binaryReader{b: b, src: string(b)} // one allocation for every string
	c := &Command{
		Code:     int16(r.u16()),
		Language: LanguageCode(r.u8()),
		Version:  int16(r.u16()),
		Opaque:   int32(r.u32()),
		Flag:     int32(r.u32()),
	}
	c.Remark = r.str32()
	extLen := int(int32(r.u32()))
	ext := &binaryReader{src: r.src, off: r.off}
	ext.b = r.next(extLen)
	if r.err != nil {
		return nil, r.err
	}
	c.ExtFields = make(map[string]string, binaryFieldCount(ext.b))
	for len(ext.b) > 0 && ext.err == nil {
		k := ext.str(int(int16(ext.u16()))) // Java reads a signed short
		v := ext.str32()
		if ext.err == nil {
			c.ExtFields[k] = v
		}
	}
	if ext.err != nil {
		return nil, ext.err
	}
	return c, nil
}
