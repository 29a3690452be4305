package store

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/names"
)

// Verify checks the store's invariants the expensive way: every consume
// queue entry in [min, max) points at a complete record below the
// dispatched offset whose CRC, topic, queue id and queue offset match, or is
// a gap (its record is in a known damaged range, or it points at the
// queue's next record); queue offsets are dense. Meant for tests and
// offline checks; it reads everything. Damage it finds is an error even if
// a read would now report and skip it.
func (s *Store) Verify() error {
	dispatched := s.dispatched.Load()
	minPhy := s.cl.minOffset()
	for _, cq := range s.allQueues() {
		min, max := cq.minOffset.Load(), cq.maxOffset.Load()
		if min > max {
			return fmt.Errorf("%w: queue %s/%d min %d > max %d", ErrCorrupt, cq.topic, cq.queueID, min, max)
		}
		for off := min; off < max; off++ {
			e, ok := cq.entry(off)
			if !ok || e.size <= 0 {
				return fmt.Errorf("%w: queue %s/%d entry %d missing", ErrCorrupt, cq.topic, cq.queueID, off)
			}
			if e.phy < minPhy {
				continue // record removed by retention; the entry is below the new minimum
			}
			if e.phy+int64(e.size) > dispatched {
				return fmt.Errorf("%w: queue %s/%d entry %d points past dispatch (%d)", ErrCorrupt, cq.topic, cq.queueID, off, dispatched)
			}
			seg, rec := s.cl.read(e.phy, int(e.size))
			if seg == nil {
				return fmt.Errorf("%w: queue %s/%d entry %d: commitlog %d (%d bytes) unreadable", ErrCorrupt, cq.topic, cq.queueID, off, e.phy, e.size)
			}
			c, err := s.checkEntry(cq, off, e, rec, true)
			seg.Release()
			switch c {
			case entryDamaged:
				return fmt.Errorf("%w: queue %s/%d entry %d: damaged record at %d not known: %w", ErrCorrupt, cq.topic, cq.queueID, off, e.phy, err)
			case entryWrong:
				return fmt.Errorf("%w: queue %s/%d entry %d: %w", ErrCorrupt, cq.topic, cq.queueID, off, err)
			}
		}
	}
	return nil
}

// FileReport is what CheckFiles found in a stopped store.
type FileReport struct {
	Problems []string // damage, one line each
	Notes    []string // facts that are not damage
	Records  int      // valid commitlog records
	Queues   int      // consume queues checked
	Indexes  int      // index files checked
}

// Clean reports whether nothing is damaged.
func (r *FileReport) Clean() bool { return len(r.Problems) == 0 }

func (r *FileReport) problem(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

func (r *FileReport) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// maxProblemsPerFile bounds the lines one queue or index file adds; the
// rest are counted.
const maxProblemsPerFile = 10

// CheckFiles checks the files of a stopped store under cfg without
// changing anything (files are mapped read only; nothing is recovered,
// extended or removed), the way mqadmin-style tools inspect a store: every
// commitlog record (framing, physical offset, body CRC, with the resync
// recovery does: each damaged range is listed, and a torn tail), every
// consume-queue entry (dense, in commitlog order, pointing at a valid
// record of its topic, queue and queue offset or being a gap, and no record
// of the queue in the commitlog after its last entry), every index entry
// (pointing at a record start holding its key), file sizes and the
// checkpoint. Sizes come from cfg (mappedFileSizeCommitLog,
// mappedFileSizeConsumeQueue, maxHashSlotNum, maxIndexNum). An error means
// the store could not be checked at all.
func CheckFiles(cfg Config) (*FileReport, error) {
	rep := &FileReport{}
	if _, err := os.Stat(cfg.StorePathRootDir); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	unclean := fileExists(cfg.abortPath())
	if unclean {
		rep.note("abort marker present: the store is open, or its last run did not stop cleanly (the next start recovers)")
	}
	switch _, ok := readCheckpoint(cfg.checkpointPath()); {
	case ok:
	case fileExists(cfg.checkpointPath()):
		rep.problem("checkpoint %s is damaged (the next start scans the whole commitlog)", cfg.checkpointPath())
	default:
		rep.note("no checkpoint (the next start scans the whole commitlog)")
	}
	cl, err := openCommitLogReadOnly(cfg, rep)
	if err != nil {
		return nil, err
	}
	defer cl.close()
	queues, err := listQueuesReadOnly(cfg, rep)
	if err != nil {
		return nil, err
	}
	known := newDamageSet(filepath.Join(cfg.StorePathRootDir, DamageLogFile), cfg.MappedFileSizeCommitLog, cfg.logger())
	known.replace(readDamageLog(known.path))
	damaged, tail := scanReadOnly(cfg, cl, known, queues, unclean, rep)
	for _, q := range queues {
		checkQueueFiles(cfg, cl, damaged, tail, q, unclean, rep)
	}
	checkIndexFiles(cfg, cl, tail, rep)
	return rep, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// listReadOnly is listNumbered without removing anything.
func listReadOnly(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, e := range ents {
		if len(e.Name()) != 20 || e.IsDir() {
			continue
		}
		if n, err := strconv.ParseInt(e.Name(), 10, 64); err == nil {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// openCommitLogReadOnly maps every segment read only, reporting names out
// of sequence and sizes other than the segment size.
func openCommitLogReadOnly(cfg Config, rep *FileReport) (*commitLog, error) {
	dir := cfg.commitLogDir()
	size := int64(cfg.MappedFileSizeCommitLog)
	cl := &commitLog{dir: dir, segSize: cfg.MappedFileSizeCommitLog}
	names, err := listReadOnly(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("store: commitlog: %w", err)
	}
	for i, start := range names {
		if start%size != 0 || (i > 0 && start != names[i-1]+size) {
			rep.problem("commitlog: segment %020d out of sequence (segment size %d): later segments not checked", start, size)
			break
		}
		f, err := mmapfile.OpenReadOnly(filepath.Join(dir, mmapfile.Name(start)), start)
		if err != nil {
			cl.close()
			return nil, fmt.Errorf("store: commitlog: %w", err)
		}
		if f.OnDisk != size {
			rep.problem("commitlog: segment %020d is %d bytes, expected %d", start, f.OnDisk, size)
		}
		cl.segs = append(cl.segs, f)
	}
	return cl, nil
}

// queueFiles is one consume queue on disk.
type queueFiles struct {
	topic string
	qid   int32
	dir   string
	files []int64
	last  cqEntry // its last entry, if any (size > 0)
	after int     // records of the queue in the commitlog after last
}

func listQueuesReadOnly(cfg Config, rep *FileReport) ([]*queueFiles, error) {
	root := cfg.consumeQueueDir()
	topics, err := os.ReadDir(root)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: consume queues: %w", err)
	}
	var out []*queueFiles
	for _, t := range topics {
		if !t.IsDir() || names.Topic(t.Name()) != nil {
			continue
		}
		qs, err := os.ReadDir(filepath.Join(root, t.Name()))
		if err != nil {
			return nil, fmt.Errorf("store: consume queues: %w", err)
		}
		for _, q := range qs {
			qid, err := strconv.ParseInt(q.Name(), 10, 32)
			if err != nil || !q.IsDir() {
				continue
			}
			qf := &queueFiles{topic: t.Name(), qid: int32(qid), dir: filepath.Join(root, t.Name(), q.Name())}
			if qf.files, err = listReadOnly(qf.dir); err != nil {
				return nil, fmt.Errorf("store: consume queues: %w", err)
			}
			if n := len(qf.files); n > 0 {
				data, err := os.ReadFile(filepath.Join(qf.dir, mmapfile.Name(qf.files[n-1])))
				if err != nil {
					return nil, fmt.Errorf("store: consume queues: %w", err)
				}
				for p := 0; p+CQEntrySize <= len(data); p += CQEntrySize {
					e := getEntry(data[p:])
					if e.size <= 0 {
						break
					}
					qf.last = e
				}
			}
			out = append(out, qf)
		}
	}
	rep.Queues = len(out)
	return out, nil
}

// scanReadOnly checks every commitlog record, lists damaged ranges (known
// ones included) and the torn tail, and counts each queue's records after
// its last entry. It returns the ranges and the end of the last valid
// record.
func scanReadOnly(cfg Config, cl *commitLog, known *damageSet, queues []*queueFiles, unclean bool, rep *FileReport) (*damageSet, int64) {
	if len(cl.segs) == 0 {
		return known, 0
	}
	byQueue := map[cqKey]*queueFiles{}
	for _, q := range queues {
		byQueue[cqKey{q.topic, q.qid}] = q
	}
	size := int64(cl.segSize)
	first := cl.segs[0].Start
	last := cl.segs[len(cl.segs)-1]
	reach := segEnd(last)
	found := newDamageSet("", cl.segSize, slog.New(slog.DiscardHandler)) // reported by the Report
	for _, r := range known.list() {
		if r.start >= first && r.end <= reach {
			found.addLocked(r)
			rep.problem("commitlog: damaged range [%d, %d) (%d bytes), reported before (%s): %s", r.start, r.end, r.len(), r.kind, cl.describeDamage(r))
		}
	}
	bad := found.next(first)
	pos := first
	tail := first
	for pos < reach {
		i := int((pos - first) / size)
		seg := cl.segs[i]
		end := segEnd(seg)
		for pos < end {
			if pos >= bad.start {
				pos = bad.end
				bad = found.next(pos)
				continue
			}
			if end-pos >= message.MinBlankLength && blankAt(seg, pos) {
				pos = end
				break
			}
			if end-pos >= message.MinBlankLength {
				if v, err := checkRecordAt(seg, pos); err == nil {
					rep.Records++
					tt := message.TransactionType(v.SysFlag)
					if tt == message.TransactionNotType || tt == message.TransactionCommitType {
						if q := byQueue[cqKey{string(v.Topic()), v.QueueID()}]; q != nil && pos > q.last.phy && q.last.size > 0 {
							q.after++
						}
					}
					pos += int64(v.Size())
					tail = pos
					continue
				}
			}
			next, ok := cl.resync(pos, reach)
			if !ok {
				if n := completeAt(seg, pos, cfg.MaxMessageSize); n > 0 {
					r := damagedRange{start: pos, end: pos + n, kind: DamageSkipped}
					found.addLocked(r)
					rep.problem("commitlog: damaged range [%d, %d) (%d bytes), the last record: %s", r.start, r.end, r.len(), describeIn(seg, r))
					pos += n
					tail = pos
					continue
				}
				// After a crash a torn tail is expected (a record being
				// written, never acknowledged); after a clean stop it is not.
				report := rep.problem
				if unclean {
					report = rep.note
				}
				if used := lastNonZero(seg.Data[pos-seg.Start:]) + 1; used > 0 {
					r := damagedRange{start: pos, end: pos + int64(used)}
					report("commitlog: torn tail at %d: %d bytes after the last valid record (the next start cuts them): %s", pos, used, describeIn(seg, r))
				}
				for _, s := range cl.segs[i+1:] {
					if n := lastNonZero(s.Data) + 1; n > 0 {
						report("commitlog: segment %020d holds %d bytes after the torn tail", s.Start, n)
					}
				}
				return found, tail
			}
			for _, r := range splitRange(pos, next, size, DamageSkipped) {
				found.addLocked(r)
				rep.problem("commitlog: damaged range [%d, %d) (%d bytes): %s", r.start, r.end, r.len(), cl.describeDamage(r))
			}
			pos = next
			bad = found.next(pos)
			break
		}
		if pos >= end && pos < seg.Start+size {
			pos = seg.Start + size // a short segment: the rest is missing
		}
	}
	return found, tail
}

// checkQueueFiles checks one consume queue's files and entries.
func checkQueueFiles(cfg Config, cl *commitLog, damaged *damageSet, tail int64, q *queueFiles, unclean bool, rep *FileReport) {
	name := fmt.Sprintf("consumequeue %s/%d", q.topic, q.qid)
	fileSize := int64(cfg.MappedFileSizeConsumeQueue)
	minPhy := cl.minOffset()
	n, more := 0, 0
	problem := func(format string, args ...any) {
		if n++; n <= maxProblemsPerFile {
			rep.problem(name+": "+format, args...)
		} else {
			more++
		}
	}
	cq := &consumeQueue{topic: q.topic, queueID: q.qid}
	ended := false
	var prevPhy int64 = -1
	for i, start := range q.files {
		if start%fileSize != 0 {
			problem("file %020d misaligned (file size %d)", start, fileSize)
			continue
		}
		if i > 0 && start != q.files[i-1]+fileSize {
			problem("files %020d to %020d missing", q.files[i-1]+fileSize, start-fileSize)
		}
		data, err := os.ReadFile(filepath.Join(q.dir, mmapfile.Name(start)))
		if err != nil {
			problem("%v", err)
			continue
		}
		if int64(len(data)) != fileSize {
			problem("file %020d is %d bytes, expected %d: entries from queue offset %d on are lost",
				start, len(data), fileSize, (start+int64(len(data))-int64(len(data))%CQEntrySize)/CQEntrySize)
		}
		for p := 0; p+CQEntrySize <= len(data); p += CQEntrySize {
			e := getEntry(data[p:])
			qoff := (start + int64(p)) / CQEntrySize
			if e.size <= 0 {
				ended = true
				continue
			}
			if ended {
				problem("entry %d follows empty entries (a hole in the queue)", qoff)
				ended = false
			}
			if e.phy < prevPhy {
				problem("entry %d points at %d, before the entry before it (%d)", qoff, e.phy, prevPhy)
			}
			prevPhy = e.phy
			if e.phy < minPhy {
				continue // removed by retention
			}
			if e.phy+int64(e.size) > tail {
				problem("entry %d points at [%d, %d), past the last valid record (%d)", qoff, e.phy, e.phy+int64(e.size), tail)
				continue
			}
			if _, ok := damaged.find(e.phy); ok {
				continue // a gap: its record is damaged
			}
			seg, rec := cl.readAt(e.phy, int(e.size))
			if seg == nil {
				problem("entry %d points at [%d, %d), outside the commitlog", qoff, e.phy, e.phy+int64(e.size))
				continue
			}
			v, err := message.ParseRecord(rec)
			switch {
			case err != nil || v.Size() != len(rec) || v.PhysicalOffset() != e.phy:
				problem("entry %d points at [%d, %d), which is not a record", qoff, e.phy, e.phy+int64(e.size))
			case string(v.Topic()) != cq.topic || v.QueueID() != cq.queueID:
				problem("entry %d points at a record of %q/%d", qoff, v.Topic(), v.QueueID())
			case v.QueueOffset() < qoff:
				problem("entry %d points at the record of queue offset %d", qoff, v.QueueOffset())
			case !v.CheckCRC():
				problem("entry %d points at a record whose body CRC fails", qoff)
			}
			seg.Release()
		}
	}
	if q.after > 0 && unclean {
		rep.note("%s: %d records in the commitlog after its last entry (commitlog %d): the next start dispatches them", name, q.after, q.last.phy)
	} else if q.after > 0 {
		problem("%d records of the queue in the commitlog are after its last entry (commitlog %d): not dispatched", q.after, q.last.phy)
	}
	if more > 0 {
		rep.problem("%s: %d more problems", name, more)
	}
}

// readAt is read without the tail check (read-only logs have no tail).
func (cl *commitLog) readAt(off int64, size int) (*mmapfile.File, []byte) {
	seg := cl.segment(off)
	if seg == nil {
		return nil, nil
	}
	pos := int(off - seg.Start)
	if size <= 0 || pos+size > len(seg.Data) {
		seg.Release()
		return nil, nil
	}
	return seg, seg.Data[pos : pos+size]
}

// checkIndexFiles checks every index file: size, header, and each entry
// pointing at a record start whose topic#key hashes to the entry's hash.
func checkIndexFiles(cfg Config, cl *commitLog, tail int64, rep *FileReport) {
	dir := cfg.indexDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		if !os.IsNotExist(err) {
			rep.problem("index: %v", err)
		}
		return
	}
	want := int64(indexFileSize(cfg.MaxHashSlotNum, cfg.MaxIndexNum))
	minPhy := cl.minOffset()
	for _, e := range ents {
		if len(e.Name()) != 17 || e.IsDir() {
			continue
		}
		rep.Indexes++
		name := "index " + e.Name()
		f, err := mmapfile.OpenReadOnly(filepath.Join(dir, e.Name()), 0)
		if err != nil {
			rep.problem("%s: %v", name, err)
			continue
		}
		if f.OnDisk != want {
			rep.problem("%s: %d bytes, expected %d (maxHashSlotNum %d, maxIndexNum %d): not checked", name, f.OnDisk, want, cfg.MaxHashSlotNum, cfg.MaxIndexNum)
			f.Close()
			continue
		}
		x := &indexFile{f: f, slots: cfg.MaxHashSlotNum, entries: cfg.MaxIndexNum}
		h := x.header()
		if h.indexCount < 0 || int(h.indexCount) > x.entries || h.slotCount < 0 || int(h.slotCount) > x.slots {
			rep.problem("%s: header counts %d entries, %d slots (limits %d, %d)", name, h.indexCount, h.slotCount, x.entries, x.slots)
			f.Close()
			continue
		}
		n, more := 0, 0
		for i := int32(1); i < h.indexCount; i++ {
			ie := x.entry(i)
			msg := ""
			switch {
			case ie.prev < 0 || ie.prev >= i:
				msg = fmt.Sprintf("entry %d links to %d", i, ie.prev)
			case ie.phy < minPhy:
				continue // removed by retention
			case ie.phy >= tail:
				msg = fmt.Sprintf("entry %d points at %d, past the last valid record (%d)", i, ie.phy, tail)
			default:
				msg = indexEntryProblem(cl, i, ie)
			}
			if msg == "" {
				continue
			}
			if n++; n <= maxProblemsPerFile {
				rep.problem("%s: %s", name, msg)
			} else {
				more++
			}
		}
		if more > 0 {
			rep.problem("%s: %d more problems", name, more)
		}
		f.Close()
	}
}

// indexEntryProblem checks that entry n points at a record whose
// topic#key (UNIQ_KEY or one of KEYS) has the entry's hash.
func indexEntryProblem(cl *commitLog, n int32, ie indexEntry) string {
	seg := cl.segment(ie.phy)
	if seg == nil {
		return fmt.Sprintf("entry %d points at %d, outside the commitlog", n, ie.phy)
	}
	defer seg.Release()
	if !headerAt(seg, ie.phy) {
		return fmt.Sprintf("entry %d points at %d, which is not a record start", n, ie.phy)
	}
	v, err := message.ParseRecord(seg.Data[ie.phy-seg.Start:])
	if err != nil {
		return "" // a damaged record: the commitlog scan reports it
	}
	props, topic := v.Properties(), v.Topic()
	uniq, _ := message.LookupProperty(props, message.PropertyUniqClientMessageIDKey)
	if len(uniq) > 0 && keyHash(topic, uniq) == ie.hash {
		return ""
	}
	keys, _ := message.LookupProperty(props, message.PropertyKeys)
	for k := range message.KeysSeq(keys) {
		if keyHash(topic, k) == ie.hash {
			return ""
		}
	}
	return fmt.Sprintf("entry %d points at %d, a record of %q without a key of its hash", n, ie.phy, topic)
}
