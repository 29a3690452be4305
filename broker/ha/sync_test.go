package ha

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

type recordApplier struct {
	mu  sync.Mutex
	got map[string]string
}

func (r *recordApplier) put(k string, b []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got[k] = string(b)
	return nil
}
func (r *recordApplier) ApplyTopicConfig(b []byte) error        { return r.put("topics", b) }
func (r *recordApplier) ApplyConsumerOffsets(b []byte) error    { return r.put("offsets", b) }
func (r *recordApplier) ApplyDelayOffsets(b []byte) error       { return r.put("delay", b) }
func (r *recordApplier) ApplySubscriptionGroups(b []byte) error { return r.put("groups", b) }

func (r *recordApplier) snapshot() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for k, v := range r.got {
		out[k] = v
	}
	return out
}

// fakeBrokerMaster answers the four metadata requests over real remoting.
func fakeBrokerMaster(t *testing.T, delayFails bool) string {
	t.Helper()
	srv := remoting.NewServer(remoting.ServerConfig{Logger: quiet})
	answer := func(body string, code int16) remoting.Handler {
		return remoting.HandlerFunc(func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
			resp := req.NewResponse(code, "")
			resp.Body = []byte(body)
			return resp
		})
	}
	srv.Handle(remoting.GetAllTopicConfig, answer(`{"topicConfigTable":{}}`, remoting.Success), nil)
	srv.Handle(remoting.GetAllConsumerOffset, answer(`{"offsetTable":{}}`, remoting.Success), nil)
	if delayFails {
		srv.Handle(remoting.GetAllDelayOffset, answer("", remoting.SystemError), nil)
	} else {
		srv.Handle(remoting.GetAllDelayOffset, answer(`{"offsetTable":{"1":5}}`, remoting.Success), nil)
	}
	srv.Handle(remoting.GetAllSubscriptionGroupConfig, answer(`{"subscriptionGroupTable":{}}`, remoting.Success), nil)
	ln, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return ln.Addr().String()
}

func TestSynchronizer(t *testing.T) {
	addr := fakeBrokerMaster(t, false)
	rc := remoting.NewClient(remoting.ClientConfig{Logger: quiet})
	defer rc.Close()
	app := &recordApplier{got: map[string]string{}}
	s := NewSynchronizer(rc, app, SyncConfig{Interval: 50 * time.Millisecond, InitialDelay: time.Millisecond, Logger: quiet})
	s.Start()
	defer s.Close()
	time.Sleep(30 * time.Millisecond)
	if len(app.snapshot()) != 0 {
		t.Fatal("synced without a master address")
	}
	s.SetMasterAddr(addr)
	waitFor(t, 2*time.Second, "sync", func() bool { return len(app.snapshot()) == 4 })
	got := app.snapshot()
	if got["delay"] != `{"offsetTable":{"1":5}}` || !strings.Contains(got["topics"], "topicConfigTable") {
		t.Fatalf("got %v", got)
	}
}

func TestSynchronizerPartialFailure(t *testing.T) {
	addr := fakeBrokerMaster(t, true)
	rc := remoting.NewClient(remoting.ClientConfig{Logger: quiet})
	defer rc.Close()
	app := &recordApplier{got: map[string]string{}}
	s := NewSynchronizer(rc, app, SyncConfig{Logger: quiet, SelfAddr: "10.0.0.1:10911"})
	s.SetMasterAddr("10.0.0.1:10911")
	if err := s.SyncAll(context.Background()); err != nil || len(app.snapshot()) != 0 {
		t.Fatalf("synced from itself: %v %v", err, app.snapshot())
	}
	s.SetMasterAddr(addr)
	err := s.SyncAll(context.Background())
	if err == nil || !strings.Contains(err.Error(), "delay offsets") {
		t.Fatalf("error %v", err)
	}
	if got := app.snapshot(); len(got) != 3 {
		t.Fatalf("the other parts should sync: %v", got)
	}
}

func TestVIPAddr(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.1:10911": "10.0.0.1:10909", "[::1]:10911": "[::1]:10909", "host": "host",
	} {
		if got := vipAddr(in); got != want {
			t.Errorf("vipAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
