package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/broker/store/storetest"
)

// TestVerifyStoreExitCodes runs -verify-store on a clean stopped store (0,
// sizes read from the files), on the same store with a flipped record byte
// (1, the damaged range printed) and on a folder that is not there (2).
func TestVerifyStoreExitCodes(t *testing.T) {
	dir := t.TempDir()
	s := storetest.Open(t, storetest.Config(dir))
	var last *store.PutResult
	for i := range 50 {
		r, err := s.PutMessage(storetest.Message("V", int32(i%2), fmt.Sprint("body-", i), map[string]string{"KEYS": fmt.Sprint("k", i)}))
		if err != nil {
			t.Fatal(err)
		}
		last = r
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := verifyStore(&out, config.Default(), dir, false); code != verifyClean || !strings.Contains(out.String(), ": clean (50 commitlog records, 2 consume queues, 1 index files checked)") {
		t.Fatalf("clean store: exit %d\n%s", code, out.String())
	}

	f, err := os.OpenFile(filepath.Join(dir, "commitlog", "00000000000000000000"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	seg := make([]byte, last.PhysicalOffset+int64(last.Size))
	f.ReadAt(seg, 0)
	f.WriteAt([]byte{'B'}, int64(bytes.Index(seg, []byte("body-25")))) // a body: the CRC covers it
	f.Close()
	out.Reset()
	if code := verifyStore(&out, config.Default(), dir, false); code != verifyDamaged || !strings.Contains(out.String(), "DAMAGED commitlog: damaged range") {
		t.Fatalf("damaged store: exit %d\n%s", code, out.String())
	}
	t.Logf("output:\n%s", out.String())

	out.Reset()
	if code := verifyStore(&out, config.Default(), filepath.Join(dir, "none"), false); code != verifyFailed {
		t.Fatalf("missing folder: exit %d\n%s", code, out.String())
	}
}
