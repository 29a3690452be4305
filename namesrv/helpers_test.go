package namesrv

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testConfig listens on a free loopback port with its KV store in dir.
func testConfig(dir string) Config {
	cfg := DefaultConfig()
	cfg.BindAddress = "127.0.0.1"
	cfg.ListenPort = 0
	cfg.KVConfigPath = filepath.Join(dir, "namesrv", "kvConfig.json")
	cfg.Logger = quiet
	return cfg
}

func startNameServer(t *testing.T, cfg Config) *NameServer {
	t.Helper()
	ns, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ns.Shutdown(ctx)
	})
	return ns
}

func newClient(t *testing.T) *remoting.Client {
	cl := remoting.NewClient(remoting.ClientConfig{Logger: quiet})
	t.Cleanup(func() { cl.Close() })
	return cl
}

func invoke(t *testing.T, cl *remoting.Client, addr string, code int16, hdr any, body []byte) *remoting.Command {
	t.Helper()
	var fields map[string]string
	if hdr != nil {
		fields = remoting.EncodeHeader(hdr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, remoting.NewRequest(code, fields, body))
	if err != nil {
		t.Fatalf("invoke code %d: %v", code, err)
	}
	return resp
}

func mustSucceed(t *testing.T, resp *remoting.Command) *remoting.Command {
	t.Helper()
	if resp.Code != remoting.Success {
		t.Fatalf("code %d remark %q, want success", resp.Code, resp.Remark)
	}
	return resp
}

// fakeBroker describes one broker registration.
type fakeBroker struct {
	cluster, name, addr, ha string
	id                      int64
	topics                  map[string]*protocol.TopicConfig
	version                 protocol.DataVersion
}

func topics(names ...string) map[string]*protocol.TopicConfig {
	m := map[string]*protocol.TopicConfig{}
	for _, n := range names {
		tc := protocol.NewTopicConfig(n)
		tc.ReadQueueNums, tc.WriteQueueNums = 4, 4
		m[n] = tc
	}
	return m
}

func (b fakeBroker) register(t *testing.T, cl *remoting.Client, nsAddr string, compress bool) *remoting.Command {
	t.Helper()
	body := protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
		TopicConfigTable: b.topics, DataVersion: b.version,
	}}
	data, err := body.Encode(compress)
	if err != nil {
		t.Fatal(err)
	}
	h := protocol.RegisterBrokerRequestHeader{
		BrokerName: b.name, BrokerAddr: b.addr, ClusterName: b.cluster, HaServerAddr: b.ha,
		BrokerID: b.id, Compressed: compress,
	}
	return mustSucceed(t, invoke(t, cl, nsAddr, remoting.RegisterBroker, &h, data))
}

func getRoute(t *testing.T, cl *remoting.Client, addr, topic string) (*protocol.TopicRouteData, *remoting.Command) {
	t.Helper()
	resp := invoke(t, cl, addr, remoting.GetRouteInfoByTopic, &protocol.GetRouteInfoRequestHeader{Topic: topic}, nil)
	if resp.Code != remoting.Success {
		return nil, resp
	}
	var rd protocol.TopicRouteData
	if err := protocol.Decode(resp.Body, &rd); err != nil {
		t.Fatalf("route body %s: %v", resp.Body, err)
	}
	return &rd, resp
}

func clusterInfo(t *testing.T, cl *remoting.Client, addr string) *protocol.ClusterInfo {
	t.Helper()
	resp := mustSucceed(t, invoke(t, cl, addr, remoting.GetBrokerClusterInfo, nil, nil))
	var ci protocol.ClusterInfo
	if err := protocol.Decode(resp.Body, &ci); err != nil {
		t.Fatal(err)
	}
	return &ci
}

// eventually polls cond until it holds or 5 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
