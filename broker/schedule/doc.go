// Package schedule delivers delayed messages (RocketMQ's
// ScheduleMessageService).
//
// # Delay levels
//
// Levels come from the store's messageDelayLevel (store.Config,
// default "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h");
// level n is the n-th duration. The service asks the store for them
// (DeliverTime, MaxDelayLevel) so that the store's consume-queue tag slot
// and the service always agree.
//
// # Send path
//
// Before PutMessage the broker calls ToSchedule: a message whose DELAY
// property is > 0 (and that is not a PREPARED or ROLLBACK transaction
// message) is moved to SCHEDULE_TOPIC_XXXX, queue level-1, with its topic
// and queue kept in REAL_TOPIC / REAL_QID. Levels above the highest are
// clamped (the DELAY property is rewritten). The store then puts the
// delivery time (store time + level duration) into the consume-queue tag
// slot of the entry.
//
// # Delivery
//
// One goroutine per level walks queue level-1 from its delay offset. When
// the head entry is due (tag slot <= now; a tag slot more than one level
// duration in the future, after a clock jump, counts as due now) the
// message is read, restored to its real topic and queue with its
// properties unchanged (DELAY, WAIT, REAL_TOPIC and REAL_QID included: the
// string 4.9.7's messageTimeup stores) and put again. Otherwise the goroutine sleeps on a
// timer until the head is due, or until the store reports a new entry of
// its queue (OnArrival). A failed put is retried after RetryInterval.
//
// # Delay offsets
//
// <storePathRootDir>/config/delayOffset.json, Java's format:
//
//	{"offsetTable":{1:12,2:0}}
//
// keys are delay levels (bare integers, as fastjson writes them; quoted keys
// are read too), values the next queue offset to deliver. The file is
// replaced atomically (temp file, fsync, previous copy kept as .bak,
// rename, fsync of the folder); when it is missing or unreadable the .bak
// is used.
//
// Durability: an offset is written only once the re-put copies of all the
// messages before it are flushed (store FlushedOffset), checked every
// PersistInterval. So a crash never loses a due message; it can deliver
// again the messages re-put in the last PersistInterval plus the store's
// flush interval before the crash (at-least-once, as RocketMQ, whose window
// is 10 s). A clean Close writes the exact offsets: close the Service
// before the store, which flushes everything on its own Close, and nothing
// is delivered twice across the restart.
package schedule
