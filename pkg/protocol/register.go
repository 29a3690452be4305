package protocol

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
)

// RegisterBrokerBody is REGISTER_BROKER's body.
//
// Plain, it is JSON. Compressed (header compressed=true, since 4.9) it is a zlib stream of
// big-endian length-prefixed parts:
//
//	int32 n, n bytes   data version JSON
//	int32 count        number of topics
//	count times:       int32 n, n bytes of TopicConfig.EncodeLine
//	int32 n, n bytes   filter server list JSON
type RegisterBrokerBody struct {
	TopicConfigSerializeWrapper TopicConfigSerializeWrapper `json:"topicConfigSerializeWrapper"`
	FilterServerList            []string                    `json:"filterServerList"`
}

// Bounds on a compressed body, so a corrupt length or a zlib bomb cannot exhaust memory.
const (
	maxPart     = 64 << 20 // one length-prefixed part
	maxInflated = 64 << 20 // the whole inflated stream
)

// Encode returns the body, compressed or as JSON.
func (b *RegisterBrokerBody) Encode(compress bool) ([]byte, error) {
	if !compress {
		return json.Marshal(b)
	}
	var buf bytes.Buffer
	zw, err := zlib.NewWriterLevel(&buf, zlib.BestCompression)
	if err != nil {
		return nil, err
	}
	// Writes to a zlib writer over a bytes.Buffer fail only if compression does; the
	// first failure is kept and returned (Close would report it again).
	var werr error
	write := func(p []byte) {
		if werr == nil {
			_, werr = zw.Write(p)
		}
	}
	writeLen := func(n int) { write(binary.BigEndian.AppendUint32(nil, uint32(int32(n)))) }
	writePart := func(p []byte) {
		writeLen(len(p))
		write(p)
	}
	writePart(MustEncode(b.TopicConfigSerializeWrapper.DataVersion))
	table := b.TopicConfigSerializeWrapper.TopicConfigTable
	writeLen(len(table))
	for _, name := range slices.Sorted(maps.Keys(table)) {
		writePart([]byte(table[name].EncodeLine()))
	}
	filters := b.FilterServerList
	if filters == nil {
		filters = []string{}
	}
	writePart(MustEncode(filters))
	if werr != nil {
		return nil, werr
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DecodeRegisterBrokerBody parses a REGISTER_BROKER body in either form.
func DecodeRegisterBrokerBody(data []byte, compressed bool) (*RegisterBrokerBody, error) {
	b := &RegisterBrokerBody{}
	if !compressed {
		if err := Decode(data, b); err != nil {
			return nil, fmt.Errorf("protocol: register broker body: %w", err)
		}
		return b, nil
	}
	zr, err := zlib.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("protocol: compressed register broker body: %w", err)
	}
	defer zr.Close()
	if err := b.decodeCompressed(io.LimitReader(zr, maxInflated)); err != nil {
		return nil, fmt.Errorf("protocol: compressed register broker body: %w", err)
	}
	return b, nil
}

func (b *RegisterBrokerBody) decodeCompressed(r io.Reader) error {
	dv, err := readPart(r)
	if err != nil {
		return fmt.Errorf("data version: %w", err)
	}
	if err := Decode(dv, &b.TopicConfigSerializeWrapper.DataVersion); err != nil {
		return fmt.Errorf("data version: %w", err)
	}
	var count int32
	if err := binary.Read(r, binary.BigEndian, &count); err != nil {
		return fmt.Errorf("topic count: %w", err)
	}
	if count < 0 || count > maxPart {
		return fmt.Errorf("topic count %d out of range", count)
	}
	b.TopicConfigSerializeWrapper.TopicConfigTable = make(map[string]*TopicConfig, min(count, 4096))
	for i := range count {
		line, err := readPart(r)
		if err != nil {
			return fmt.Errorf("topic %d: %w", i, err)
		}
		tc, err := DecodeTopicConfigLine(string(line))
		if err != nil {
			return err
		}
		b.TopicConfigSerializeWrapper.TopicConfigTable[tc.TopicName] = tc
	}
	filters, err := readPart(r)
	if err != nil {
		return fmt.Errorf("filter server list: %w", err)
	}
	// Java logs and carries on with an empty list when this part does not parse.
	if err := Decode(filters, &b.FilterServerList); err != nil {
		b.FilterServerList = nil
	}
	return nil
}

func readPart(r io.Reader) ([]byte, error) {
	var n int32
	if err := binary.Read(r, binary.BigEndian, &n); err != nil {
		return nil, err
	}
	if n < 0 || n > maxPart {
		return nil, fmt.Errorf("part length %d out of range", n)
	}
	// Memory follows the bytes that inflate, not the length the part claims.
	p, err := io.ReadAll(io.LimitReader(r, int64(n)))
	if err != nil {
		return nil, err
	}
	if len(p) < int(n) {
		return nil, io.ErrUnexpectedEOF
	}
	return p, nil
}
