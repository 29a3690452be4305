package config

import (
	"errors"
	"strings"
	"testing"
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
	if c.BrokerName != "broker-a" || c.FileReservedTime != 48 || c.StorePathRootDir != "/tmp/store-a" || c.AutoCreateTopicEnable {
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
	} {
		_, _, err := Load(strings.NewReader(conf))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: err %v does not name %s", conf, err, key)
		}
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
