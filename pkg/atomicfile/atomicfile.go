// Package atomicfile replaces small files (configuration, offset tables) so that a crash
// at any moment leaves the old or the new content readable, and keeps the previous
// content beside the file as path.bak for when the main file is damaged anyway.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// BackupSuffix names the copy of the previous content.
const BackupSuffix = ".bak"

const tempSuffix = ".tmp"

// Write replaces path with data. The order makes every step survivable: data to
// path.tmp and fsync; the current content copied to path.bak and fsync; rename over
// path; fsync the folder so the rename itself is durable.
func Write(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	tmp := path + tempSuffix
	if err := writeSynced(tmp, data); err != nil {
		return fmt.Errorf("atomicfile: write %s: %w", tmp, err)
	}
	if old, err := os.ReadFile(path); err == nil && len(old) > 0 {
		if err := writeSynced(path+BackupSuffix, old); err != nil {
			return fmt.Errorf("atomicfile: keep %s%s: %w", path, BackupSuffix, err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	return syncDir(dir)
}

// Read hands parse the content of path or, when path is missing, empty or refused by
// parse, of path.bak. It returns the file it used, "" when neither exists (not an
// error), and an error naming both files when neither parses.
func Read(path string, parse func([]byte) error) (used string, err error) {
	var errs []error
	for _, p := range []string{path, path + BackupSuffix} {
		data, err := os.ReadFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err == nil && len(data) == 0:
			err = errors.New("empty file")
		case err == nil:
			if err = parse(data); err == nil {
				return p, nil
			}
		}
		errs = append(errs, fmt.Errorf("%s: %w", p, err))
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("atomicfile: %w", errors.Join(errs...))
	}
	return "", nil
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	defer d.Close()
	// Some file systems cannot sync a folder; the rename has happened all the same.
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("atomicfile: sync %s: %w", dir, err)
	}
	return nil
}
