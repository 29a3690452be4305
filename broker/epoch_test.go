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
	"github.com/openrmq/rocketmq-operator/internal/testlog"
	"github.com/openrmq/rocketmq-operator/pkg/admin"
	"github.com/openrmq/rocketmq-operator/pkg/properties"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// reopen does what cmd/broker does when tb asks to be reopened: a clean stop, then a new
// broker on the same store with the config tb handed over.
func reopen(t *testing.T, tb *testBroker, opts Options) *testBroker {
	t.Helper()
	var next config.Config
	select {
	case next = <-tb.Reopened():
	case <-time.After(10 * time.Second):
		t.Fatal("the broker did not ask to be reopened")
	}
	tb.stop()
	opts.NoFastChannel = true
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	b, err := New(&next, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	nb := &testBroker{Broker: b, t: t, addr: tb.addr, cl: remoting.NewClient(remoting.ClientConfig{})}
	t.Cleanup(nb.stop)
	return nb
}

func (tb *testBroker) updateConfig(kv map[string]string) *remoting.Command {
	tb.t.Helper()
	return tb.invoke(remoting.UpdateBrokerConfig, nil, []byte(properties.Format(kv)))
}

func (tb *testBroker) runtimeInfo() map[string]string {
	tb.t.Helper()
	var kv struct {
		Table map[string]string `json:"table"`
	}
	if err := protocol.Decode(tb.invoke(remoting.GetBrokerRuntimeInfo, nil, nil).Body, &kv); err != nil {
		tb.t.Fatal(err)
	}
	return kv.Table
}

// TestFailoverPromoteFenceRejoin walks a group through a failover on loopback, with a
// name server: an ASYNC_MASTER writes messages its slave never gets, and is lost; the
// slave is promoted at run time with epoch 1; the old master, back with its old role, is
// refused by the name server and refuses writes; reconfigured as a slave it cuts the
// bytes the new master never had (logging their offsets), then replicates the new
// master's commitlog byte for byte.
func TestFailoverPromoteFenceRejoin(t *testing.T) {
	nsPort := freePort(t)
	nsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(nsPort))
	ns := startNameServer(t, nsPort)
	defer ns.Shutdown(context.Background())
	group := func(c *config.Config) {
		c.BrokerName, c.NamesrvAddr = "broker-f", nsAddr
		c.RegisterNameServerPeriod = time.Second
	}

	oldDir, newDir := t.TempDir(), t.TempDir()
	a := startBroker(t, oldDir, group)
	a.createTopic("F", 1)
	send := func(tb *testBroker, from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if resp := tb.sendV2("F", 0, "t", "m"+strconv.Itoa(i)); resp.Code != remoting.Success {
				t.Fatalf("send m%d: %v", i, resp)
			}
		}
	}
	send(a, 0, 10)
	b := startSlave(t, a, func(c *config.Config) { group(c); c.StorePathRootDir = newDir })
	waitFor(t, func() bool { return b.store.CommitLogMaxOffset() == a.store.CommitLogMaxOffset() })
	// A topic created just before the master is lost: its messages replicate before its
	// config does (every slaveSynchronizeInterval).
	b.haSync.Close()
	a.createTopic("Late", 2)
	if resp := a.sendV2("Late", 1, "t", "late"); resp.Code != remoting.Success {
		t.Fatalf("send: %v", resp)
	}
	waitFor(t, func() bool { return b.store.MaxOffsetInQueue("Late", 1) == 1 })
	b.stop()
	send(a, 10, 5) // never replicated
	// A consumer committed to the old master after the slave's last sync, up to m12, one
	// of the messages the new master never gets.
	a.offsets.Commit("g", "F", 0, 12)
	oldEnd := a.store.CommitLogMaxOffset()
	aConfig := a.Config()
	a.stop() // the master is lost

	// The slave comes back (its master gone) and is promoted with epoch 1.
	b = startSlave(t, a, func(c *config.Config) { group(c); c.StorePathRootDir = newDir })
	promotedAt := b.store.CommitLogMaxOffset()
	if resp := b.updateConfig(map[string]string{"brokerRole": "ASYNC_MASTER", "brokerId": "0", "masterEpoch": "0"}); resp.Code == remoting.Success {
		b.t.Fatalf("a promotion without a new epoch was accepted")
	}
	if resp := b.updateConfig(map[string]string{"brokerRole": "ASYNC_MASTER", "brokerId": "0", "masterEpoch": "1"}); resp.Code != remoting.Success {
		t.Fatalf("promotion: %v", resp)
	}
	b = reopen(t, b, Options{})
	if got, want := b.runtimeInfo()["epochHistory"], "1:"+strconv.FormatInt(promotedAt, 10); got != want {
		t.Fatalf("epochHistory = %q, want %q", got, want)
	}
	send(b, 100, 3)
	if resp := b.sendV2("Late", 1, "t", "late on the new master"); resp.Code != remoting.Success {
		t.Fatalf("the new master refuses the topic whose config it never synced: %v", resp)
	}
	if tc, _ := b.topics.Get("Late"); tc.WriteQueueNums != 2 {
		t.Fatalf("adopted topic %+v, want 2 queues", tc)
	}
	waitFor(t, func() bool { return masterAt(t, nsAddr, "broker-f") == b.Addr() })

	// The old master restarts with its old role: the name server refuses it, and so does
	// the broker refuse writes, as a slave's store does.
	var logs testlog.Buffer
	old := startBrokerWith(t, oldDir, func(c *config.Config) { *c = aConfig }, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if resp := old.sendV2("F", 0, "t", "to the fenced master"); resp.Code != remoting.ServiceNotAvailable {
		t.Fatalf("send to the fenced old master: %v", resp)
	}
	if got := masterAt(t, nsAddr, "broker-f"); got != b.Addr() {
		t.Fatalf("the name server routes to %s, want the new master %s", got, b.Addr())
	}
	if !strings.Contains(logs.String(), "fenced") || old.runtimeInfo()["fenced"] != "true" {
		t.Fatalf("the old master does not say it is fenced:\n%s", logs.String())
	}

	// Reconfigured as a slave it cuts its unreplicated tail, then follows the new master
	// (told its address as startSlave does: on random ports the HA port is not
	// listenPort+1).
	if resp := old.updateConfig(map[string]string{"brokerRole": "SLAVE", "brokerId": "1", "haMasterAddress": b.HAAddr(), "slaveReadEnable": "true"}); resp.Code != remoting.Success {
		t.Fatalf("demotion: %v", resp)
	}
	var rejoin testlog.Buffer
	for range 2 { // the new role, then the rejoin cut
		old = reopen(t, old, Options{Logger: slog.New(slog.NewTextHandler(&rejoin, nil))})
		old.haSync.SetMasterAddr(b.addr)
	}
	if l := rejoin.String(); !strings.Contains(l, "from="+strconv.FormatInt(promotedAt, 10)) ||
		!strings.Contains(l, "to="+strconv.FormatInt(oldEnd, 10)) {
		t.Fatalf("the cut is not logged with its offsets:\n%s", l)
	}
	waitFor(t, func() bool { return old.store.CommitLogMaxOffset() == b.store.CommitLogMaxOffset() })
	if got, want := old.runtimeInfo()["lastEpochCut"], strconv.FormatInt(promotedAt, 10)+"-"+strconv.FormatInt(oldEnd, 10); got != want {
		t.Fatalf("lastEpochCut = %q, want %q", got, want)
	}
	if got := old.runtimeInfo()["epochHistory"]; got != b.runtimeInfo()["epochHistory"] {
		t.Fatalf("the rejoined slave's history %q is not the master's", got)
	}
	waitFor(t, func() bool { return old.store.MaxOffsetInQueue("F", 0) == 13 })
	// The old master's offset is handed over, capped at what survived its cut (10): the
	// new master's 10, 11, 12 are other messages, m100 to m102.
	waitFor(t, func() bool { return b.offsets.Query("g", "F", 0) == 10 })
	resp := old.invoke(remoting.PullMessage, pullFields("g", "F", 0, 0, pullSubscription, "*"), nil)
	if resp.Code != remoting.Success {
		t.Fatalf("pull from the rejoined slave: %v", resp)
	}
	msgs := decodeAll(t, resp.Body)
	var bodies []string
	for _, m := range msgs {
		bodies = append(bodies, string(m.Body))
	}
	want := "m0 m1 m2 m3 m4 m5 m6 m7 m8 m9 m100 m101 m102"
	if got := strings.Join(bodies, " "); got != want {
		t.Fatalf("the rejoined slave serves %q, want %q", got, want)
	}
}

// masterAt is the address a name server routes brokerName's writes to.
func masterAt(t *testing.T, nsAddr, brokerName string) string {
	cl := remoting.NewClient(remoting.ClientConfig{})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	info, err := admin.New(cl).ClusterInfo(ctx, nsAddr)
	if err != nil {
		t.Fatal(err)
	}
	if bd := info.BrokerAddrTable[brokerName]; bd != nil {
		return bd.BrokerAddrs[protocol.MasterID]
	}
	return ""
}
