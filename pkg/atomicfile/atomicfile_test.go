package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func parseTo(dst *string) func([]byte) error {
	return func(b []byte) error {
		if !strings.HasPrefix(string(b), "ok:") {
			return errors.New("not ok")
		}
		*dst = string(b)
		return nil
	}
}

func TestWriteKeepsThePreviousContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "f.json")
	for _, v := range []string{"ok:1", "ok:2", "ok:3"} {
		if err := Write(path, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != "ok:3" {
		t.Errorf("file holds %q", b)
	}
	if b, _ := os.ReadFile(path + BackupSuffix); string(b) != "ok:2" {
		t.Errorf("backup holds %q", b)
	}
	if _, err := os.Stat(path + tempSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp file left behind: %v", err)
	}
}

func TestReadFallsBackToTheBackup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	var got string

	if used, err := Read(path, parseTo(&got)); used != "" || err != nil {
		t.Errorf("missing pair: used %q, err %v; want nothing and no error", used, err)
	}
	for name, main := range map[string]string{"damaged": "garbage", "empty": "", "missing": "-"} {
		t.Run(name, func(t *testing.T) {
			os.Remove(path)
			if main != "-" {
				os.WriteFile(path, []byte(main), 0o644)
			}
			os.WriteFile(path+BackupSuffix, []byte("ok:old"), 0o644)
			used, err := Read(path, parseTo(&got))
			if err != nil || used != path+BackupSuffix || got != "ok:old" {
				t.Errorf("used %q, got %q, err %v; want the backup", used, got, err)
			}
		})
	}

	os.WriteFile(path, []byte("garbage"), 0o644)
	os.WriteFile(path+BackupSuffix, []byte("also garbage"), 0o644)
	_, err := Read(path, parseTo(&got))
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), path+BackupSuffix) {
		t.Errorf("both damaged: err %v, want one naming both files", err)
	}
}

// TestLoadKeepsTheDamagedFileAside: a damaged file replaced by its backup
// is reported with what was wrong and moved aside intact; the next Write
// keeps the good backup instead of copying the damage over it.
func TestLoadKeepsTheDamagedFileAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	for _, v := range []string{"ok:1", "ok:2"} {
		if err := Write(path, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(path, []byte("garbage"), 0o644)
	var got string
	used, fb, err := Load(path, parseTo(&got))
	if err != nil || used != path+BackupSuffix || got != "ok:1" {
		t.Fatalf("used %q, got %q, err %v; want the backup", used, got, err)
	}
	if fb == nil || fb.Path != path || fb.Reason == nil || !strings.Contains(fb.Reason.Error(), "not ok") ||
		!strings.HasPrefix(fb.KeptAs, path+CorruptSuffix) {
		t.Fatalf("fallback %+v", fb)
	}
	if b, err := os.ReadFile(fb.KeptAs); err != nil || string(b) != "garbage" {
		t.Fatalf("kept copy holds %q, %v", b, err)
	}
	if err := Write(path, []byte("ok:3")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path + BackupSuffix); string(b) != "ok:1" {
		t.Fatalf("backup after the next write holds %q, want the good one", b)
	}
	if used, fb, err := Load(path, parseTo(&got)); used != path || fb != nil || err != nil {
		t.Fatalf("healthy file: used %q, fallback %v, err %v", used, fb, err)
	}

	// Missing: reported, nothing to keep. Both damaged: nothing moved.
	os.Remove(path)
	if _, fb, _ := Load(path, parseTo(&got)); fb == nil || fb.KeptAs != "" || fb.Reason.Error() != "missing" {
		t.Fatalf("missing file: fallback %+v", fb)
	}
	os.WriteFile(path, []byte("garbage"), 0o644)
	os.WriteFile(path+BackupSuffix, []byte("garbage"), 0o644)
	if _, _, err := Load(path, parseTo(&got)); err == nil {
		t.Fatal("both damaged: no error")
	}
	if b, _ := os.ReadFile(path); string(b) != "garbage" {
		t.Fatal("a damaged file was moved although nothing could be loaded")
	}
}
