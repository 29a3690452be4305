package namesrv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "namesrv.conf")
	os.WriteFile(path, []byte(`# comment
listenPort = 9999
kvConfigPath=/data/kv.json
rocketmqHome: /opt/rmq
scanNotActiveBrokerInterval=1000
brokerChannelExpiredTime=30s
serverSelectorThreads=3
mysteryKey=1
`), 0o644)
	cfg, warnings, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ListenPort != 9999 || cfg.KVConfigPath != "/data/kv.json" || cfg.RocketmqHome != "/opt/rmq" ||
		cfg.ScanNotActiveBrokerInterval != time.Second || cfg.BrokerChannelExpiredTime != 30*time.Second {
		t.Errorf("cfg = %+v", cfg)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "mysteryKey") {
		t.Errorf("warnings = %v", warnings)
	}

	for content, key := range map[string]string{
		"listenPort=abc\n":              "listenPort",
		"listenPort=70000\n":            "listenPort",
		"brokerChannelExpiredTime=-1\n": "brokerChannelExpiredTime",
		"orderMessageEnable=maybe\n":    "orderMessageEnable",
	} {
		os.WriteFile(path, []byte(content), 0o644)
		if _, _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: err = %v, want one naming %s", content, err, key)
		}
	}
}

func TestGetNamesrvConfig(t *testing.T) {
	cfg := testConfig(t.TempDir())
	ns := startNameServer(t, cfg)
	resp := mustSucceed(t, invoke(t, newClient(t), ns.Addr(), remoting.GetNameServerConfig, nil, nil))
	if !strings.Contains(string(resp.Body), "kvConfigPath="+cfg.KVConfigPath+"\n") || !strings.Contains(string(resp.Body), "listenPort=0\n") {
		t.Errorf("config body:\n%s", resp.Body)
	}
}
