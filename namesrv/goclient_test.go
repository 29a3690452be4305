package namesrv_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/openrmq/rocketmq-operator/namesrv"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// TestOfficialGoClient checks our JSON against the parsers of the official Go client:
// its admin lists topics and resolves routes (hand-parsing brokerAddrs) through us.
func TestOfficialGoClient(t *testing.T) {
	rlog.SetLogLevel("error")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := namesrv.DefaultConfig()
	cfg.BindAddress, cfg.ListenPort, cfg.Logger = "127.0.0.1", 0, quiet
	cfg.KVConfigPath = filepath.Join(t.TempDir(), "kvConfig.json")
	ns, err := namesrv.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown(context.Background())

	// A fake two-broker cluster registers over our own remoting client.
	cl := remoting.NewClient(remoting.ClientConfig{Logger: quiet})
	defer cl.Close()
	register := func(name, addr string, compressed bool, topics ...string) {
		table := map[string]*protocol.TopicConfig{}
		for _, tp := range topics {
			tc := protocol.NewTopicConfig(tp)
			tc.ReadQueueNums, tc.WriteQueueNums = 2, 2
			table[tp] = tc
		}
		body := protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{TopicConfigTable: table}}
		data, err := body.Encode(compressed)
		if err != nil {
			t.Fatal(err)
		}
		hdr := remoting.EncodeHeader(&protocol.RegisterBrokerRequestHeader{
			BrokerName: name, BrokerAddr: addr, ClusterName: "DefaultCluster", HaServerAddr: addr, Compressed: compressed})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := cl.Invoke(ctx, ns.Addr(), remoting.NewRequest(remoting.RegisterBroker, hdr, data))
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("register %s: %v %v", name, err, resp)
		}
	}
	register("broker-a", "127.0.0.1:10911", false, "GoTopic", "Shared", protocol.DefaultTopic)
	register("broker-b", "127.0.0.1:20911", true, "Shared")

	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{ns.Addr()})))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	list, err := adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(list.TopicList, []string{"GoTopic", "Shared", protocol.DefaultTopic}) {
		t.Errorf("FetchAllTopicList = %v", list.TopicList)
	}

	mqs, err := adm.FetchPublishMessageQueues(ctx, "Shared")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mq := range mqs {
		got = append(got, mq.BrokerName)
	}
	if !slices.Equal(got, []string{"broker-a", "broker-a", "broker-b", "broker-b"}) {
		t.Errorf("publish queues of Shared on brokers %v", got)
	}

	clusters, err := adm.FetchClusterList("GoTopic")
	if err != nil || !slices.Equal(clusters, []string{"DefaultCluster"}) {
		t.Errorf("FetchClusterList = %v, %v", clusters, err)
	}
	if _, err := adm.FetchClusterList("NoSuchTopic"); err == nil {
		t.Error("route of a missing topic resolved")
	}
}
