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
maxBrokersPerConnection=16
serverSelectorThreads=3
mysteryKey=1
`), 0o644)
	cfg, warnings, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ListenPort != 9999 || cfg.KVConfigPath != "/data/kv.json" || cfg.RocketmqHome != "/opt/rmq" ||
		cfg.ScanNotActiveBrokerInterval != time.Second || cfg.BrokerChannelExpiredTime != 30*time.Second || cfg.MaxBrokersPerConnection != 16 {
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
		"maxBrokersPerConnection=0\n":   "maxBrokersPerConnection",
	} {
		os.WriteFile(path, []byte(content), 0o644)
		if _, _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: err = %v, want one naming %s", content, err, key)
		}
	}
}

func TestConnectionLimitKeys(t *testing.T) {
	d := DefaultConfig()
	if sc := d.remotingConfig(); sc.IdleTimeout != 120*time.Second || sc.FrameTimeout != remoting.DefaultFrameTimeout ||
		sc.MaxConnections != remoting.DefaultMaxConnections || sc.MaxQueuedBytesTotal != 0 {
		t.Errorf("defaults: %+v", sc)
	}
	cfg := DefaultConfig()
	if _, err := cfg.ReadProperties(strings.NewReader("serverChannelMaxIdleTimeSeconds=30\nserverFrameReadTimeoutMillis=500\n" +
		"serverMaxConnections=100\nserverMaxConnectionsPerAddress=10\nserverMaxQueuedBytesPerConnection=1048576\nserverMaxQueuedBytesTotal=8388608\n")); err != nil {
		t.Fatal(err)
	}
	if sc := cfg.remotingConfig(); sc.IdleTimeout != 30*time.Second || sc.FrameTimeout != 500*time.Millisecond || sc.MaxConnections != 100 ||
		sc.MaxConnectionsPerAddress != 10 || sc.MaxQueuedBytesPerConnection != 1<<20 || sc.MaxQueuedBytesTotal != 8<<20 {
		t.Errorf("set: %+v", sc)
	}
	if props := cfg.Properties(); !strings.Contains(props, "serverChannelMaxIdleTimeSeconds=30\n") || !strings.Contains(props, "serverFrameReadTimeoutMillis=500\n") {
		t.Errorf("properties:\n%s", props)
	}
	cfg = DefaultConfig()
	if err := cfg.Set("serverChannelMaxIdleTimeSeconds", "0"); err != nil || cfg.remotingConfig().IdleTimeout >= 0 {
		t.Errorf("serverChannelMaxIdleTimeSeconds=0 (never, as in Java): %v, %v", cfg.remotingConfig().IdleTimeout, err)
	}

	for content, key := range map[string]string{
		"serverChannelMaxIdleTimeSeconds=-1":   "serverChannelMaxIdleTimeSeconds",
		"serverChannelMaxIdleTimeSeconds=2m":   "serverChannelMaxIdleTimeSeconds",
		"serverFrameReadTimeoutMillis=0":       "serverFrameReadTimeoutMillis",
		"serverMaxConnections=x":               "serverMaxConnections",
		"serverMaxConnectionsPerAddress=0":     "serverMaxConnectionsPerAddress",
		"serverMaxQueuedBytesPerConnection=-1": "serverMaxQueuedBytesPerConnection",
		"serverMaxQueuedBytesTotal=1":          "serverMaxQueuedBytesTotal",
	} {
		cfg := DefaultConfig()
		_, err := cfg.ReadProperties(strings.NewReader(content))
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), key) {
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

func TestUpdateNamesrvConfig(t *testing.T) {
	cfg := testConfig(t.TempDir())
	ns := startNameServer(t, cfg)
	cl := newClient(t)
	get := func() string {
		return string(mustSucceed(t, invoke(t, cl, ns.Addr(), remoting.GetNameServerConfig, nil, nil)).Body)
	}

	mustSucceed(t, invoke(t, cl, ns.Addr(), remoting.UpdateNameServerConfig, nil,
		[]byte("orderMessageEnable=true\nbrokerChannelExpiredTime=30000\n")))
	if body := get(); !strings.Contains(body, "orderMessageEnable=true\n") || !strings.Contains(body, "brokerChannelExpiredTime=30000\n") {
		t.Errorf("config after the update:\n%s", body)
	}

	// File paths are not for remote callers (4.9.7's configBlackList): nothing applied.
	resp := invoke(t, cl, ns.Addr(), remoting.UpdateNameServerConfig, nil, []byte("productEnvName=x\nkvConfigPath=/etc/passwd\n"))
	if resp.Code != remoting.NoPermission || resp.Remark != "Can not update config in black list." {
		t.Errorf("black-listed key: %v", resp)
	}
	// A bad value or an unknown key changes nothing either.
	for _, body := range []string{"productEnvName=y\nbrokerChannelExpiredTime=-5\n", "productEnvName=z\nnoSuchKey=1\n"} {
		if resp := invoke(t, cl, ns.Addr(), remoting.UpdateNameServerConfig, nil, []byte(body)); resp.Code != remoting.SystemError {
			t.Errorf("update %q: %v", body, resp)
		}
	}
	if body := get(); !strings.Contains(body, "productEnvName=center\n") || !strings.Contains(body, "kvConfigPath="+cfg.KVConfigPath+"\n") {
		t.Errorf("refused updates changed the config:\n%s", body)
	}
}
