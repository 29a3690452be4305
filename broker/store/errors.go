package store

import "errors"

// Sentinel errors; test with errors.Is. Returned errors wrap them with
// context.
var (
	ErrConfig           = errors.New("store: bad config")
	ErrClosed           = errors.New("store: closed")
	ErrMessageTooLarge  = errors.New("store: message too large")
	ErrBadMessage       = errors.New("store: bad message")
	ErrBadTopic         = errors.New("store: illegal topic name") // also wrapped by ErrBadMessage on a put
	ErrWriteFailed      = errors.New("store: write failed")       // sticky after an I/O error
	ErrCorrupt          = errors.New("store: corrupt data")
	ErrNotFound         = errors.New("store: not found")
	ErrOffsetMismatch   = errors.New("store: offset mismatch")
	ErrFlushDiskTimeout = errors.New("store: flush disk timeout")
)
