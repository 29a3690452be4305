package acl

import (
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

var quiet = slog.New(slog.DiscardHandler)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWatcherReload: Poll installs a changed file at once (even of the same size and
// mtime), keeps the old rules when the new file does not parse, and refuses everything
// once the file is gone.
func TestWatcherReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	w, err := Open(path, quiet)
	if err != nil {
		t.Fatal(err)
	}
	unsigned := Request{Code: remoting.GetAllTopicConfig, Fields: map[string]string{}, RemoteIP: netip.MustParseAddr("127.0.0.1")}
	if w.Check(unsigned) == nil {
		t.Fatal("missing file lets a request in")
	}
	if w.Poll() {
		t.Fatal("Poll reloaded a file that is still missing")
	}

	writeFile(t, path, "globalWhiteRemoteAddresses: [127.0.0.1]\n")
	if !w.Poll() || w.Check(unsigned) != nil {
		t.Fatal("white list not installed after the file appeared")
	}
	if w.Poll() {
		t.Fatal("Poll reloaded an unchanged file")
	}
	stat, _ := os.Stat(path)
	writeFile(t, path, "globalWhiteRemoteAddresses: [127.0.0.2]\n") // same size
	os.Chtimes(path, stat.ModTime(), stat.ModTime())
	if !w.Poll() || w.Check(unsigned) == nil {
		t.Fatal("a same-size, same-mtime rewrite was not seen")
	}

	writeFile(t, path, "globalWhiteRemoteAddresses: [127.0.0.1]\naccounts:\n- {accessKey: short}\n")
	if w.Poll() || w.Check(unsigned) == nil {
		t.Fatal("a file that does not parse replaced the rules")
	}
	writeFile(t, path, "globalWhiteRemoteAddresses: ['*']\n")
	if !w.Poll() || w.Check(unsigned) != nil {
		t.Fatal("the fixed file was not installed")
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if !w.Poll() || w.Check(unsigned) == nil {
		t.Fatal("removed file still lets requests in")
	}
}

func TestOpenRefusesBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	writeFile(t, path, "accounts:\n- {accessKey: longenough, secretKey: longenough, topicPerms: [noperm]}\n")
	if _, err := Open(path, quiet); err == nil {
		t.Fatal("Open accepted a file that does not parse")
	}
}
