package broker

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/namesrv"
	"github.com/openrmq/rocketmq-operator/pkg/admin"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// startNameServer runs a name server on 127.0.0.1:port.
func startNameServer(t *testing.T, port int) *namesrv.NameServer {
	t.Helper()
	cfg := namesrv.DefaultConfig()
	cfg.BindAddress, cfg.ListenPort = "127.0.0.1", port
	cfg.KVConfigPath = t.TempDir() + "/kv.json"
	cfg.Logger = slog.New(slog.DiscardHandler)
	ns, err := namesrv.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	return ns
}

// knows reports whether the name server at addr has brokerName in its cluster info.
func knows(t *testing.T, addr, brokerName string) bool {
	cl := remoting.NewClient(remoting.ClientConfig{})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
	return err == nil && resp.Code == remoting.Success && strings.Contains(string(resp.Body), brokerName)
}

// waitKnown waits up to within for the name server to know the broker and returns how long it took.
func waitKnown(t *testing.T, addr, brokerName string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for !knows(t, addr, brokerName) {
		if time.Since(start) > within {
			t.Fatalf("name server %s does not know %s after %v", addr, brokerName, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// TestRegistrationRetriedWithinSeconds: a broker that starts before its name server (on
// Kubernetes, before the name servers' DNS names exist) is registered a second or two
// after the name server comes up, not at the next 30 s period; and a name server that
// restarts empty gets the broker back as soon as the broker sees its connection close.
func TestRegistrationRetriedWithinSeconds(t *testing.T) {
	port := freePort(t)
	nsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	tb := startBroker(t, "", func(c *config.Config) {
		c.NamesrvAddr = nsAddr
		c.RegisterNameServerPeriod = 30 * time.Second
	})
	if err := tb.Ready(); err == nil {
		t.Fatal("ready without any name server")
	}
	time.Sleep(1500 * time.Millisecond) // a few failed attempts: the backoff grows

	ns := startNameServer(t, port)
	took := waitKnown(t, nsAddr, "broker-test", 5*time.Second)
	t.Logf("registered %v after the name server started", took.Round(time.Millisecond))
	if err := tb.Ready(); err != nil {
		t.Errorf("registered but not ready: %v", err)
	}

	// The name server restarts and knows nothing; the broker's connection closes.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ns.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	ns = startNameServer(t, port)
	defer ns.Shutdown(context.Background())
	took = waitKnown(t, nsAddr, "broker-test", 5*time.Second)
	t.Logf("registered again %v after the name server restarted", took.Round(time.Millisecond))
}

// TestReadyNeedsARegistration: Ready fails until a name server holds the registration,
// and a slave's also until it replicates from its master.
func TestReadyNeedsARegistration(t *testing.T) {
	port := freePort(t)
	nsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ns := startNameServer(t, port)
	defer ns.Shutdown(context.Background())
	master := startBroker(t, "", func(c *config.Config) { c.NamesrvAddr = nsAddr })
	if err := master.Ready(); err != nil {
		t.Fatalf("master registered at start, Ready = %v", err)
	}
	slave := startBroker(t, "", func(c *config.Config) {
		c.NamesrvAddr = nsAddr
		c.BrokerRole, c.BrokerID = config.Slave, 1
		c.HaMasterAddress = "127.0.0.1:1" // nothing there
	})
	if err := slave.Ready(); err != errNoMaster {
		t.Errorf("slave without its master: Ready = %v, want %v", err, errNoMaster)
	}
}

// TestAdvertisedListenPortIsAnnounced: a broker reached through a port that forwards to
// its listenPort (a Kubernetes node port) registers brokerIP1:advertisedListenPort with the
// name servers, and its message ids name that address, while it serves on listenPort.
func TestAdvertisedListenPortIsAnnounced(t *testing.T) {
	port := freePort(t)
	nsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ns := startNameServer(t, port)
	defer ns.Shutdown(context.Background())
	announced := freePort(t) // nothing listens there: only the announcement names it
	tb := startBroker(t, "", func(c *config.Config) {
		c.NamesrvAddr = nsAddr
		c.AdvertisedListenPort = announced
	})
	waitKnown(t, nsAddr, "broker-test", 5*time.Second)

	want := net.JoinHostPort("127.0.0.1", strconv.Itoa(announced))
	cl := remoting.NewClient(remoting.ClientConfig{})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := admin.New(cl).ClusterInfo(ctx, nsAddr)
	if err != nil {
		t.Fatal(err)
	}
	if bd := info.BrokerAddrTable["broker-test"]; bd == nil || bd.BrokerAddrs[0] != want {
		t.Fatalf("registered %+v, want brokerAddrs[0] = %s", bd, want)
	}
	if tb.Addr() != want {
		t.Errorf("Addr() = %s, want %s", tb.Addr(), want)
	}

	// Served on listenPort (tb.invoke dials it), the message id names the announced address.
	tb.createTopic("Announced", 1)
	resp := tb.sendV2("Announced", 0, "T", "body")
	host, _, err := message.ParseOffsetMsgID(resp.Field("msgId"))
	if resp.Code != remoting.Success || err != nil || host.String() != want {
		t.Errorf("send: code %d, msgId %s names %v (%v), want %s", resp.Code, resp.Field("msgId"), host, err, want)
	}
}
