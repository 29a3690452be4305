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
//	<root>/damage.log                             damaged commitlog ranges found (see Damage)
//	<root>/consumequeue/.spare-<n>.tmp            ready consume-queue files (see cqspare.go)
//
// Every data file is created at its full size (fallocate, so a full disk
// fails at creation and never while writing into the mapping) under a
// ".tmp" name, synced, renamed, and the directory fsynced. Leftover ".tmp"
// files are removed at open, and Open warns when the volume cannot hold one
// more commitlog segment and index file. Consume-queue files are the
// exception: the dispatcher must not wait for a disk round trip before a new
// queue's first message is readable, so it takes a spare file made
// (unsynced) in the background and moves it to its name afterwards; the
// logics flush syncs the file and its directories before a checkpoint claims
// any entry in it.
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
// A gap entry stands for a queue offset whose record is not readable: it
// was in a damaged range, or a replica never had it. It points at the
// damaged record itself when its header could still be read, else at the
// damaged range (its start, and its length as size), or, when there is no
// such range between the queue's previous entry and its next record, at
// that next record (whose queue offset is then not the entry's). Either way
// it is not empty, keeps commitlog order, and reads as a missing message.
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
//     mapping (stored into it, or under SYNC_FLUSH written with pwrite, which
//     the mapping shares a page cache with), so readers never see a partial
//     record.
//   - dispatched <= wrote; every consume-queue and index entry points at a
//     complete record below dispatched, or (consume queue) is a gap entry.
//   - Queue offsets of a queue are dense; the consume queue is written in
//     commitlog order, so its commitlog offsets ascend.
//   - flushed <= wrote; under SYNC_FLUSH an append is acknowledged PUT_OK
//     only when flushed covers it (group commit: one fdatasync for all
//     appenders waiting at that moment).
//   - Nothing but the writer writes at or below the tail: under SYNC_FLUSH the
//     bytes past it are zeroed ahead of the writer (commitLog.zero: written
//     extents make a group commit's fdatasync cheaper), only above what a
//     writer claimed (commitLog.claim).
//   - A mapped file is unmapped only when its reference count drops to
//     zero; readers hold a reference for as long as they use slices of it,
//     and retention skips files that are held.
//
// # Recovery
//
// A clean start (no abort file, valid checkpoint, everything below the
// recorded tail dispatched, zeros after it and room for a blank record
// before the segment's end) trusts the checkpoint and scans no commitlog. An unclean start
// scans the commitlog from the segment holding the oldest durable point of
// the checkpoint (everything, without one), verifying magic, sizes,
// physical offsets, body CRC and the room every record leaves for a blank
// (a record whose topic or queue offset no consume queue can hold passes:
// dispatch skips it, see queueable). A record that fails is skipped when a
// valid record or segment-end blank follows it (found by its magic, then
// every check, including a physical offset field equal to its position),
// looking as far as the furthest offset the checkpoint, a consume queue or
// the index points at, and at least 16 MiB: the damaged range stays on disk
// and is reported (see Damage). With nothing valid after it, it is the torn
// tail, and recovery cuts there (zeroing the rest of that segment and
// deleting later ones) - unless it is a whole record (it frames, with its
// magic or total size mended if need be, at its own physical offset): a
// torn write leaves zeros that do not frame, so that record was written,
// and perhaps consumed; it is kept as a range and its queue offset is not
// given again. Consume-queue and index entries at or past the
// checkpoint's logics offset (or the cut, whichever is lower) are then
// truncated. At every start, clean or not, each consume queue's tail is
// checked: a queue that had a file cut short on disk (Open extends it with
// zeros) loses the entries from the first one not wholly there, and one
// whose last entry does not point at a valid record of its topic, queue and
// queue offset (with its tag code) loses that entry, until the last one
// does; such a queue is rebuilt from the commitlog from its last good
// entry's record on. Then everything is re-dispatched from the logics
// offset.
//
// # Damage
//
// A damaged range is a run of commitlog bytes inside one segment, between
// two record boundaries, that failed the record checks: a record whose body
// CRC, magic, size fields or physical offset is wrong, several such
// records, or a segment-end blank. The body CRC covers the body only, as in
// RocketMQ 4.x; reads also check the topic, queue id and queue offset
// against the consume-queue entry, so a record damaged there is not served
// in place of another (but is not recognised as damage either). Ranges are
// found by recovery (kind skipped), by a read that checks a record (kind
// read: pulls, lookups by offset or key, replication, the queue tail
// check) and, on a replica, by receiving a filler (kind filler). Each is
// logged once, as a WARN line, and appended to <root>/damage.log, fsynced:
//
//	<UTC time, RFC 3339> <kind> <offset> <length> segment=<20 digits> <what was there>
//
// where "what was there" names each record whose header is readable
// (topic/queue@queue offset, CRC state) and counts the bytes that are not.
// The torn tail recovery cuts is written there too, as kind cut. At Open
// the kept ranges are read back, except those outside the stored segments,
// at or past the tail, or no longer failing their checks (the files were
// replaced). Invariants:
//
//   - No read hands out a record of a known range, nor one that fails its
//     checks (the body CRC under checkCRCOnRead, the default). A pull skips
//     its entry as Java skips a removed message: MESSAGE_WAS_REMOVING when
//     nothing else was found, the next begin offset past it.
//   - The dispatcher passes known ranges. A record in one whose header is
//     readable and whose queue offset is its queue's next gets its entry,
//     pointing at it; queue offsets a range held otherwise get gap entries
//     when the queue's next record comes. Queue offsets stay dense, and none
//     is given twice (a consumer may have taken it before the damage). A
//     damaged header never creates a queue or moves one forward.
//   - Replication sends a range as a filler of the same length (filler.go):
//     the replica keeps every offset and every other byte of the master.
package store
