package message

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
)

// ErrBadMsgID reports an offsetMsgId that cannot be parsed.
var ErrBadMsgID = errors.New("message: bad offset message id")

// CreateOffsetMsgID builds the broker message id: store address (4 or 16
// bytes), port (4), commitlog offset (8), as upper-case hex.
func CreateOffsetMsgID(storeHost netip.AddrPort, physicalOffset int64) string {
	var b [28]byte
	n := putHost(b[:], storeHost)
	binary.BigEndian.PutUint64(b[n:], uint64(physicalOffset))
	// Upper-case hex written in place: every send answers with an id, and
	// hex.EncodeToString with strings.ToUpper were two allocations of it.
	const digits = "0123456789ABCDEF"
	var id [2 * len(b)]byte
	for i, c := range b[:n+8] {
		id[2*i], id[2*i+1] = digits[c>>4], digits[c&0xf]
	}
	return string(id[:2*(n+8)])
}

// ParseOffsetMsgID decodes an id made by CreateOffsetMsgID (32 hex digits
// for IPv4, 56 for IPv6).
func ParseOffsetMsgID(id string) (netip.AddrPort, int64, error) {
	if len(id) != 32 && len(id) != 56 {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: length %d", ErrBadMsgID, len(id))
	}
	b, err := hex.DecodeString(id)
	if err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %v", ErrBadMsgID, err)
	}
	v6 := len(b) == 28
	host := getHost(b, v6)
	off := int64(binary.BigEndian.Uint64(b[hostLen(v6):]))
	return host, off, nil
}
