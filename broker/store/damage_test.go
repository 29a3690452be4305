package store

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// Damage tests: bytes flipped on disk in a stopped store, then a restart.
// Each checks that every other acknowledged message reads back intact, the
// damaged one is never served and the report file names it.

const damageQueues = 3

// damageBody is message i's body: long enough for several records per
// segment and three segments for 300 messages.
func damageBody(i int) string {
	return fmt.Sprintf("dmg-%04d|", i) + strings.Repeat(string(rune('a'+i%26)), 350+(i*13)%200)
}

type storedMsg struct {
	i   int
	res *PutResult
}

// fillDamageStore writes n messages over damageQueues queues with KEYS
// "k<i>" and returns them in commitlog order.
func fillDamageStore(t *testing.T, s *Store, n int) []storedMsg {
	t.Helper()
	var out []storedMsg
	for i := range n {
		r := mustPut(t, s, newMsg("DMG", int32(i%damageQueues), damageBody(i), map[string]string{"KEYS": fmt.Sprint("k", i)}))
		out = append(out, storedMsg{i, r})
	}
	waitDispatched(t, s)
	return out
}

// flipAt XORs the byte at commitlog offset off in the segment files.
func flipAt(t *testing.T, cfg Config, off int64) {
	t.Helper()
	seg := off - off%int64(cfg.MappedFileSizeCommitLog)
	f, err := os.OpenFile(filepath.Join(cfg.commitLogDir(), fmt.Sprintf("%020d", seg)), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off-seg); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5A
	if _, err := f.WriteAt(b, off-seg); err != nil {
		t.Fatal(err)
	}
}

// reportedOffsets returns the offsets the report file names, by kind.
func reportedOffsets(t *testing.T, cfg Config) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	f, err := os.Open(filepath.Join(cfg.StorePathRootDir, DamageLogFile))
	if errors.Is(err, os.ErrNotExist) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 4 {
			t.Fatalf("report line %q", sc.Text())
		}
		off, err := strconv.ParseInt(fs[2], 10, 64)
		if err != nil {
			t.Fatalf("report line %q: %v", sc.Text(), err)
		}
		out[off] = fs[1]
	}
	return out
}

// readAllBodies reads every queue through the consume queues and returns
// the message numbers found, failing on a duplicate or a body that is not
// the one message i was sent with.
func readAllBodies(t *testing.T, s *Store) map[int]bool {
	t.Helper()
	seen := map[int]bool{}
	for q := int32(0); q < damageQueues; q++ {
		for _, m := range readAll(t, s, "DMG", q) { // CRC-checked decode
			var i int
			if _, err := fmt.Sscanf(string(m.Body), "dmg-%04d|", &i); err != nil || string(m.Body) != damageBody(i) || int32(i%damageQueues) != q {
				t.Fatalf("queue %d serves a body that was never sent: %.40q", q, m.Body)
			}
			if seen[i] {
				t.Fatalf("message %d read twice", i)
			}
			seen[i] = true
		}
	}
	return seen
}

// damageCase is where record k is and which of its bytes is flipped.
type damageCase struct {
	name  string
	pick  func(t *testing.T, msgs []storedMsg, segSize int64) int // index k into msgs
	field func(r *PutResult) int64                                // offset of the byte within the record
}

var (
	bodyByte   = func(r *PutResult) int64 { return 88 + 40 } // IPv4 hosts: the body starts at 88
	lengthByte = func(r *PutResult) int64 { return message.OffTotalSize + 2 }
	magicByte  = func(r *PutResult) int64 { return message.OffMagic + 1 }

	middleOfSegment = func(t *testing.T, msgs []storedMsg, segSize int64) int {
		for k, m := range msgs {
			if m.res.PhysicalOffset > segSize+segSize/2 {
				return k
			}
		}
		t.Fatal("no second segment")
		return 0
	}
	firstOfSegment = func(t *testing.T, msgs []storedMsg, segSize int64) int {
		for k, m := range msgs {
			if m.res.PhysicalOffset == 2*segSize {
				return k
			}
		}
		t.Fatal("no record at the start of the third segment")
		return 0
	}
	lastOfSegment = func(t *testing.T, msgs []storedMsg, segSize int64) int {
		return firstOfSegment(t, msgs, segSize) - 1 // followed by the blank
	}
	lastRecord = func(t *testing.T, msgs []storedMsg, segSize int64) int { return len(msgs) - 1 }
)

var damageCases = []damageCase{
	{"BodyMiddleOfSegment", middleOfSegment, bodyByte},
	{"BodyFirstOfSegment", firstOfSegment, bodyByte},
	{"BodyLastOfSegment", lastOfSegment, bodyByte},
	{"BodyLastRecord", lastRecord, bodyByte},
	{"LengthMiddleOfSegment", middleOfSegment, lengthByte},
	{"LengthFirstOfSegment", firstOfSegment, lengthByte},
	{"LengthLastRecord", lastRecord, lengthByte},
	{"MagicMiddleOfSegment", middleOfSegment, magicByte},
	{"MagicLastOfSegment", lastOfSegment, magicByte},
	{"MagicLastRecord", lastRecord, magicByte},
}

// restarts: how the store stopped before the damage.
var restarts = []struct {
	name string
	stop func(t *testing.T, s *Store, cfg Config)
}{
	{"UncleanNoCheckpoint", func(t *testing.T, s *Store, cfg Config) { s.crash(); os.Remove(cfg.checkpointPath()) }},
	{"Unclean", func(t *testing.T, s *Store, cfg Config) {
		if err := s.flushAll(); err != nil { // the checkpoint covers everything: the scan starts at the last segment
			t.Fatal(err)
		}
		s.crash()
	}},
	{"Clean", func(t *testing.T, s *Store, cfg Config) {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}},
}

// TestFlippedByteLosesOnlyItsRecord flips one byte of record k of 300
// (body, length or magic; middle or first of a segment, last before a
// blank, last of the log), restarts cleanly or not, and checks that the
// other 299 messages read back intact, k is never served (not by a pull,
// not by its offset) and its queue offset never given again, the report
// file names k, and a second restart and new appends change none of it.
func TestFlippedByteLosesOnlyItsRecord(t *testing.T) {
	for _, st := range restarts {
		for _, dc := range damageCases {
			t.Run(st.name+"/"+dc.name, func(t *testing.T) {
				cfg := testConfig(t)
				s := mustOpen(t, cfg)
				msgs := fillDamageStore(t, s, 300)
				segSize := int64(cfg.MappedFileSizeCommitLog)
				k := dc.pick(t, msgs, segSize)
				victim := msgs[k]
				st.stop(t, s, cfg)
				flipAt(t, cfg, victim.res.PhysicalOffset+dc.field(victim.res))

				s = mustOpen(t, cfg)
				seen := readAllBodies(t, s)
				for _, m := range msgs {
					if m.i != victim.i && !seen[m.i] {
						t.Fatalf("message %d (commitlog %d) lost; damaged was %d at %d", m.i, m.res.PhysicalOffset, victim.i, victim.res.PhysicalOffset)
					}
				}
				if seen[victim.i] {
					t.Fatalf("damaged message %d served", victim.i)
				}
				if raw, err := s.GetRawMessage(victim.res.PhysicalOffset); err == nil {
					raw.Release()
					if s.CommitLogMaxOffset() > victim.res.PhysicalOffset {
						t.Fatalf("damaged record %d read by its offset", victim.i)
					}
				}
				kind, ok := reportedOffsets(t, cfg)[victim.res.PhysicalOffset]
				if !ok {
					t.Fatalf("report file does not name offset %d: %v", victim.res.PhysicalOffset, reportedOffsets(t, cfg))
				}
				if err := s.Verify(); err != nil {
					t.Fatal(err)
				}
				t.Logf("record %d at %d reported %s", victim.i, victim.res.PhysicalOffset, kind)

				// Appends go on in every queue, after the damaged record's.
				q := int32(victim.i % damageQueues)
				before := s.MaxOffsetInQueue("DMG", q)
				r := mustPut(t, s, newMsg("DMG", q, damageBody(999+int(q)), nil))
				if r.QueueOffset != before || r.QueueOffset <= victim.res.QueueOffset {
					// A consumer may have taken the damaged message's offset
					// before the damage: it must not be given again.
					t.Fatalf("append got queue offset %d, queue max was %d, the damaged message had %d", r.QueueOffset, before, victim.res.QueueOffset)
				}
				waitDispatched(t, s)
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				s = mustOpen(t, cfg)
				defer s.Close()
				again := readAllBodies(t, s)
				if len(again) != len(seen)+1 || again[victim.i] || !again[999+int(q)] {
					t.Fatalf("after a second restart %d messages (want %d), damaged served %v", len(again), len(seen)+1, again[victim.i])
				}
				if err := s.Verify(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestCheckCRCOnReadOff: with checkCRCOnRead=false a record whose body
// fails its CRC is served (the operator's choice), one whose framing is
// damaged still is not, and neither is one recovery already skipped.
func TestCheckCRCOnReadOff(t *testing.T) {
	cfg := testConfig(t)
	cfg.CheckCRCOnRead = false
	s := mustOpen(t, cfg)
	msgs := fillDamageStore(t, s, 30)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	flipAt(t, cfg, msgs[4].res.PhysicalOffset+bodyByte(nil))
	flipAt(t, cfg, msgs[7].res.PhysicalOffset+magicByte(nil))

	s = mustOpen(t, cfg)
	defer s.Close()
	seen := map[int]bool{}
	for q := int32(0); q < damageQueues; q++ {
		for _, m := range readAllRaw(t, s, "DMG", q) {
			var i int
			fmt.Sscanf(string(m.Body), "dmg-%04d|", &i)
			seen[i] = true
		}
	}
	if !seen[4] || seen[7] || len(seen) != 29 {
		t.Fatalf("served: body-damaged %v (want true), magic-damaged %v (want false), %d in all", seen[4], seen[7], len(seen))
	}
}

// readAllRaw is readAll without the CRC check of the decode.
func readAllRaw(t *testing.T, s *Store, topic string, qid int32) []*message.MessageExt {
	t.Helper()
	var out []*message.MessageExt
	for off := int64(0); ; {
		r := s.GetMessage(topic, qid, off, 32, 1<<20, nil)
		for _, b := range r.Messages {
			m, err := message.DecodeRecord(b, false)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		next := r.NextBeginOffset
		r.Release()
		if next <= off {
			return out
		}
		off = next
	}
}

// TestCheckFilesFindsDamage runs the offline check on a clean store (clean,
// every record, queue and index file counted), then after damaging a
// record, a consume-queue file (cut mid-entry) and an index entry: each is
// reported, and the check changed no file.
func TestCheckFilesFindsDamage(t *testing.T) {
	cfg := testConfig(t)
	s := mustOpen(t, cfg)
	msgs := fillDamageStore(t, s, 300)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := CheckFiles(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || rep.Records != 300 || rep.Queues != damageQueues || rep.Indexes < 2 {
		t.Fatalf("clean store: %+v", rep)
	}

	victim := msgs[150].res.PhysicalOffset
	flipAt(t, cfg, victim+bodyByte(nil))
	qfile := filepath.Join(cfg.consumeQueueDir(), "DMG", "1", "00000000000000000000")
	if err := os.Truncate(qfile, 50*CQEntrySize+7); err != nil {
		t.Fatal(err)
	}
	idx, _ := filepath.Glob(filepath.Join(cfg.indexDir(), "*"))
	f, _ := os.OpenFile(idx[0], os.O_RDWR, 0)
	phyAt := int64(indexHeaderSize + cfg.MaxHashSlotNum*indexSlotSize + 5*indexEntrySize + 4)
	b := make([]byte, 8)
	f.ReadAt(b, phyAt)
	b[7]++ // entry 5 now points one byte into its record
	f.WriteAt(b, phyAt)
	f.Close()
	before := snapshotFiles(t, cfg.StorePathRootDir)

	rep, err = CheckFiles(cfg)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(rep.Problems, "\n")
	for _, want := range []string{
		fmt.Sprintf("commitlog: damaged range [%d, %d)", victim, victim+int64(msgs[150].res.Size)),
		"consumequeue DMG/1: file 00000000000000000000 is 1007 bytes, expected 2000: entries from queue offset 50 on are lost",
		"index " + filepath.Base(idx[0]) + ": entry 5 points at",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("problems do not include %q:\n%s", want, all)
		}
	}
	t.Logf("problems:\n%s", all)
	if after := snapshotFiles(t, cfg.StorePathRootDir); !reflect.DeepEqual(before, after) {
		t.Fatal("the check changed files")
	}
}

// snapshotFiles maps every file under root to its size, mtime and content.
func snapshotFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, _ := d.Info()
		b, _ := os.ReadFile(path)
		out[path] = fmt.Sprint(fi.Size(), fi.ModTime().UnixNano(), crc32.ChecksumIEEE(b))
		return nil
	})
	return out
}
