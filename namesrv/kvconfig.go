package namesrv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// kvFile is the on-disk form of the KV config store, the same as Java's
// KVConfigSerializeWrapper, so a Java name server's kvConfig.json loads as is.
type kvFile struct {
	ConfigTable map[string]map[string]string `json:"configTable"`
}

// kvStore holds namespaced key/value settings (ORDER_TOPIC_CONFIG and the like) and
// rewrites its file on every change.
//
// Durability order: new content to <path>.tmp, fsync, old content copied to <path>.bak,
// rename .tmp over <path>, fsync the folder. At any crash point <path> holds either the
// old or the new content; .bak holds the one before.
type kvStore struct {
	path string

	mu    sync.RWMutex
	table map[string]map[string]string
}

// openKVStore loads path. A missing file is an empty store; a corrupt one falls back to
// the .bak copy, and is an error only when that is unusable too.
func openKVStore(path string) (*kvStore, []string, error) {
	s := &kvStore{path: path, table: map[string]map[string]string{}}
	t, err := readKVFile(path)
	if err == nil {
		s.table = t
		return s, nil, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		if t, err := readKVFile(path + ".bak"); err == nil {
			s.table = t
			return s, []string{fmt.Sprintf("kv config %s missing, loaded %s.bak", path, path)}, nil
		}
		return s, nil, nil
	}
	t, bakErr := readKVFile(path + ".bak")
	if bakErr != nil {
		return nil, nil, fmt.Errorf("namesrv: kv config %s: %w (backup: %v)", path, err, bakErr)
	}
	s.table = t
	return s, []string{fmt.Sprintf("kv config %s unreadable (%v), loaded %s.bak", path, err, path)}, nil
}

func readKVFile(path string) (map[string]map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f kvFile
	if err := protocol.Decode(data, &f); err != nil {
		return nil, err
	}
	if f.ConfigTable == nil {
		f.ConfigTable = map[string]map[string]string{}
	}
	return f.ConfigTable, nil
}

// put sets namespace/key. The change stays in memory even when persisting fails.
func (s *kvStore) put(namespace, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := s.table[namespace]
	if ns == nil {
		ns = map[string]string{}
		s.table[namespace] = ns
	}
	ns[key] = value
	return s.persistLocked()
}

func (s *kvStore) get(namespace, key string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.table[namespace][key]
	return v, ok
}

// remove deletes namespace/key; an emptied namespace stays, as in Java.
func (s *kvStore) remove(namespace, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := s.table[namespace]
	if ns == nil {
		return nil
	}
	delete(ns, key)
	return s.persistLocked()
}

// namespace returns a copy of one namespace, or nil when it does not exist.
func (s *kvStore) namespace(namespace string) map[string]string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ns, ok := s.table[namespace]
	if !ok {
		return nil
	}
	return maps.Clone(ns)
}

// namespaceJSON returns a namespace as a KVTable body, or nil when it does not exist.
func (s *kvStore) namespaceJSON(namespace string) []byte {
	ns := s.namespace(namespace)
	if ns == nil {
		return nil
	}
	return protocol.MustEncode(protocol.KVTable{Table: ns})
}

// persistLocked writes the table to disk. s.mu must be held for writing, so that files
// are written in the order of the changes.
func (s *kvStore) persistLocked() error {
	data, err := json.Marshal(kvFile{ConfigTable: s.table})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return fmt.Errorf("namesrv: kv config: %w", err)
	}
	tmp := s.path + ".tmp"
	if err := writeFileSync(tmp, data); err != nil {
		return fmt.Errorf("namesrv: kv config: %w", err)
	}
	if old, err := os.ReadFile(s.path); err == nil {
		if err := writeFileSync(s.path+".bak", old); err != nil {
			return fmt.Errorf("namesrv: kv config backup: %w", err)
		}
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return fmt.Errorf("namesrv: kv config: %w", err)
	}
	return syncDir(filepath.Dir(s.path))
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	// Some file systems cannot sync a folder; the rename is still done.
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("namesrv: sync %s: %w", dir, err)
	}
	return nil
}
