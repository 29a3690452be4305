package namesrv

import (
	"encoding/json"
	"fmt"
	"maps"
	"sync"

	"github.com/openrmq/rocketmq-operator/pkg/atomicfile"
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
	used, err := atomicfile.Read(path, func(data []byte) error {
		var f kvFile
		if err := protocol.Decode(data, &f); err != nil {
			return err
		}
		if f.ConfigTable != nil {
			s.table = f.ConfigTable
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("namesrv: kv config: %w", err)
	}
	var warnings []string
	if used == path+atomicfile.BackupSuffix {
		warnings = append(warnings, fmt.Sprintf("kv config %s missing or unreadable, loaded %s", path, used))
	}
	return s, warnings, nil
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
	if err := atomicfile.Write(s.path, data); err != nil {
		return fmt.Errorf("namesrv: kv config: %w", err)
	}
	return nil
}
