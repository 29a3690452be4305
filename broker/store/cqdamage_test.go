package store

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// cqChildEnv makes the test binary a writer child: "<dir>" appends to two
// queues under SYNC_FLUSH, prints "ACK writer i queueOffset" for each
// acknowledged message, and on SIGTERM closes the store cleanly (printing
// "CLOSED"), as the broker does.
const cqChildEnv = "STORE_CQ_CHILD"

func cqChildBody(w, i int) string { return fmt.Sprintf("w%d-i%d|%s", w, i, strings.Repeat("q", i%300)) }

func cqChild(dir string) {
	s, err := Open(crashConfig(dir, SyncFlush))
	if err != nil {
		fmt.Println("OPENFAIL", err)
		os.Exit(3)
	}
	var stopping atomic.Bool
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stopping.Load(); i++ {
				r, err := s.PutMessage(newMsg("cqd", int32(w), cqChildBody(w, i), nil))
				if err != nil || r.Status != PutOK {
					if stopping.Load() {
						return
					}
					fmt.Println("PUTFAIL", err)
					os.Exit(4)
				}
				mu.Lock()
				fmt.Printf("ACK %d %d %d\n", w, i, r.QueueOffset)
				mu.Unlock()
			}
		}()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	stopping.Store(true)
	wg.Wait()
	if err := s.Close(); err != nil {
		fmt.Println("CLOSEFAIL", err)
		os.Exit(5)
	}
	fmt.Println("CLOSED")
	os.Exit(0)
}

// runCQChild runs the writer child on dir until it acknowledged at least
// n messages per queue, stops it with sig and returns what it acknowledged
// (writer, i) -> queue offset.
func runCQChild(t *testing.T, dir string, sig syscall.Signal, n int) map[[2]int]int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), cqChildEnv+"="+dir)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[[2]int]int64{}
	perQueue := [2]int{}
	sent, closed := false, false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		l := sc.Text()
		var w, i int
		var qoff int64
		if _, err := fmt.Sscanf(l, "ACK %d %d %d", &w, &i, &qoff); err == nil {
			acked[[2]int{w, i}] = qoff
			perQueue[w]++
			if !sent && perQueue[0] >= n && perQueue[1] >= n {
				cmd.Process.Signal(sig)
				sent = true
			}
			continue
		}
		if l == "CLOSED" {
			closed = true
			continue
		}
		t.Fatalf("child: %s", l)
	}
	err := cmd.Wait()
	if sig == syscall.SIGTERM && (err != nil || !closed) {
		t.Fatalf("child did not close cleanly: %v", err)
	}
	return acked
}

// truncateNewestQueueFile cuts the newest file of consumequeue/cqd/<qid>
// in the middle of the entry lost entries before its end, and returns how
// many entries it held.
func truncateNewestQueueFile(t *testing.T, dir string, qid, lost int) int {
	t.Helper()
	qdir := filepath.Join(dir, "consumequeue", "cqd", fmt.Sprint(qid))
	names, err := listNumbered(qdir)
	if err != nil || len(names) == 0 {
		t.Fatalf("queue files in %s: %v %v", qdir, names, err)
	}
	path := filepath.Join(qdir, fmt.Sprintf("%020d", names[len(names)-1]))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	used := 0
	for used+CQEntrySize <= len(data) && getEntry(data[used:]).size > 0 {
		used += CQEntrySize
	}
	if used/CQEntrySize < lost+1 {
		t.Fatalf("newest queue file holds %d entries, want more than %d", used/CQEntrySize, lost)
	}
	if err := os.Truncate(path, int64(used-lost*CQEntrySize+7)); err != nil {
		t.Fatal(err)
	}
	return used / CQEntrySize
}

// TestTruncatedConsumeQueueRebuiltAfterSIGTERM and ...AfterSIGKILL stop a
// writer child, cut its newest consume-queue file of queue 0 in the middle
// of the third entry from its end, restart and check that every
// acknowledged message is readable through its queue, in order, with
// nothing else in it.
func TestTruncatedConsumeQueueRebuiltAfterSIGTERM(t *testing.T) {
	testTruncatedConsumeQueue(t, syscall.SIGTERM)
}

func TestTruncatedConsumeQueueRebuiltAfterSIGKILL(t *testing.T) {
	testTruncatedConsumeQueue(t, syscall.SIGKILL)
}

func testTruncatedConsumeQueue(t *testing.T, sig syscall.Signal) {
	if testing.Short() {
		t.Skip("child-process test skipped in -short mode")
	}
	dir := t.TempDir()
	acked := runCQChild(t, dir, sig, 700) // two queue files (500 entries each) per queue
	held := truncateNewestQueueFile(t, dir, 0, 3)
	s, err := Open(crashConfig(dir, SyncFlush))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.CleanStart != (sig == syscall.SIGTERM) {
		t.Fatalf("clean start %v after %v", s.CleanStart, sig)
	}
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
	for w := range 2 {
		msgs := readAll(t, s, "cqd", int32(w))
		for qoff, m := range msgs {
			var i int
			if _, err := fmt.Sscanf(string(m.Body), "w%d-i%d|", new(int), &i); err != nil || string(m.Body) != cqChildBody(w, i) || m.QueueOffset != int64(qoff) {
				t.Fatalf("queue %d offset %d: bad message %.30q (queue offset %d)", w, qoff, m.Body, m.QueueOffset)
			}
			delete(acked, [2]int{w, i})
		}
	}
	for k, qoff := range acked {
		t.Errorf("acknowledged message %v (queue offset %d) not readable", k, qoff)
	}
	if !t.Failed() {
		t.Logf("%v: newest file of queue 0 held %d entries, cut inside its third last; every acknowledged message read back", sig, held)
	}
}
