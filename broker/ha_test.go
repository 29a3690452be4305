package broker

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/broker/metadata"
	"github.com/openrmq/rocketmq-operator/broker/schedule"
	"github.com/openrmq/rocketmq-operator/internal/testlog"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// startSlave runs a SLAVE of master, replicating from its HA address and syncing
// its metadata every 100 ms.
func startSlave(t *testing.T, master *testBroker, mutate func(*config.Config)) *testBroker {
	t.Helper()
	s := startBroker(t, "", func(c *config.Config) {
		c.BrokerRole, c.BrokerID = config.Slave, 1
		c.HaMasterAddress = master.HAAddr()
		c.SlaveSynchronizeInterval = 100 * time.Millisecond
		c.SlaveReadEnable = true
		if mutate != nil {
			mutate(c)
		}
	})
	s.haSync.SetMasterAddr(master.addr) // the name server's masterAddr, without one
	return s
}

// TestMasterSlaveReplication: a slave copies the master's commitlog (its consume
// queues follow), topics, consumer offsets, groups and delay offsets; it refuses
// sends and serves pulls.
func TestMasterSlaveReplication(t *testing.T) {
	m := startBroker(t, "", nil)
	if m.HAAddr() == "" {
		t.Fatal("a master has no HA server")
	}
	m.createTopic("HA1", 2)
	for i := range 6 {
		if resp := m.sendV2("HA1", i%2, "t", "m"+strconv.Itoa(i)); resp.Code != remoting.Success {
			t.Fatalf("send: %v", resp)
		}
	}
	m.offsets.Commit("g1", "HA1", 1, 2)
	gc := protocol.NewSubscriptionGroupConfig("g1")
	gc.RetryMaxTimes = 3
	if err := m.groups.Put(gc); err != nil {
		t.Fatal(err)
	}

	s := startSlave(t, m, nil)
	if s.HAAddr() != "" {
		t.Fatal("a slave runs an HA server")
	}
	waitFor(t, func() bool { return s.store.MaxOffsetInQueue("HA1", 0) == 3 && s.store.MaxOffsetInQueue("HA1", 1) == 3 })
	waitFor(t, func() bool {
		_, ok := s.topics.Get("HA1")
		g, gok := s.groups.Get("g1")
		return ok && gok && g.RetryMaxTimes == 3 && s.offsets.Query("g1", "HA1", 1) == 2
	})
	delayFile := filepath.Join(metadata.ConfigDir(s.cfg.Get().StorePathRootDir), schedule.OffsetFile)
	waitFor(t, func() bool { _, err := os.Stat(delayFile); return err == nil })

	// Later writes follow.
	if resp := m.sendV2("HA1", 0, "t", "late"); resp.Code != remoting.Success {
		t.Fatalf("send: %v", resp)
	}
	waitFor(t, func() bool { return s.store.MaxOffsetInQueue("HA1", 0) == 4 })

	if resp := s.sendV2("HA1", 0, "t", "to-slave"); resp.Code != remoting.ServiceNotAvailable {
		t.Fatalf("send to the slave: %v", resp)
	}
	resp := s.invoke(remoting.PullMessage, pullFields("g2", "HA1", 0, 0, pullSubscription, "*"), nil)
	if resp.Code != remoting.Success {
		t.Fatalf("pull from the slave: %v", resp)
	}
	msgs := decodeAll(t, resp.Body)
	if len(msgs) != 4 || string(msgs[3].Body) != "late" || msgs[0].StoreHost != m.storeHost {
		t.Fatalf("pulled %d messages from the slave", len(msgs))
	}

	// Without slaveReadEnable a slave sends readers back to the master (4.9.7).
	s.cfg.Update(map[string]string{"slaveReadEnable": "false"})
	resp = s.invoke(remoting.PullMessage, pullFields("g2", "HA1", 0, 0, pullSubscription, "*"), nil)
	if resp.Code != remoting.PullRetryImmediately || resp.Field("suggestWhichBrokerId") != "0" {
		t.Fatalf("pull from a slave without slaveReadEnable: %v", resp)
	}
}

// TestSyncMasterWithoutSlave: a SYNC_MASTER stores a message but answers
// SLAVE_NOT_AVAILABLE without a slave, unless the message says WAIT=false; with a
// slave it answers SUCCESS. The log says where replication stood.
func TestSyncMasterWithoutSlave(t *testing.T) {
	var logs testlog.Buffer
	m := startBrokerWith(t, "", func(c *config.Config) { c.BrokerRole = config.SyncMaster },
		Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	m.createTopic("HA2", 1)
	resp := m.sendV2("HA2", 0, "t", "m0")
	if resp.Code != remoting.SlaveNotAvailable || resp.Field("queueOffset") != "0" || resp.Field("msgId") == "" {
		t.Fatalf("send without slave: %v", resp)
	}
	if l := logs.String(); !strings.Contains(l, `msg="send answered without a slave's acknowledgement" code=11`) ||
		!strings.Contains(l, "slaves=0") {
		t.Fatalf("the broker's log says nothing of the refused send:\n%s", l)
	}
	waitFor(t, func() bool { return m.store.MaxOffsetInQueue("HA2", 0) == 1 })

	props, _ := message.EncodeProperties(map[string]string{message.PropertyWaitStoreMsgOK: "false"})
	resp = m.invoke(remoting.SendMessageV2, map[string]string{
		"a": "pg", "b": "HA2", "c": "TBW102", "d": "4", "e": "0", "f": "0",
		"g": strconv.FormatInt(time.Now().UnixMilli(), 10), "h": "0", "i": props, "j": "0", "k": "false", "m": "false",
	}, []byte("nowait"))
	if resp.Code != remoting.Success {
		t.Fatalf("send with WAIT=false: %v", resp)
	}

	startSlave(t, m, nil)
	waitFor(t, func() bool {
		resp := m.sendV2("HA2", 0, "t", "with-slave")
		return resp.Code == remoting.Success
	})
}

// TestSlaveResumesAfterRestart: a restarted slave reports its max offset and the
// master continues from there.
func TestSlaveResumesAfterRestart(t *testing.T) {
	m := startBroker(t, "", nil)
	m.createTopic("HA3", 1)
	send := func(body string) {
		if resp := m.sendV2("HA3", 0, "t", body); resp.Code != remoting.Success {
			t.Fatalf("send: %v", resp)
		}
	}
	send("a")
	dir := t.TempDir()
	slaveConf := func(c *config.Config) {
		c.BrokerRole, c.BrokerID, c.HaMasterAddress, c.SlaveReadEnable = config.Slave, 1, m.HAAddr(), true
	}
	// The master's broker address, as startSlave gives it: the slave reads the master's
	// epoch history there before it replicates.
	s := startBroker(t, dir, slaveConf)
	s.haSync.SetMasterAddr(m.addr)
	waitFor(t, func() bool { return s.store.MaxOffsetInQueue("HA3", 0) == 1 })
	s.stop()

	send("b")
	send("c")
	s = startBroker(t, dir, slaveConf)
	s.haSync.SetMasterAddr(m.addr)
	waitFor(t, func() bool { return s.store.MaxOffsetInQueue("HA3", 0) == 3 })
	if got, want := s.store.CommitLogMaxOffset(), m.store.CommitLogMaxOffset(); got != want {
		t.Fatalf("slave commitlog ends at %d, master's at %d", got, want)
	}
}

// TestSyncMasterAcksAlone: with syncMasterAcksAlone a SYNC_MASTER without a slave answers
// SEND_OK; with a slave it still waits for it.
func TestSyncMasterAcksAlone(t *testing.T) {
	m := startBroker(t, "", func(c *config.Config) { c.BrokerRole, c.SyncMasterAcksAlone = config.SyncMaster, true })
	m.createTopic("HA5", 1)
	if resp := m.sendV2("HA5", 0, "t", "alone"); resp.Code != remoting.Success {
		t.Fatalf("send without a slave: %v", resp)
	}
	s := startSlave(t, m, nil)
	waitFor(t, func() bool { return m.haServer.Connections() == 1 })
	if resp := m.sendV2("HA5", 0, "t", "with-slave"); resp.Code != remoting.Success {
		t.Fatalf("send with a slave: %v", resp)
	}
	if got, want := s.store.CommitLogMaxOffset(), m.store.CommitLogMaxOffset(); got != want {
		t.Fatalf("a send was answered before the slave had it: slave at %d, master at %d", got, want)
	}
}
