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
