package store

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ErrUnknownKey is returned by Config.Set for a key the store does not own.
var ErrUnknownKey = errors.New("store: unknown config key")

// Set applies one broker.conf key (Java MessageStoreConfig name) to c.
// Durations are milliseconds as in broker.conf. Both spellings of the
// segment size key are accepted. Unknown keys return ErrUnknownKey so the
// caller can try its own keys or warn.
func (c *Config) Set(key, value string) error {
	num := func(dst *int) error {
		n, err := strconv.Atoi(value)
		if err != nil {
			return fmt.Errorf("%w: %s=%q: %v", ErrConfig, key, value, err)
		}
		*dst = n
		return nil
	}
	ms := func(dst *time.Duration) error {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%w: %s=%q is not a millisecond count", ErrConfig, key, value)
		}
		*dst = time.Duration(n) * time.Millisecond
		return nil
	}
	switch key {
	case "storePathRootDir":
		c.StorePathRootDir = value
	case "storePathCommitLog":
		c.StorePathCommitLog = value
	case "mappedFileSizeCommitLog", "mapedFileSizeCommitLog":
		return num(&c.MappedFileSizeCommitLog)
	case "mappedFileSizeConsumeQueue", "mapedFileSizeConsumeQueue":
		return num(&c.MappedFileSizeConsumeQueue)
	case "flushDiskType":
		if value != AsyncFlush && value != SyncFlush {
			return fmt.Errorf("%w: flushDiskType=%q", ErrConfig, value)
		}
		c.FlushDiskType = value
	case "syncFlushTimeout":
		return ms(&c.SyncFlushTimeout)
	case "flushIntervalCommitLog":
		return ms(&c.FlushIntervalCommitLog)
	case "flushIntervalConsumeQueue":
		return ms(&c.FlushIntervalConsumeQueue)
	case "cleanResourceInterval":
		return ms(&c.CleanResourceInterval)
	case "fileReservedTime":
		return num(&c.FileReservedTime)
	case "deleteWhen":
		if _, err := parseDeleteWhen(value); err != nil {
			return err
		}
		c.DeleteWhen = value
	case "diskMaxUsedSpaceRatio":
		return num(&c.DiskMaxUsedSpaceRatio)
	case "maxMessageSize":
		return num(&c.MaxMessageSize)
	case "messageDelayLevel":
		if _, err := ParseDelayLevels(value); err != nil {
			return err
		}
		c.MessageDelayLevel = value
	case "maxHashSlotNum":
		return num(&c.MaxHashSlotNum)
	case "maxIndexNum":
		return num(&c.MaxIndexNum)
	case "messageIndexEnable":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("%w: %s=%q", ErrConfig, key, value)
		}
		c.MessageIndexEnable = b
	case "checkCRCOnRead":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("%w: %s=%q", ErrConfig, key, value)
		}
		c.CheckCRCOnRead = b
	case "accessMessageInMemoryMaxRatio":
		return num(&c.AccessMessageInMemoryMaxRatio)
	case "maxTransferBytesOnMessageInMemory":
		return num(&c.MaxTransferBytesOnMessageInMemory)
	case "maxTransferCountOnMessageInMemory":
		return num(&c.MaxTransferCountOnMessageInMemory)
	case "maxTransferBytesOnMessageInDisk":
		return num(&c.MaxTransferBytesOnMessageInDisk)
	case "maxTransferCountOnMessageInDisk":
		return num(&c.MaxTransferCountOnMessageInDisk)
	default:
		return fmt.Errorf("%w: %s", ErrUnknownKey, key)
	}
	return nil
}
