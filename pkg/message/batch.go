package message

import (
	"encoding/binary"
	"fmt"
)

// BatchItem is one message of a client batch body.
type BatchItem struct {
	Flag       int32
	Body       []byte
	Properties string
}

// DecodeBatch splits a SEND_BATCH_MESSAGE body: repeated total size (4),
// magic (4), body CRC (4), flag (4), body length (4), body, properties
// length (2), properties. Bodies are slices of b.
func DecodeBatch(b []byte) ([]BatchItem, error) {
	var out []BatchItem
	be := binary.BigEndian
	for p := 0; p < len(b); {
		if len(b)-p < 22 {
			return nil, fmt.Errorf("%w: short batch item at %d", ErrBadRecord, p)
		}
		size := int(int32(be.Uint32(b[p:])))
		if size < 22 || p+size > len(b) {
			return nil, fmt.Errorf("%w: batch item size %d at %d", ErrBadRecord, size, p)
		}
		it := b[p : p+size]
		bl := int(int32(be.Uint32(it[16:])))
		if bl < 0 || 20+bl+2 > size {
			return nil, fmt.Errorf("%w: batch body length %d at %d", ErrBadRecord, bl, p)
		}
		pl := int(be.Uint16(it[20+bl:]))
		if 22+bl+pl != size {
			return nil, fmt.Errorf("%w: batch properties length %d at %d", ErrBadRecord, pl, p)
		}
		out = append(out, BatchItem{
			Flag:       int32(be.Uint32(it[12:])),
			Body:       it[20 : 20+bl],
			Properties: string(it[22+bl : size]),
		})
		p += size
	}
	return out, nil
}
