// Package acl is RocketMQ 4.x's plain ACL (Java's rocketmq-acl PlainAccessValidator and
// PlainPermissionManager): accounts with AK/SK, white-listed addresses and topic/group
// permissions read from plain_acl.yml, and the check of each request against them.
package acl

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
)

// Watcher holds the rules of one plain_acl.yml and reloads them when the file changes.
type Watcher struct {
	path  string
	log   *slog.Logger
	rules atomic.Pointer[Rules]

	mu   sync.Mutex // serializes Poll
	seen []byte     // the content last read; nil when the file was missing
}

// Open loads path. A missing file is no error: its rules let nothing in (Java creates it
// empty) until it appears. A file that does not parse is an error.
func Open(path string, log *slog.Logger) (*Watcher, error) {
	if log == nil {
		log = slog.Default()
	}
	w := &Watcher{path: path, log: log}
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	r, err := ParseRules(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if data == nil {
		log.Warn("ACL file missing: every request is refused until it is written", "file", path)
	}
	w.rules.Store(r)
	w.seen = data
	return w, nil
}

// Path is the file watched.
func (w *Watcher) Path() string { return w.path }

// Check decides on req under the current rules; nil lets it through.
func (w *Watcher) Check(req Request) *Denied { return w.rules.Load().Check(req) }

// Poll reloads the rules if the file's content changed since the last look, and reports
// whether it installed new ones. Content is compared rather than mtime so that a rewrite
// within one mtime tick, or a Kubernetes Secret's symlink swap, is seen; the file is small.
// A file that no longer parses leaves the rules as they were (and is retried once it
// changes again); a removed file refuses everything, as Java's recreated empty one does.
func (w *Watcher) Poll() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	data, err := readFile(w.path)
	if err != nil {
		w.log.Error("cannot read ACL file; keeping the rules loaded before", "file", w.path, "err", err)
		return false
	}
	if (data == nil) == (w.seen == nil) && bytes.Equal(data, w.seen) {
		return false
	}
	w.seen = data
	r, err := ParseRules(data)
	if err != nil {
		w.log.Error("ACL file changed but does not parse; keeping the rules loaded before", "file", w.path, "err", err)
		return false
	}
	w.rules.Store(r)
	if data == nil {
		w.log.Warn("ACL file removed: every request is refused until it is written again", "file", w.path)
	} else {
		w.log.Info("ACL file reloaded", "file", w.path, "accounts", len(r.accounts))
	}
	return true
}

// readFile returns the file's content, nil (not empty) when it does not exist.
func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err == nil && data == nil {
		data = []byte{}
	}
	return data, err
}
