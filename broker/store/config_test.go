package store

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestConfigCommitLogDir(t *testing.T) {
	c := DefaultConfig("/x")
	if c.commitLogDir() != filepath.Join("/x", "commitlog") {
		t.Fatalf("commitlog dir %s", c.commitLogDir())
	}
	c.StorePathCommitLog = "/y"
	if c.commitLogDir() != "/y" {
		t.Fatal("storePathCommitLog ignored")
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig(t.TempDir())
	c.MessageDelayLevel = "1s 5x"
	if _, err := Open(c); !errors.Is(err, ErrConfig) {
		t.Fatalf("bad delay levels: %v", err)
	}
	c = DefaultConfig(t.TempDir())
	c.MappedFileSizeConsumeQueue = 30
	if _, err := Open(c); !errors.Is(err, ErrConfig) {
		t.Fatalf("bad cq size: %v", err)
	}
	lv, err := ParseDelayLevels(DefaultMessageDelayLevel)
	if err != nil || len(lv) != 18 || lv[0] != time.Second || lv[17] != 2*time.Hour {
		t.Fatalf("delay levels %v %v", lv, err)
	}
}

func TestConfigCheckCRCOnReadByDefault(t *testing.T) {
	if !DefaultConfig("/x").CheckCRCOnRead {
		t.Fatal("off by default")
	}
}
