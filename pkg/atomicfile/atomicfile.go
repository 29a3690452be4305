// Package atomicfile replaces small files (configuration, offset tables) so that a crash
// at any moment leaves the old or the new content readable, and keeps the previous
// content beside the file as path.bak for when the main file is damaged anyway. A
// damaged file replaced by its backup is kept as path.corrupt-<time> (Load).
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
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
// error), and an error naming both files when neither parses. A damaged path is moved
// aside as Load does.
func Read(path string, parse func([]byte) error) (used string, err error) {
	used, _, err = Load(path, parse)
	return used, err
}

// CorruptSuffix starts the name a damaged file is kept under: path.corrupt-<UTC time>.
const CorruptSuffix = ".corrupt-"

// Fallback describes a Load that used path.bak instead of path.
type Fallback struct {
	Path   string // the file that could not be used
	Reason error  // why: missing, empty, or what parse said
	KeptAs string // where the damaged file was moved; "" when it was missing or could not be moved
}

func (f *Fallback) String() string {
	s := fmt.Sprintf("%s unusable (%v), loaded %s%s", f.Path, f.Reason, f.Path, BackupSuffix)
	if f.KeptAs != "" {
		s += ", the damaged file kept as " + f.KeptAs
	}
	return s
}

// Load is Read that also reports when it used path.bak (fb, nil otherwise). A path
// that exists but is empty or refused by parse is then moved aside to
// path.corrupt-<UTC time> for inspection, so that the next Write keeps the good
// backup instead of copying the damage over it. Nothing is moved when neither file
// parses: the caller refuses to start and the operator finds both as they were.
func Load(path string, parse func([]byte) error) (used string, fb *Fallback, err error) {
	var errs []error
	for _, p := range []string{path, path + BackupSuffix} {
		data, err := os.ReadFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if p == path {
				fb = &Fallback{Path: path, Reason: errors.New("missing")}
			}
			continue
		case err == nil && len(data) == 0:
			err = errors.New("empty file")
		case err == nil:
			if err = parse(data); err == nil {
				if p != path {
					if fb == nil || fb.Reason == nil {
						fb = &Fallback{Path: path}
					}
					return p, fb.keep(path), nil
				}
				return p, nil, nil
			}
		}
		if p == path {
			fb = &Fallback{Path: path, Reason: err}
		}
		errs = append(errs, fmt.Errorf("%s: %w", p, err))
	}
	if len(errs) > 0 {
		return "", nil, fmt.Errorf("atomicfile: %w", errors.Join(errs...))
	}
	return "", nil, nil
}

// keep moves the damaged file aside (if it exists) and records where.
func (f *Fallback) keep(path string) *Fallback {
	if _, err := os.Stat(path); err != nil {
		return f
	}
	aside := path + CorruptSuffix + time.Now().UTC().Format("20060102T150405.000Z")
	for i := 1; ; i++ {
		if _, err := os.Lstat(aside); errors.Is(err, fs.ErrNotExist) {
			break
		}
		aside = fmt.Sprintf("%s.%d", aside, i)
	}
	if err := os.Rename(path, aside); err != nil {
		f.Reason = fmt.Errorf("%w (and it could not be moved aside: %v)", f.Reason, err)
		return f
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		f.Reason = fmt.Errorf("%w (moved aside, but not durably: %v)", f.Reason, err)
	}
	f.KeptAs = aside
	return f
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
