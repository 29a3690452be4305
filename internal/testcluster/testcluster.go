// Package testcluster runs a name server and one master broker in-process on loopback,
// with small store files, for tests of the components that talk to them (the client,
// rmqbench, the operator's admin calls).
package testcluster

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/openrmq/rocketmq-operator/broker"
	brokerconfig "github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/namesrv"
)

// Cluster is a running name server and broker.
type Cluster struct {
	NamesrvAddr string
	BrokerAddr  string
	ClusterName string
	BrokerName  string
}

// T is the part of testing.TB the cluster needs; Ginkgo's GinkgoT() has it too.
type T interface {
	Helper()
	TempDir() string
	Fatal(args ...any)
	Cleanup(func())
}

// Start runs the pair until the test ends. edit, when not nil, adjusts the broker's
// configuration (cluster name, auto-creation, ...) before it starts.
func Start(t T, edit func(*brokerconfig.Config)) *Cluster {
	t.Helper()
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)

	nc := namesrv.DefaultConfig()
	nc.BindAddress, nc.ListenPort, nc.Logger = "127.0.0.1", 0, quiet
	nc.KVConfigPath = filepath.Join(dir, "namesrv", "kvConfig.json")
	ns, err := namesrv.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(ns.Shutdown) })

	b := startBroker(t, dir, ns.Addr(), "broker-a", edit)
	return &Cluster{NamesrvAddr: ns.Addr(), BrokerAddr: b.Addr(), ClusterName: b.cluster, BrokerName: b.name}
}

// Broker is one more broker of a Cluster (AddBroker).
type Broker struct {
	Addr string
	Name string
	stop func()
}

// AddBroker starts another master broker, brokerName name, registering with c's name
// server in c's cluster (edit may change both), until the test ends or Stop is called: a
// second broker group, as when a Broker resource scales out.
func (c *Cluster) AddBroker(t T, name string, edit func(*brokerconfig.Config)) *Broker {
	t.Helper()
	b := startBroker(t, t.TempDir(), c.NamesrvAddr, name, func(bc *brokerconfig.Config) {
		bc.BrokerClusterName = c.ClusterName
		if edit != nil {
			edit(bc)
		}
	})
	return &Broker{Addr: b.Addr(), Name: b.name, stop: b.stop}
}

// Stop shuts the broker down (it unregisters from the name server); later calls do nothing.
func (b *Broker) Stop() { b.stop() }

type started struct {
	*broker.Broker
	cluster, name string
	stop          func()
}

func startBroker(t T, dir, namesrvAddr, name string, edit func(*brokerconfig.Config)) started {
	t.Helper()
	bc := brokerconfig.Default()
	bc.BrokerName, bc.BrokerIP1, bc.ListenPort = name, "127.0.0.1", freePort(t)
	bc.NamesrvAddr = namesrvAddr
	bc.StorePathRootDir = filepath.Join(dir, "broker")
	bc.MappedFileSizeCommitLog = 8 << 20
	bc.MappedFileSizeConsumeQueue = 1000 * 20
	bc.MaxHashSlotNum = 1000
	bc.MaxIndexNum = 4000
	if edit != nil {
		edit(bc)
	}
	b, err := broker.New(bc, broker.Options{NoFastChannel: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stopOnce := func() { once.Do(func() { stop(b.Shutdown) }) }
	t.Cleanup(stopOnce)
	return started{Broker: b, cluster: bc.BrokerClusterName, name: bc.BrokerName, stop: stopOnce}
}

// EnableACL turns on the broker's plain ACL (aclEnable=true) with rules as its
// plain_acl.yml, in a file of the test's; call it from Start's edit. It returns the file:
// WriteACL changes it, and the broker picks the change up within its 5 s poll.
func EnableACL(t T, bc *brokerconfig.Config, rules string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "plain_acl.yml")
	WriteACL(t, file, rules)
	bc.AclEnable, bc.AclPlainFile = true, file
	return file
}

// WriteACL replaces the content of an ACL file at once (written aside, then renamed), so
// the broker never reads half of it.
func WriteACL(t T, file, rules string) {
	t.Helper()
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

func stop(shutdown func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = shutdown(ctx)
}

// freePort returns a loopback port free now; the broker also takes port+1 for
// replication, so both must be free.
func freePort(t T) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if next, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+1))); err == nil {
			next.Close()
			return port
		}
	}
	t.Fatal("no free pair of loopback ports")
	return 0
}
