package namesrv

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
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
	ns := newNameServer(t, cfg)
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	return ns
}

// newNameServer is a name server not started yet, shut down when the test ends.
func newNameServer(t *testing.T, cfg Config) *NameServer {
	t.Helper()
	ns, err := New(cfg)
	if err != nil {
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
	return send(t, cl, addr, remoting.NewRequest(code, fields, body))
}

func send(t *testing.T, cl *remoting.Client, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, req)
	if err != nil {
		t.Fatalf("invoke code %d: %v", req.Code, err)
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
	id, epoch               int64
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
	req, err := b.request(compress)
	if err != nil {
		t.Fatal(err)
	}
	return mustSucceed(t, send(t, cl, nsAddr, req))
}

// request is b's REGISTER_BROKER.
func (b fakeBroker) request(compress bool) (*remoting.Command, error) {
	body := protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
		TopicConfigTable: b.topics, DataVersion: b.version,
	}}
	data, err := body.Encode(compress)
	if err != nil {
		return nil, err
	}
	h := protocol.RegisterBrokerRequestHeader{
		BrokerName: b.name, BrokerAddr: b.addr, ClusterName: b.cluster, HaServerAddr: b.ha,
		BrokerID: b.id, Compressed: compress, MasterEpoch: b.epoch,
	}
	return remoting.NewRequest(remoting.RegisterBroker, remoting.EncodeHeader(&h), data), nil
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

// logRecorder is a slog handler that keeps every message, for tests of what is logged.
type logRecorder struct {
	mu      sync.Mutex
	msgs    []string
	waiting map[string]chan struct{}
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }

func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, rec.Message)
	if ch, ok := r.waiting[rec.Message]; ok {
		close(ch)
		delete(r.waiting, rec.Message)
	}
	return nil
}

// count says how many lines had message msg.
func (r *logRecorder) count(msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

// await returns a channel closed once a line with message msg is logged after the call.
func (r *logRecorder) await(msg string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiting == nil {
		r.waiting = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	r.waiting[msg] = ch
	return ch
}
