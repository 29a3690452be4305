package namesrv

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

func TestRegisterRouteAndUnregister(t *testing.T) {
	ns := startNameServer(t, testConfig(t.TempDir()))
	cl := newClient(t)
	b := fakeBroker{cluster: "DefaultCluster", name: "broker-a", addr: "10.0.0.1:10911", ha: "10.0.0.1:10912",
		topics: topics("TopicA", protocol.DefaultTopic)}
	resp := b.register(t, cl, ns.Addr(), false)
	if resp.Field("masterAddr") != "" || resp.Field("haServerAddr") != "" {
		t.Errorf("master got masterAddr %q haServerAddr %q, want empty", resp.Field("masterAddr"), resp.Field("haServerAddr"))
	}

	rd, resp := getRoute(t, cl, ns.Addr(), "TopicA")
	if rd == nil {
		t.Fatalf("no route: %d %q", resp.Code, resp.Remark)
	}
	want := `{"queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],` +
		`"brokerDatas":[{"cluster":"DefaultCluster","brokerName":"broker-a","brokerAddrs":{"0":"10.0.0.1:10911"}}],"filterServerTable":{}}`
	if string(resp.Body) != want {
		t.Errorf("route JSON\n got %s\nwant %s", resp.Body, want)
	}

	_, resp = getRoute(t, cl, ns.Addr(), "Nope")
	if resp.Code != remoting.TopicNotExist || resp.Remark != "No topic route info in name server for the topic: Nope" {
		t.Errorf("missing topic: code %d remark %q", resp.Code, resp.Remark)
	}

	mustSucceed(t, invoke(t, cl, ns.Addr(), remoting.UnregisterBroker, &protocol.UnregisterBrokerRequestHeader{
		BrokerName: b.name, BrokerAddr: b.addr, ClusterName: b.cluster, BrokerID: 0}, nil))
	if rd, _ := getRoute(t, cl, ns.Addr(), "TopicA"); rd != nil {
		t.Errorf("route after unregister: %+v", rd)
	}
	if ci := clusterInfo(t, cl, ns.Addr()); len(ci.BrokerAddrTable) != 0 || len(ci.ClusterAddrTable) != 0 {
		t.Errorf("cluster info after unregister: %+v", ci)
	}
}

func TestClusterInfoAndTopicLists(t *testing.T) {
	ns := startNameServer(t, testConfig(t.TempDir()))
	cl := newClient(t)
	fakeBroker{cluster: "c1", name: "broker-a", addr: "10.0.0.1:10911", topics: topics("T1", "T2")}.register(t, cl, ns.Addr(), false)
	fakeBroker{cluster: "c2", name: "broker-b", addr: "10.0.0.2:10911", topics: topics("T2", "T3")}.register(t, cl, ns.Addr(), true)

	ci := clusterInfo(t, cl, ns.Addr())
	if got := ci.ClusterAddrTable["c1"]; !slices.Equal(got, []string{"broker-a"}) {
		t.Errorf("cluster c1 = %v", got)
	}
	if got := ci.BrokerAddrTable["broker-b"]; got == nil || got.BrokerAddrs[0] != "10.0.0.2:10911" || got.Cluster != "c2" {
		t.Errorf("broker-b = %+v", got)
	}

	list := func(code int16, hdr any) []string {
		var tl protocol.TopicList
		resp := mustSucceed(t, invoke(t, cl, ns.Addr(), code, hdr, nil))
		if err := protocol.Decode(resp.Body, &tl); err != nil {
			t.Fatal(err)
		}
		return tl.TopicList
	}
	if got := list(remoting.GetAllTopicListFromNameServer, nil); !slices.Equal(got, []string{"T1", "T2", "T3"}) {
		t.Errorf("all topics = %v", got)
	}
	if got := list(remoting.GetTopicsByCluster, &protocol.GetTopicsByClusterRequestHeader{Cluster: "c2"}); !slices.Equal(got, []string{"T2", "T3"}) {
		t.Errorf("topics of c2 = %v", got)
	}
	if got := list(remoting.GetSystemTopicListFromNameServer, nil); !slices.Equal(got, []string{"broker-a", "broker-b", "c1", "c2"}) {
		t.Errorf("system topics = %v", got)
	}

	rd, _ := getRoute(t, cl, ns.Addr(), "T2")
	if rd == nil || len(rd.QueueDatas) != 2 || len(rd.BrokerDatas) != 2 {
		t.Fatalf("T2 route = %+v", rd)
	}

	// Delete in one cluster, then everywhere.
	mustSucceed(t, invoke(t, cl, ns.Addr(), remoting.DeleteTopicInNameServer, &protocol.DeleteTopicFromNamesrvRequestHeader{Topic: "T2", ClusterName: "c1"}, nil))
	if rd, _ := getRoute(t, cl, ns.Addr(), "T2"); rd == nil || len(rd.QueueDatas) != 1 || rd.QueueDatas[0].BrokerName != "broker-b" {
		t.Errorf("T2 after delete in c1 = %+v", rd)
	}
	mustSucceed(t, invoke(t, cl, ns.Addr(), remoting.DeleteTopicInNameServer, &protocol.DeleteTopicFromNamesrvRequestHeader{Topic: "T2"}, nil))
	if rd, _ := getRoute(t, cl, ns.Addr(), "T2"); rd != nil {
		t.Errorf("T2 after delete = %+v", rd)
	}
}

func TestSlaveRegistrationGetsMaster(t *testing.T) {
	ns := startNameServer(t, testConfig(t.TempDir()))
	masterCl, slaveCl := newClient(t), newClient(t)
	master := fakeBroker{cluster: "c", name: "broker-a", addr: "10.0.0.1:10911", ha: "10.0.0.1:10912", topics: topics("T")}
	slave := fakeBroker{cluster: "c", name: "broker-a", addr: "10.0.0.2:10911", ha: "10.0.0.2:10912", id: 1, topics: topics("T", "SlaveOnly")}

	if resp := slave.register(t, slaveCl, ns.Addr(), false); resp.Field("masterAddr") != "" {
		t.Errorf("slave before master: masterAddr %q", resp.Field("masterAddr"))
	}
	master.register(t, masterCl, ns.Addr(), false)
	resp := slave.register(t, slaveCl, ns.Addr(), false)
	if resp.Field("masterAddr") != master.addr || resp.Field("haServerAddr") != master.ha {
		t.Errorf("slave got masterAddr %q haServerAddr %q", resp.Field("masterAddr"), resp.Field("haServerAddr"))
	}
	// A slave's topic table is not routed: only its master's is.
	if rd, _ := getRoute(t, masterCl, ns.Addr(), "SlaveOnly"); rd != nil {
		t.Errorf("slave-only topic routed: %+v", rd)
	}

	// The master leaves: its slave stays, and so does the route through the group.
	masterCl.Close()
	eventually(t, "master removed", func() bool {
		bd := clusterInfo(t, slaveCl, ns.Addr()).BrokerAddrTable["broker-a"]
		return bd != nil && bd.BrokerAddrs[0] == "" && bd.BrokerAddrs[1] == slave.addr
	})
	rd, _ := getRoute(t, slaveCl, ns.Addr(), "T")
	if rd == nil || rd.BrokerDatas[0].BrokerAddrs[1] != slave.addr {
		t.Errorf("route after master left = %+v", rd)
	}
}

func TestExpiryByConnectionClose(t *testing.T) {
	ns := startNameServer(t, testConfig(t.TempDir()))
	cl, observer := newClient(t), newClient(t)
	fakeBroker{cluster: "c", name: "broker-a", addr: "10.0.0.1:10911", topics: topics("T")}.register(t, cl, ns.Addr(), false)
	if rd, _ := getRoute(t, observer, ns.Addr(), "T"); rd == nil {
		t.Fatal("no route")
	}
	cl.Close()
	eventually(t, "route gone", func() bool { rd, _ := getRoute(t, observer, ns.Addr(), "T"); return rd == nil })
	if ci := clusterInfo(t, observer, ns.Addr()); len(ci.BrokerAddrTable) != 0 {
		t.Errorf("cluster info after close: %+v", ci)
	}
}

func TestExpiryByTimeout(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.ScanNotActiveBrokerInterval = 50e6
	cfg.BrokerChannelExpiredTime = 300e6
	ns := startNameServer(t, cfg)
	cl, observer := newClient(t), newClient(t)
	b := fakeBroker{cluster: "c", name: "broker-a", addr: "10.0.0.1:10911", topics: topics("T")}
	b.register(t, cl, ns.Addr(), false)
	conn, err := cl.Conn(context.Background(), ns.Addr())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "expiry", func() bool { rd, _ := getRoute(t, observer, ns.Addr(), "T"); return rd == nil })
	// The name server closes the silent broker's connection; a new registration works.
	eventually(t, "connection closed", func() bool { return conn.Err() != nil })
	b.register(t, cl, ns.Addr(), false)
	if rd, _ := getRoute(t, observer, ns.Addr(), "T"); rd == nil {
		t.Error("no route after re-registration")
	}
}

func TestQueryDataVersion(t *testing.T) {
	ns := startNameServer(t, testConfig(t.TempDir()))
	cl := newClient(t)
	v1 := protocol.DataVersion{Counter: 3, Timestamp: 1700000000000}
	b := fakeBroker{cluster: "c", name: "broker-a", addr: "10.0.0.1:10911", topics: topics("T"), version: v1}
	hdr := &protocol.QueryDataVersionRequestHeader{BrokerName: b.name, BrokerAddr: b.addr, ClusterName: b.cluster}
	query := func(v protocol.DataVersion) *remoting.Command {
		return mustSucceed(t, invoke(t, cl, ns.Addr(), remoting.QueryDataVersion, hdr, protocol.MustEncode(v)))
	}
	if resp := query(v1); resp.Field("changed") != "true" || resp.Body != nil {
		t.Errorf("unknown broker: changed=%q body=%s", resp.Field("changed"), resp.Body)
	}
	b.register(t, cl, ns.Addr(), false)
	resp := query(v1)
	if resp.Field("changed") != "false" {
		t.Errorf("same version: changed=%q", resp.Field("changed"))
	}
	var got protocol.DataVersion
	if err := protocol.Decode(resp.Body, &got); err != nil || got != v1 {
		t.Errorf("version body %s (%v)", resp.Body, err)
	}
	if resp := query(v1.Next()); resp.Field("changed") != "true" {
		t.Errorf("new version: changed=%q", resp.Field("changed"))
	}

	// A changed version replaces the topic table's queues; the same one does not.
	b.topics = topics("T")
	b.topics["T"].WriteQueueNums = 8
	b.register(t, cl, ns.Addr(), false)
	if rd, _ := getRoute(t, cl, ns.Addr(), "T"); rd.QueueDatas[0].WriteQueueNums != 4 {
		t.Errorf("same version changed queues: %+v", rd.QueueDatas[0])
	}
	b.version = v1.Next()
	b.register(t, cl, ns.Addr(), false)
	if rd, _ := getRoute(t, cl, ns.Addr(), "T"); rd.QueueDatas[0].WriteQueueNums != 8 {
		t.Errorf("new version kept queues: %+v", rd.QueueDatas[0])
	}
}

func TestWritePerm(t *testing.T) {
	ns := startNameServer(t, testConfig(t.TempDir()))
	cl := newClient(t)
	fakeBroker{cluster: "c", name: "broker-a", addr: "10.0.0.1:10911", topics: topics("T1", "T2")}.register(t, cl, ns.Addr(), false)
	resp := mustSucceed(t, invoke(t, cl, ns.Addr(), remoting.WipeWritePermOfBroker, &protocol.WipeWritePermOfBrokerRequestHeader{BrokerName: "broker-a"}, nil))
	if resp.Field("wipeTopicCount") != "2" {
		t.Errorf("wipeTopicCount = %q", resp.Field("wipeTopicCount"))
	}
	if rd, _ := getRoute(t, cl, ns.Addr(), "T1"); rd.QueueDatas[0].Perm != protocol.PermRead {
		t.Errorf("perm after wipe = %d", rd.QueueDatas[0].Perm)
	}
	resp = mustSucceed(t, invoke(t, cl, ns.Addr(), remoting.AddWritePermOfBroker, &protocol.AddWritePermOfBrokerRequestHeader{BrokerName: "broker-a"}, nil))
	if resp.Field("addTopicCount") != "2" {
		t.Errorf("addTopicCount = %q", resp.Field("addTopicCount"))
	}
	if rd, _ := getRoute(t, cl, ns.Addr(), "T1"); rd.QueueDatas[0].Perm != protocol.PermRead|protocol.PermWrite {
		t.Errorf("perm after add = %d", rd.QueueDatas[0].Perm)
	}
}

func TestBadInput(t *testing.T) {
	ns := startNameServer(t, testConfig(t.TempDir()))
	cl := newClient(t)
	hdr := &protocol.RegisterBrokerRequestHeader{BrokerName: "b", BrokerAddr: "1.2.3.4:1", ClusterName: "c", HaServerAddr: ""}
	for _, tc := range []struct {
		name       string
		compressed bool
		body       []byte
	}{
		{"json", false, []byte("{not json")},
		{"compressed", true, []byte("not zlib")},
		{"truncated", true, mustCompressed(t)[:20]},
	} {
		hdr.Compressed = tc.compressed
		resp := invoke(t, cl, ns.Addr(), remoting.RegisterBroker, hdr, tc.body)
		if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "RegisterBrokerBody") {
			t.Errorf("%s: code %d remark %q", tc.name, resp.Code, resp.Remark)
		}
	}
	hdr.BrokerAddr, hdr.Compressed = "", false
	if resp := invoke(t, cl, ns.Addr(), remoting.RegisterBroker, hdr, nil); resp.Code != remoting.SystemError {
		t.Errorf("empty brokerAddr: code %d remark %q", resp.Code, resp.Remark)
	}
	resp := invoke(t, cl, ns.Addr(), remoting.GetRouteInfoByTopic, nil, nil)
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "topic") {
		t.Errorf("missing header: code %d remark %q", resp.Code, resp.Remark)
	}
	crc := &protocol.RegisterBrokerRequestHeader{BrokerName: "b", BrokerAddr: "1.2.3.4:1", ClusterName: "c", BodyCrc32: 12345}
	if resp := invoke(t, cl, ns.Addr(), remoting.RegisterBroker, crc, []byte("{}")); resp.Code != remoting.SystemError || resp.Remark != "crc32 not match" {
		t.Errorf("crc mismatch: code %d remark %q", resp.Code, resp.Remark)
	}
	if ci := clusterInfo(t, cl, ns.Addr()); len(ci.BrokerAddrTable) != 0 {
		t.Errorf("bad registrations left brokers: %+v", ci)
	}
}

func mustCompressed(t *testing.T) []byte {
	b := protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{TopicConfigTable: topics("A", "B", "C")}}
	data, err := b.Encode(true)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Name servers share nothing: each knows only the brokers that registered with it.
func TestNameServersAreIndependent(t *testing.T) {
	ns1 := startNameServer(t, testConfig(t.TempDir()))
	cfg2 := testConfig(t.TempDir())
	cfg2.BindAddress = ""
	ns2 := startNameServer(t, cfg2)
	if !strings.HasPrefix(ns2.Addr(), "127.0.0.1:") {
		t.Errorf("wildcard listener Addr() = %q, want a loopback address", ns2.Addr())
	}
	cl := newClient(t)
	fakeBroker{cluster: "c", name: "broker-a", addr: "10.0.0.1:10911", topics: topics("T")}.register(t, cl, ns1.Addr(), false)
	if rd, _ := getRoute(t, cl, ns1.Addr(), "T"); rd == nil {
		t.Error("ns1 has no route")
	}
	if rd, _ := getRoute(t, cl, ns2.Addr(), "T"); rd != nil {
		t.Errorf("ns2 routes a broker that never registered with it: %+v", rd)
	}
}

// TestStaleMasterRefused: once a master of a group registered with an epoch, a master of
// an older one is refused (the broker then fences itself), while the newer master, its
// slaves and a later epoch are taken.
func TestStaleMasterRefused(t *testing.T) {
	ns := startNameServer(t, testConfig(t.TempDir()))
	cl := newClient(t)
	old := fakeBroker{cluster: "c", name: "broker-a", addr: "10.0.0.1:10911", topics: topics("T")}
	old.register(t, cl, ns.Addr(), false)
	promoted := fakeBroker{cluster: "c", name: "broker-a", addr: "10.0.0.2:10911", epoch: 1, topics: topics("T")}
	promoted.register(t, cl, ns.Addr(), false)

	req, err := old.request(false)
	if err != nil {
		t.Fatal(err)
	}
	resp := send(t, cl, ns.Addr(), req)
	if resp.Code != remoting.SystemError || !strings.HasPrefix(resp.Remark, protocol.StaleMasterRemark) {
		t.Fatalf("the old master's registration: code %d %q, want a stale-master refusal", resp.Code, resp.Remark)
	}
	if bd := clusterInfo(t, cl, ns.Addr()).BrokerAddrTable["broker-a"]; bd.BrokerAddrs[0] != promoted.addr {
		t.Fatalf("master %s, want the promoted %s", bd.BrokerAddrs[0], promoted.addr)
	}
	// As a slave the old master is welcome, and told where its master is.
	old.id = 1
	if resp := old.register(t, cl, ns.Addr(), false); resp.Field("masterAddr") != promoted.addr {
		t.Fatalf("the old master as a slave is told masterAddr %q", resp.Field("masterAddr"))
	}
	old.id, old.epoch = 0, 2
	old.register(t, cl, ns.Addr(), false)
	if bd := clusterInfo(t, cl, ns.Addr()).BrokerAddrTable["broker-a"]; bd.BrokerAddrs[0] != old.addr {
		t.Fatalf("master %s after epoch 2, want %s", bd.BrokerAddrs[0], old.addr)
	}
}
