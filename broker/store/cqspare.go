package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
)

// Spare consume-queue files.
//
// The first message of a new consume queue (and the first entry of each
// later file of a queue) needs a new file. Making one costs milliseconds:
// directories, the file, its preallocation and, the largest part, the first
// write fault into freshly preallocated blocks, which can wait 10 ms and
// more behind a journal commit while the flusher syncs. The dispatcher used
// to pay all of it before the message became readable, so the first message
// of a new queue reached OnArrival 3-20 ms after PutMessage returned.
//
// Now spareLoop keeps cqSpareCount files ready: created (unsynced) and
// pre-faulted as <root>/consumequeue/.spare-<n>.tmp. The dispatcher takes
// one, writes and publishes the entry, and goes on; placeLoop then creates
// the directories and renames the file to <topic>/<qid>/<20-digit start>
// (consumeQueue.place), so neither the new queue's message nor the ones
// dispatched after it wait for the file system. Nothing claims a spare
// durable: the logics flush places and syncs the file and its directories
// before a checkpoint can cover its entries, and spares left by a crash are
// removed at Open (removeSpares).
const cqSpareCount = 4 // ready files; each MappedFileSizeConsumeQueue bytes (6 MB by default)

type cqSpares struct {
	dir     string // <root>/consumequeue
	size    int
	seq     atomic.Int64
	ch      chan *mmapfile.File // ready spares
	toPlace chan *consumeQueue  // queues with spares to place

	taken, missed atomic.Int64 // new files served from a spare / created by the dispatcher
}

func newCQSpares(dir string, size int) *cqSpares {
	return &cqSpares{dir: dir, size: size, ch: make(chan *mmapfile.File, cqSpareCount-1),
		toPlace: make(chan *consumeQueue, 1024)}
}

// schedule asks placeLoop to place cq's spares; with a backlog that full,
// the caller places them itself.
func (p *cqSpares) schedule(cq *consumeQueue) {
	select {
	case p.toPlace <- cq:
	default:
		_ = cq.place() // on failure the next flush retries and reports it
	}
}

// make creates one spare and takes its first write fault.
func (p *cqSpares) make() (*mmapfile.File, error) {
	path := filepath.Join(p.dir, fmt.Sprintf(".spare-%d.tmp", p.seq.Add(1)))
	f, err := mmapfile.CreateUnsynced(path, 0, p.size)
	if err != nil {
		return nil, err
	}
	f.Data[0] = 0 // the first write into the mapping faults here, not on the dispatcher
	return f, nil
}

// take returns a ready spare, or nil if none is (the caller creates the
// file itself).
func (p *cqSpares) take() *mmapfile.File {
	if p == nil {
		return nil
	}
	select {
	case f := <-p.ch:
		p.taken.Add(1)
		return f
	default:
		p.missed.Add(1)
		return nil
	}
}

// drop removes the spares not taken (Close).
func (p *cqSpares) drop() {
	for {
		select {
		case f := <-p.ch:
			f.TryDestroy()
		default:
			return
		}
	}
}

// spareLoop keeps spares ready until stop.
func (s *Store) spareLoop() {
	defer s.wg.Done()
	var lastErr string
	for {
		f, err := s.spares.make()
		if err != nil {
			if err.Error() != lastErr {
				s.log.Warn("cannot make a spare consume-queue file", "err", err)
				lastErr = err.Error()
			}
			select {
			case <-s.stop:
				return
			case <-time.After(time.Second):
			}
			continue
		}
		lastErr = ""
		select {
		case s.spares.ch <- f:
		case <-s.stop:
			f.TryDestroy()
			return
		}
	}
}

// placeLoop places the spares the dispatcher took. Whatever is left at
// stop is placed by Close's final flush.
func (s *Store) placeLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case cq := <-s.spares.toPlace:
			if err := cq.place(); err != nil {
				s.log.Error("cannot place a consume-queue file", "topic", cq.topic, "queue", cq.queueID, "err", err)
				s.noteWriteErr(err)
			}
		}
	}
}

// removeSpares deletes spare files a previous run left (Open).
func removeSpares(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !e.IsDir() && strings.HasPrefix(e.Name(), ".spare-") {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
