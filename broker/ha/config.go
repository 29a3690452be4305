package ha

import (
	"errors"
	"time"
)

// Defaults, as in RocketMQ 4.9.7's MessageStoreConfig.
const (
	DefaultHeartbeatInterval    = 5 * time.Second  // haSendHeartbeatInterval
	DefaultHousekeepingInterval = 20 * time.Second // haHousekeepingInterval
	DefaultTransferBatchSize    = 32 << 10         // haTransferBatchSize
	DefaultSlaveFallbehindMax   = 256 << 20        // haSlaveFallbehindMax
	DefaultSlaveTimeout         = 3 * time.Second  // slaveTimeout (SYNC_MASTER wait)

	// DefaultMaxFrameBody bounds a frame body a slave accepts: 4.9.7's slave
	// reads into a 4 MiB buffer, so no working master sends more.
	DefaultMaxFrameBody = 4<<20 - headerSize

	headerSize = 8 + 4 // frame header: offset, size
	reportSize = 8     // slave report: max offset
)

// Errors a SYNC_MASTER send maps to response codes.
var (
	// ErrSlaveNotAvailable: no slave connected, or the best one lags more
	// than SlaveFallbehindMax (SLAVE_NOT_AVAILABLE, 11).
	ErrSlaveNotAvailable = errors.New("ha: slave not available")
	// ErrSlaveTimeout: no slave acknowledged in time (FLUSH_SLAVE_TIMEOUT, 12).
	ErrSlaveTimeout = errors.New("ha: wait for slave timed out")
	// ErrClosed: the Server or Client was closed.
	ErrClosed = errors.New("ha: closed")
)
