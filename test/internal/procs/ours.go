package procs

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
)

// OurBrokerReadyLine is what bin/broker prints once it listens and has registered.
const OurBrokerReadyLine = "boot success"

// OurBroker is a running bin/broker (our broker).
type OurBroker struct {
	*Proc
	Addr     string // 127.0.0.1:listenPort
	Port     int    // listenPort; the fast (VIP) channel is Port-2
	FastAddr string // 127.0.0.1:listenPort-2
	Cluster  string
	Name     string
	ConfPath string
	Dir      string
}

// StartOurBroker starts bin/broker (bin is its path) as a master on free loopback ports
// (listenPort and the fast channel listenPort-2) with its store under dir, registered with
// o.NamesrvAddr, and waits until it says it booted and accepts connections on listenPort.
// The broker.conf uses the Java key names; o.Conf overrides the defaults written here.
func StartOurBroker(ctx context.Context, bin, dir string, o BrokerOpts) (*OurBroker, error) {
	if o.NamesrvAddr == "" {
		return nil, fmt.Errorf("procs: StartOurBroker: no name server address")
	}
	if o.Cluster == "" {
		o.Cluster = "DefaultCluster"
	}
	if o.Name == "" {
		o.Name = "broker-a"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := FreePortWith(-2, +1)
	if err != nil {
		return nil, err
	}
	store := filepath.Join(dir, "store")
	conf := map[string]string{
		"brokerClusterName":          o.Cluster,
		"brokerName":                 o.Name,
		"brokerId":                   "0",
		"brokerIP1":                  "127.0.0.1",
		"brokerIP2":                  "127.0.0.1",
		"listenPort":                 fmt.Sprint(port),
		"haListenPort":               fmt.Sprint(port + 1),
		"storePathRootDir":           store,
		"storePathCommitLog":         filepath.Join(store, "commitlog"),
		"mappedFileSizeCommitLog":    fmt.Sprint(64 << 20),
		"mappedFileSizeConsumeQueue": fmt.Sprint(30000 * 20),
		"registerNameServerPeriod":   "10000",
		// As the Java broker's: a loaded 2-core CI machine must not answer "broker busy".
		"waitTimeMillsInSendQueue":    "3000",
		"osPageCacheBusyTimeOutMills": "5000",
		"autoCreateTopicEnable":       "true",
		"flushDiskType":               "ASYNC_FLUSH",
	}
	maps.Copy(conf, o.Conf)
	confPath := filepath.Join(dir, "broker.conf")
	if err := writeConf(confPath, conf); err != nil {
		return nil, err
	}
	p, err := Start(Spec{
		Name: "broker", Path: bin, Args: []string{"-n", o.NamesrvAddr, "-c", confPath},
		Dir: dir, LogPath: filepath.Join(dir, "broker.log"),
	})
	if err != nil {
		return nil, err
	}
	b := &OurBroker{
		Proc: p, Addr: fmt.Sprintf("127.0.0.1:%d", port), Port: port, FastAddr: fmt.Sprintf("127.0.0.1:%d", port-2),
		Cluster: o.Cluster, Name: o.Name, ConfPath: confPath, Dir: dir,
	}
	if err := waitReady(ctx, p, OurBrokerReadyLine, b.Addr); err != nil {
		p.Kill()
		return nil, err
	}
	return b, nil
}
