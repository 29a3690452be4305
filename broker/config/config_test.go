package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

func TestLoadBrokerConf(t *testing.T) {
	conf := `# a broker.conf as the docs show it
brokerClusterName = DefaultCluster
brokerName=broker-a
brokerId: 0
deleteWhen=04
fileReservedTime=48
brokerRole=ASYNC_MASTER
flushDiskType=ASYNC_FLUSH
mapedFileSizeCommitLog=1073741824
storePathRootDir=/tmp/store\
    -a
namesrvAddr=127.0.0.1:9876;127.0.0.2:9876
autoCreateTopicEnable=false
someFutureKey=1
rocketmqHome=/opt/rmq
`
	c, warns, err := Load(strings.NewReader(conf))
	if err != nil {
		t.Fatal(err)
	}
	if c.BrokerName != "broker-a" || c.FileReservedTime != 48*time.Hour || c.StorePathRootDir != "/tmp/store-a" || c.AutoCreateTopicEnable {
		t.Fatalf("bad config: %+v", c)
	}
	if len(NamesrvList(c.NamesrvAddr)) != 2 {
		t.Fatalf("namesrv: %q", c.NamesrvAddr)
	}
	if len(warns) != 1 || warns[0].Key != "someFutureKey" || warns[0].Line != 14 {
		t.Fatalf("warnings: %v", warns)
	}
}

func TestLoadRefusesNamingKey(t *testing.T) {
	for conf, key := range map[string]string{
		"listenPort=abc":           "listenPort",
		"brokerRole=MASTER":        "brokerRole",
		"flushDiskType=SOMETIMES":  "flushDiskType",
		"autoCreateTopicEnable=1":  "autoCreateTopicEnable",
		"messageDelayLevel=1x":     "messageDelayLevel",
		"brokerId=1":               "brokerId",
		"diskMaxUsedSpaceRatio=99": "diskMaxUsedSpaceRatio",
		"advertisedListenPort=2":   "advertisedListenPort",
		"advertisedListenPort=-1":  "advertisedListenPort",
	} {
		_, _, err := Load(strings.NewReader(conf))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: err %v does not name %s", conf, err, key)
		}
	}
}

// TestAdvertisedListenPort: the broker announces advertisedListenPort (in BrokerAddr and
// the store host of message ids) and listenPort without it.
func TestAdvertisedListenPort(t *testing.T) {
	c, _, err := Load(strings.NewReader("brokerIP1=192.0.2.7\nlistenPort=10911\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.BrokerAddr() != "192.0.2.7:10911" || c.StoreConfig().StoreHost.String() != "192.0.2.7:10911" {
		t.Errorf("without advertisedListenPort: %s, store host %s", c.BrokerAddr(), c.StoreConfig().StoreHost)
	}
	c, _, err = Load(strings.NewReader("brokerIP1=192.0.2.7\nlistenPort=10911\nadvertisedListenPort=30913\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.BrokerAddr() != "192.0.2.7:30913" || c.StoreConfig().StoreHost.String() != "192.0.2.7:30913" || c.ListenPort != 10911 {
		t.Errorf("advertisedListenPort=30913: %s, store host %s, listenPort %d", c.BrokerAddr(), c.StoreConfig().StoreHost, c.ListenPort)
	}
	if _, err := NewLive(c).Update(map[string]string{"advertisedListenPort": "30914"}); err == nil {
		t.Error("advertisedListenPort changed live")
	}
}

func TestLiveUpdate(t *testing.T) {
	l := NewLive(Default())
	changed, err := l.Update(map[string]string{"namesrvAddr": "10.0.0.1:9876", "longPollingEnable": "false"})
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) != 2 || l.Get().NamesrvAddr != "10.0.0.1:9876" || l.Get().LongPollingEnable {
		t.Fatalf("changed %v, cfg %+v", changed, l.Get())
	}
	if _, err := l.Update(map[string]string{"listenPort": "1"}); err == nil {
		t.Fatal("listenPort changed live")
	}
}

func TestHAKeys(t *testing.T) {
	d := Default()
	if d.HaSendHeartbeatInterval != 5*time.Second || d.HaHousekeepingInterval != 20*time.Second || d.HaTransferBatchSize != 32768 ||
		d.HaSlaveFallbehindMax != 268435456 || d.SlaveTimeout != 3*time.Second || d.SlaveSynchronizeInterval != 10*time.Second || d.SlaveReadEnable {
		t.Fatalf("HA defaults: %+v", d)
	}
	c, _, err := Load(strings.NewReader("brokerRole=SLAVE\nbrokerId=1\nlistenPort=20911\nhaListenPort=30000\n" +
		"haMasterAddress=10.0.0.1:10912\nslaveTimeout=500\nhaSlaveFallbehindMax=1024\n"))
	if err != nil {
		t.Fatal(err)
	}
	// 4.9.7 forces the HA port to listenPort+1 whatever haListenPort says.
	if c.HAPort() != 20912 || c.HaListenPort != 30000 || c.HaMasterAddress != "10.0.0.1:10912" || c.SlaveTimeout != 500*time.Millisecond || c.HaSlaveFallbehindMax != 1024 {
		t.Fatalf("HA keys: %+v", c)
	}
	for conf, key := range map[string]string{
		"brokerRole=SLAVE\nbrokerId=0": "brokerId",
		"slaveTimeout=0":               "slaveTimeout",
		"haTransferBatchSize=-1":       "haTransferBatchSize",
		"listenPort=65535":             "listenPort",
	} {
		_, _, err := Load(strings.NewReader(conf))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: err %v does not name %s", conf, err, key)
		}
	}
}

func TestACLKeys(t *testing.T) {
	t.Setenv("ROCKETMQ_HOME", "/opt/rmq")
	d := Default()
	if d.AclEnable || d.ACLFile() != "/opt/rmq/conf/plain_acl.yml" {
		t.Fatalf("ACL defaults: enable=%v file=%s", d.AclEnable, d.ACLFile())
	}
	c, _, err := Load(strings.NewReader("aclEnable=true\naclPlainFile=conf/acl/a.yml\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.AclEnable || c.ACLFile() != "/opt/rmq/conf/acl/a.yml" {
		t.Fatalf("relative aclPlainFile: enable=%v file=%s", c.AclEnable, c.ACLFile())
	}
	c, _, err = Load(strings.NewReader("aclEnable=true\naclPlainFile=/etc/rmq/plain_acl.yml\n"))
	if err != nil || c.ACLFile() != "/etc/rmq/plain_acl.yml" {
		t.Fatalf("absolute aclPlainFile: %v %v", c, err)
	}
	_, _, err = Load(strings.NewReader("aclEnable=true\naclPlainFile=\n"))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "aclPlainFile") {
		t.Fatalf("empty aclPlainFile: %v", err)
	}
	if _, err := NewLive(c).Update(map[string]string{"aclEnable": "false"}); err == nil {
		t.Fatal("aclEnable changed live")
	}
}

func TestConnectionLimitKeys(t *testing.T) {
	want := remoting.ServerConfig{IdleTimeout: 120 * time.Second, FrameTimeout: remoting.DefaultFrameTimeout,
		MaxConnections: remoting.DefaultMaxConnections, MaxConnectionsPerAddress: remoting.DefaultMaxConnectionsPerAddress,
		MaxQueuedBytesPerConnection: remoting.DefaultMaxQueuedBytesPerConnection}
	if got := Default().RemotingServerConfig(); !reflect.DeepEqual(got, want) {
		t.Fatalf("defaults %+v, want %+v", got, want)
	}
	c, warns, err := Load(strings.NewReader("serverChannelMaxIdleTimeSeconds=30\nserverFrameReadTimeoutMillis=5000\nserverMaxConnections=100\n" +
		"serverMaxConnectionsPerAddress=10\nserverMaxQueuedBytesPerConnection=1048576\nserverMaxQueuedBytesTotal=8388608\n"))
	if err != nil || len(warns) != 0 {
		t.Fatal(err, warns)
	}
	want = remoting.ServerConfig{IdleTimeout: 30 * time.Second, FrameTimeout: 5 * time.Second, MaxConnections: 100,
		MaxConnectionsPerAddress: 10, MaxQueuedBytesPerConnection: 1 << 20, MaxQueuedBytesTotal: 8 << 20}
	if got := c.RemotingServerConfig(); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// 0 turns idle closing off, as in Java.
	if c, _, err := Load(strings.NewReader("serverChannelMaxIdleTimeSeconds=0\n")); err != nil || c.RemotingServerConfig().IdleTimeout >= 0 {
		t.Fatalf("serverChannelMaxIdleTimeSeconds=0: %v, %v", c.RemotingServerConfig().IdleTimeout, err)
	}
	for conf, key := range map[string]string{
		"serverChannelMaxIdleTimeSeconds=-1":                                         "serverChannelMaxIdleTimeSeconds",
		"serverChannelMaxIdleTimeSeconds=2m":                                         "serverChannelMaxIdleTimeSeconds",
		"serverFrameReadTimeoutMillis=0":                                             "serverFrameReadTimeoutMillis",
		"serverMaxConnections=0":                                                     "serverMaxConnections",
		"serverMaxConnectionsPerAddress=70000":                                       "serverMaxConnectionsPerAddress",
		"serverMaxQueuedBytesPerConnection=-5":                                       "serverMaxQueuedBytesPerConnection",
		"serverMaxQueuedBytesTotal=1024":                                             "serverMaxQueuedBytesTotal",
		"serverMaxQueuedBytesPerConnection=1048576\nserverMaxQueuedBytesTotal=65536": "serverMaxQueuedBytesTotal",
	} {
		_, _, err := Load(strings.NewReader(conf))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: err %v does not name %s", conf, err, key)
		}
	}
}

func TestCheckCRCOnRead(t *testing.T) {
	if c := Default(); !c.CheckCRCOnRead || !c.StoreConfig().CheckCRCOnRead {
		t.Fatal("checkCRCOnRead is not on by default")
	}
	c, _, err := Load(strings.NewReader("checkCRCOnRead=false\n"))
	if err != nil || c.CheckCRCOnRead || c.StoreConfig().CheckCRCOnRead {
		t.Fatalf("checkCRCOnRead=false: %v, %+v", err, c)
	}
	if _, _, err := Load(strings.NewReader("checkCRCOnRead=sometimes\n")); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "checkCRCOnRead") {
		t.Fatalf("bad value: %v", err)
	}
}

func TestLoadTLSKeys(t *testing.T) {
	c, warns, err := Load(strings.NewReader(`tls.server.mode=enforcing
tls.server.need.client.auth=require
tls.server.certPath=/etc/rocketmq/tls/tls.crt
tls.server.keyPath=/etc/rocketmq/tls/tls.key
tls.server.keyPassword=secret
tls.server.trustCertPath=/etc/rocketmq/tls/ca.crt
tls.test.mode.enable=false
useTLS=true
tls.client.authServer=true
`))
	if err != nil || len(warns) != 0 {
		t.Fatalf("%v %v", err, warns)
	}
	s := c.TLS
	if s.Mode() != remoting.TLSEnforcing || s.ServerNeedClientAuth != "require" || s.ServerCertPath != "/etc/rocketmq/tls/tls.crt" ||
		s.TestModeEnable || !s.Enable || !s.ClientAuthServer {
		t.Errorf("TLS settings: %+v", s)
	}
	p := c.Properties()
	if p["tls.server.mode"] != "enforcing" || p["tls.enable"] != "true" || p["tls.server.keyPassword"] != "******" {
		t.Errorf("properties: mode %q enable %q password %q", p["tls.server.mode"], p["tls.enable"], p["tls.server.keyPassword"])
	}
	if d := Default().TLS; d.Mode() != remoting.TLSPermissive || !d.TestModeEnable || d.Enable {
		t.Errorf("defaults: %+v, want 4.9's (permissive, test mode, tls.enable=false)", d)
	}
	for conf, key := range map[string]string{
		"tls.server.mode=strict":            "tls.server.mode",
		"tls.server.need.client.auth=maybe": "tls.server.need.client.auth",
		"tls.enable=yes":                    "tls.enable",
		"tls.client.certPath=/c":            "tls.client.certPath",
	} {
		if _, _, err := Load(strings.NewReader(conf)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: err %v does not name %s", conf, err, key)
		}
	}
	if _, err := NewLive(Default()).Update(map[string]string{"tls.server.mode": "disabled"}); err == nil {
		t.Error("tls.server.mode changed while running")
	}
}

// Duration keys are parsed once into time.Duration in the unit broker.conf counts them
// in, and shown back in that unit; anything but a whole number is refused, naming the key.
func TestDurationKeysKeepTheirUnits(t *testing.T) {
	c, _, err := Load(strings.NewReader("slaveTimeout=500\nfileReservedTime=48\nserverChannelMaxIdleTimeSeconds=30\nshortPollingTimeMills=200\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.SlaveTimeout != 500*time.Millisecond || c.FileReservedTime != 48*time.Hour ||
		c.ServerChannelMaxIdleTime != 30*time.Second || c.ShortPollingTime != 200*time.Millisecond {
		t.Fatalf("parsed %v %v %v %v", c.SlaveTimeout, c.FileReservedTime, c.ServerChannelMaxIdleTime, c.ShortPollingTime)
	}
	p := c.Properties()
	for k, want := range map[string]string{"slaveTimeout": "500", "fileReservedTime": "48",
		"serverChannelMaxIdleTimeSeconds": "30", "shortPollingTimeMills": "200", "registerNameServerPeriod": "30000"} {
		if p[k] != want {
			t.Errorf("%s shown as %q, want %q", k, p[k], want)
		}
	}
	for _, bad := range []string{"slaveTimeout=5s", "fileReservedTime=1.5", "transactionTimeOut=9223372036854775807"} {
		if _, _, err := Load(strings.NewReader(bad + "\n")); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), strings.Split(bad, "=")[0]) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	// Every time.Duration field is a duration key (none is read as nanoseconds).
	d := Default()
	for _, k := range d.keys() {
		if _, ok := k.ptr.(*time.Duration); ok {
			t.Errorf("%s: a time.Duration without a unit", k.name)
		}
	}
}
