package store

import (
	"bufio"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
)

// Damaged commitlog ranges (see "Damage" in doc.go).
//
// A range is a run of commitlog bytes, inside one segment, that failed the
// record checks and stays on disk: the bytes of one or more records (or of
// the blank at a segment end) between two valid record boundaries. Nothing
// in a range is served to a consumer or replicated as it is. The set is
// loaded from the report file at Open, grows when recovery, a read or
// replication finds damage, and is replaced, never modified, so that the
// read path looks it up without a lock.

// Damage kinds, as written in the report file.
const (
	DamageSkipped = "skipped" // recovery found it and kept the valid records after it
	DamageCut     = "cut"     // recovery cut it with the torn tail (nothing valid after it); not kept
	DamageRead    = "read"    // a read (pull, lookup, replication, queue check) found it
	DamageFiller  = "filler"  // replica: the master's stand-in for a range damaged there
)

// DamageLogFile is the report file under the store root: one line per
// range, appended and fsynced when the range is found.
const DamageLogFile = "damage.log"

// DamagedRange is one damaged commitlog range as Store.Damaged reports it.
type DamagedRange struct {
	Offset int64  // commitlog offset of the first damaged byte (a record boundary)
	Length int64  // bytes up to the next valid record boundary
	Kind   string // DamageSkipped, DamageRead or DamageFiller
}

// damagedRange is [start, end) within one segment.
type damagedRange struct {
	start, end int64
	kind       string
}

func (r damagedRange) len() int64 { return r.end - r.start }

// noDamage is the "next range" of a position with no range after it.
var noDamage = damagedRange{start: math.MaxInt64, end: math.MaxInt64}

// damageSet holds the known ranges, sorted by start and disjoint.
type damageSet struct {
	path    string
	segSize int64
	log     *slog.Logger
	mu      sync.Mutex // serialises add and the report file
	ranges  atomic.Pointer[[]damagedRange]
	count   atomic.Int64 // entries refused because of damage (reads, replication)

	fillerMu sync.Mutex
	fillers  map[int64]*filler // replication's fillers, by range start
}

func newDamageSet(path string, segSize int, log *slog.Logger) *damageSet {
	d := &damageSet{path: path, segSize: int64(segSize), log: log}
	d.ranges.Store(&[]damagedRange{})
	return d
}

func (d *damageSet) list() []damagedRange { return *d.ranges.Load() }

// empty is the read path's fast check.
func (d *damageSet) empty() bool { return len(*d.ranges.Load()) == 0 }

// find returns the range holding off.
func (d *damageSet) find(off int64) (damagedRange, bool) {
	rs := *d.ranges.Load()
	i := sort.Search(len(rs), func(i int) bool { return rs[i].end > off })
	if i < len(rs) && rs[i].start <= off {
		return rs[i], true
	}
	return damagedRange{}, false
}

// next returns the first range ending after off (noDamage if none).
func (d *damageSet) next(off int64) damagedRange {
	rs := *d.ranges.Load()
	i := sort.Search(len(rs), func(i int) bool { return rs[i].end > off })
	if i < len(rs) {
		return rs[i]
	}
	return noDamage
}

// add records r in memory and reports whether it was new (not already
// covered by a known range). Overlapping ranges are merged. d.mu held.
func (d *damageSet) addLocked(r damagedRange) bool {
	old := *d.ranges.Load()
	for _, o := range old {
		if o.start <= r.start && r.end <= o.end {
			return false
		}
	}
	out := make([]damagedRange, 0, len(old)+1)
	for _, o := range old {
		if o.end < r.start || r.end < o.start {
			out = append(out, o)
			continue
		}
		r.start, r.end = min(r.start, o.start), max(r.end, o.end)
	}
	out = append(out, r)
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	d.ranges.Store(&out)
	return true
}

// replace sets the known ranges (Open, before any reader).
func (d *damageSet) replace(rs []damagedRange) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].start < rs[j].start })
	d.ranges.Store(&rs)
}

// report adds r (unless kind is DamageCut, which keeps nothing) and, if
// it is new, logs one WARN line and appends the same line to the report
// file. what describes the messages in the range, where readable.
func (d *damageSet) report(r damagedRange, what string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r.kind != DamageCut && !d.addLocked(r) {
		return
	}
	line := fmt.Sprintf("%s %d %d segment=%s %s", r.kind, r.start, r.len(), mmapfile.Name(r.start-r.start%d.segSize), what)
	if r.kind != DamageCut { // the cut is logged by recovery, with what it dropped
		d.log.Warn("damaged commitlog range", "range", describeRange(r, what), "kind", r.kind,
			"offset", r.start, "bytes", r.len())
	}
	if err := appendLine(d.path, time.Now().UTC().Format(time.RFC3339)+" "+line); err != nil {
		d.log.Warn("cannot write the damage log", "path", d.path, "err", err)
	}
}

func describeRange(r damagedRange, what string) string {
	verb := map[string]string{
		DamageSkipped: "skipped by recovery, the records after it kept",
		DamageCut:     "cut with the torn tail",
		DamageRead:    "found by a read, never served",
		DamageFiller:  "replaced by the master's filler",
	}[r.kind]
	return fmt.Sprintf("[%d, %d) (%d bytes) %s: %s", r.start, r.end, r.len(), verb, what)
}

// appendLine appends line to path and fsyncs it (and the directory when it
// created the file).
func appendLine(path, line string) error {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.WriteString(line + "\n"); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && os.IsNotExist(statErr) {
		err = mmapfile.SyncDir(filepath.Dir(path))
	}
	return err
}

// readDamageLog returns the ranges the report file names, except cut ones
// (their bytes are gone). Lines it cannot parse are ignored: the file is a
// report, and may itself be damaged.
func readDamageLog(path string) []damagedRange {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []damagedRange
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// <time> <kind> <offset> <length> ...
		fs := strings.Fields(sc.Text())
		if len(fs) < 4 {
			continue
		}
		off, err1 := strconv.ParseInt(fs[2], 10, 64)
		n, err2 := strconv.ParseInt(fs[3], 10, 64)
		kind := fs[1]
		if err1 != nil || err2 != nil || off < 0 || n <= 0 || off > math.MaxInt64-n {
			continue
		}
		switch kind {
		case DamageSkipped, DamageRead, DamageFiller:
			out = append(out, damagedRange{start: off, end: off + n, kind: kind})
		}
	}
	return out
}

// Damaged lists the known damaged commitlog ranges, oldest first.
func (s *Store) Damaged() []DamagedRange {
	var out []DamagedRange
	for _, r := range s.damage.list() {
		out = append(out, DamagedRange{Offset: r.start, Length: r.len(), Kind: r.kind})
	}
	return out
}

// DamagedReads is how many times a read or replication refused a record
// because it is damaged or its consume-queue entry is a gap.
func (s *Store) DamagedReads() int64 { return s.damage.count.Load() }
