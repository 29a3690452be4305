package store

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestConfigSet(t *testing.T) {
	c := DefaultConfig("/x")
	for k, v := range map[string]string{
		"mapedFileSizeCommitLog": "1048576", "flushDiskType": "SYNC_FLUSH", "syncFlushTimeout": "250",
		"deleteWhen": "03;15", "maxMessageSize": "1024", "messageIndexEnable": "false",
	} {
		if err := c.Set(k, v); err != nil {
			t.Fatalf("Set(%s): %v", k, err)
		}
	}
	if c.MappedFileSizeCommitLog != 1<<20 || c.FlushDiskType != SyncFlush || c.SyncFlushTimeout != 250*time.Millisecond ||
		c.DeleteWhen != "03;15" || c.MaxMessageSize != 1024 || c.MessageIndexEnable {
		t.Fatalf("config %+v", c)
	}
	if err := c.Set("mappedFileSizeCommitLog", "2048x"); !errors.Is(err, ErrConfig) {
		t.Fatalf("bad number: %v", err)
	}
	if err := c.Set("flushDiskType", "SOMETIMES"); !errors.Is(err, ErrConfig) {
		t.Fatalf("bad flush type: %v", err)
	}
	if err := c.Set("brokerName", "b"); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("unknown key: %v", err)
	}
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

func TestConfigSetCheckCRCOnRead(t *testing.T) {
	c := DefaultConfig("/x")
	if !c.CheckCRCOnRead {
		t.Fatal("off by default")
	}
	if err := c.Set("checkCRCOnRead", "false"); err != nil || c.CheckCRCOnRead {
		t.Fatalf("Set false: %v", err)
	}
	if err := c.Set("checkCRCOnRead", "maybe"); !errors.Is(err, ErrConfig) {
		t.Fatalf("Set maybe: %v", err)
	}
}
