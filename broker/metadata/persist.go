package metadata

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// File names under <storePathRootDir>/config.
const (
	TopicsFile            = "topics.json"
	SubscriptionGroupFile = "subscriptionGroup.json"
	ConsumerOffsetFile    = "consumerOffset.json"
	bakSuffix             = ".bak"
	tmpSuffix             = ".tmp"
)

// ConfigDir returns the folder of the metadata files.
func ConfigDir(storeRoot string) string { return filepath.Join(storeRoot, "config") }

// WriteFileAtomic replaces path with data the way the metadata files are written.
func WriteFileAtomic(path string, data []byte) error { return writeAtomically(path, data) }

// writeAtomically replaces path with data: temp file, fsync, previous content kept as
// .bak, rename, fsync the folder.
func writeAtomically(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("metadata: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("metadata: sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	// Keep the previous good copy. A hard link would be cheaper but the content must
	// survive the rename below either way; copying keeps .bak a regular file.
	if old, err := os.ReadFile(path); err == nil && len(old) > 0 {
		if err := os.WriteFile(path+bakSuffix, old, 0o644); err != nil {
			return fmt.Errorf("metadata: keep %s%s: %w", path, bakSuffix, err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// loadJSON fills v from path, or from path.bak when path is missing or does not parse.
// It reports whether a file was found.
func loadJSON(path string, v any, reset func()) (bool, error) {
	var firstErr error
	for _, p := range []string{path, path + bakSuffix} {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && len(data) == 0 {
			err = errors.New("empty file")
		}
		if err == nil {
			reset()
			if err = protocol.Decode(data, v); err == nil {
				return true, nil
			}
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("metadata: %s: %w", p, err)
		}
	}
	if firstErr != nil {
		reset()
		return false, firstErr
	}
	return false, nil
}
