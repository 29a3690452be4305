// Package store is the broker's message store, on-disk compatible with
// RocketMQ 4.x: commitlog, consume queues, index, checkpoint and abort
// marker under Config.StorePathRootDir.
//
// # Files
//
//	<root>/commitlog/<20-digit start offset>     commitlog segments (storePathCommitLog)
//	<root>/consumequeue/<topic>/<qid>/<20-digit>  consume-queue files, named by byte offset
//	<root>/index/<yyyyMMddHHmmssSSS>              hash index files, named by creation time
//	<root>/checkpoint                             how far each part is durable
//	<root>/abort                                  present while the store is open
//	<root>/consumequeue/.spare-<n>.tmp            ready consume-queue files (see cqspare.go)
//
// Every data file is created at its full size (fallocate, so a full disk
// fails at creation and never while writing into the mapping) under a
// ".tmp" name, synced, renamed, and the directory fsynced. Leftover ".tmp"
// files are removed at open. Consume-queue files are the exception: the
// dispatcher must not wait for a disk round trip before a new queue's first
// message is readable, so it takes a spare file made (unsynced) in the
// background and moves it to its name afterwards; the logics flush syncs the
// file and its directories before a checkpoint claims any entry in it.
//
// # Commitlog
//
// Segments of MappedFileSizeCommitLog bytes (1 GiB) are memory-mapped and
// hold records back to back in the layout documented in package
// pkg/message (total size, magic -626843481, body CRC, queue id, flag,
// queue offset, physical offset, sysflag, born time and host, store time
// and host, reconsume times, prepared transaction offset, body, topic,
// properties; big endian). A record never spans segments: when a record
// plus 8 bytes does not fit, the rest of the segment is a blank record
// (total size = the remaining bytes, magic -875286124) and the record goes
// to the next segment. Zero bytes follow the last record.
//
// # Consume queue
//
// One entry of 20 bytes per message (big endian): commitlog offset (8),
// record size (4), tag code (8). The tag code is Java's String.hashCode of
// the TAGS property (0 without tags), or for SCHEDULE_TOPIC_XXXX the
// delivery time in ms (store time + the DELAY level's duration). Entry n of
// a queue is at byte n*20 of the queue's file sequence; files hold
// MappedFileSizeConsumeQueue/20 entries (300,000). An entry whose size is 0
// is empty; the first empty entry is the queue's end. When a queue's first
// entry is not the first of its file (a slave starting from its master's
// newest segment), the slots before it hold Java's pre-blank entry (offset
// 0, size 2^31-1, tag code 0) and the queue's min offset is that first
// entry. Transaction PREPARED and ROLLBACK records get no entry (and are
// stored with queue offset 0).
//
// # Index
//
// A file is a 40-byte header (begin and end store timestamp, begin and end
// commitlog offset: int64 each; used slot count, entry count: int32 each),
// MaxHashSlotNum 4-byte slots, then MaxIndexNum 20-byte entries (key hash
// int32, commitlog offset int64, seconds since the begin timestamp int32,
// previous entry number int32). Entry 0 is unused so 0 means "none"; a slot
// holds the number of the newest entry with that hash modulo the slot
// count. Keys are "topic#key" for the UNIQ_KEY property and each
// space-separated KEYS value; the hash is |Java String.hashCode|. Entries
// are appended in commitlog order.
//
// # Checkpoint and abort marker
//
// The checkpoint is 48 bytes: magic "RMQCKPT1", then the durable commitlog
// offset, the commitlog offset up to which consume queues are durable, the
// same for the index, the wall-clock ms of writing (int64 each, big
// endian), and the IEEE CRC32 of the preceding 40 bytes. It is replaced
// atomically (temp file, fsync, rename, fsync dir), always after the data
// it describes was synced. The abort file is created when Open finishes
// recovery and removed by a clean Close after the final flush and
// checkpoint; finding it at Open means the last run died.
//
// # Invariants
//
//   - One writer (Store.putMu). Store.cl.wrote is the end of the last
//     complete record and moves only after the record bytes are in the
//     mapping, so readers never see a partial record.
//   - dispatched <= wrote; every consume-queue and index entry points at a
//     complete record below dispatched.
//   - Queue offsets of a queue are dense; the consume queue is written in
//     commitlog order, so its commitlog offsets ascend.
//   - flushed <= wrote; under SYNC_FLUSH an append is acknowledged PUT_OK
//     only when flushed covers it (group commit: one fdatasync for all
//     appenders waiting at that moment).
//   - A mapped file is unmapped only when its reference count drops to
//     zero; readers hold a reference for as long as they use slices of it,
//     and retention skips files that are held.
//
// # Recovery
//
// A clean start (no abort file, valid checkpoint, everything below the
// recorded tail dispatched, zeros after it and room for a blank record
// before the segment's end) trusts the checkpoint and scans nothing. An
// unclean start scans the commitlog from the segment holding the oldest
// durable point of the checkpoint (everything, without one), verifying
// magic, sizes, physical offsets, body CRC, the room every record leaves
// for a blank, and (the CRC covers only the body) that the topic is one
// directory name and the queue offset fits a consume queue; it cuts at the
// first bad record (zeroing the rest of that segment and deleting later
// ones), truncates consume-queue and index entries at or past the
// checkpoint's logics offset (or the cut, whichever is lower), and
// re-dispatches from there.
package store
