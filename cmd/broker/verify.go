package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/broker/store"
)

// Exit codes of -verify-store.
const (
	verifyClean   = 0
	verifyDamaged = 1
	verifyFailed  = 2
)

// verifyStore checks the stopped store under root (store.CheckFiles) and
// prints one line per problem and note, then a summary. File sizes come from
// cfg when a config file was given (fromConfig), else from the files
// themselves (commitlog segment, consume-queue and index file sizes).
func verifyStore(w io.Writer, cfg *config.Config, root string, fromConfig bool) int {
	sc := cfg.StoreConfig()
	sc.StorePathRootDir = root
	if !fromConfig {
		sc.StorePathCommitLog = ""
		if n := firstFileSize(filepath.Join(root, "commitlog")); n > 0 {
			sc.MappedFileSizeCommitLog = int(n)
		}
		if n := firstQueueFileSize(filepath.Join(root, "consumequeue")); n > 0 {
			sc.MappedFileSizeConsumeQueue = int(n)
		}
		// An index file is 40 + 4 * slots + 20 * entries bytes: with Java's
		// ratio (maxIndexNum = 4 * maxHashSlotNum) its size gives both.
		if n := firstIndexFileSize(filepath.Join(root, "index")); n > 40 && (n-40)%84 == 0 {
			sc.MaxHashSlotNum = int((n - 40) / 84)
			sc.MaxIndexNum = 4 * sc.MaxHashSlotNum
		}
	}
	rep, err := store.CheckFiles(sc)
	if err != nil {
		fmt.Fprintln(w, "verify-store:", err)
		return verifyFailed
	}
	for _, p := range rep.Problems {
		fmt.Fprintln(w, "DAMAGED", p)
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(w, "NOTE", n)
	}
	state := "clean"
	if !rep.Clean() {
		state = fmt.Sprintf("%d problems", len(rep.Problems))
	}
	fmt.Fprintf(w, "store %s: %s (%d commitlog records, %d consume queues, %d index files checked)\n",
		root, state, rep.Records, rep.Queues, rep.Indexes)
	if !rep.Clean() {
		return verifyDamaged
	}
	return verifyClean
}

// firstFileSize is the size of the first 20-digit file in dir (0: none).
func firstFileSize(dir string) int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	for _, e := range ents {
		if _, err := strconv.ParseInt(e.Name(), 10, 64); err == nil && len(e.Name()) == 20 && !e.IsDir() {
			if fi, err := e.Info(); err == nil {
				return fi.Size()
			}
		}
	}
	return 0
}

// firstQueueFileSize is the size of the largest of the first files of the
// queues (a cut file is shorter; 0: none).
func firstQueueFileSize(root string) int64 {
	var best int64
	topics, _ := os.ReadDir(root)
	for _, t := range topics {
		qs, _ := os.ReadDir(filepath.Join(root, t.Name()))
		for _, q := range qs {
			best = max(best, firstFileSize(filepath.Join(root, t.Name(), q.Name())))
		}
	}
	return best
}

// firstIndexFileSize is the size of the first index file in dir (0: none).
func firstIndexFileSize(dir string) int64 {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if len(e.Name()) == 17 && !e.IsDir() {
			if fi, err := e.Info(); err == nil {
				return fi.Size()
			}
		}
	}
	return 0
}
