package remoting

import (
	"context"
	"testing"

	"github.com/openrmq/rocketmq-operator/pkg/acl"
)

// TestBeforeSend: the hook sees every request the client's Invoke, InvokeAsync and
// InvokeOneway send, last, so what it adds (here an ACL signature) reaches the server and
// verifies there.
func TestBeforeSend(t *testing.T) {
	const oneway int16 = 905
	creds := acl.Credentials{AccessKey: "operator", SecretKey: "s3cret"}
	seen := make(chan *Command, 3)
	srv := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(HeartBeat, HandlerFunc(func(ctx context.Context, c *Conn, req *Command) *Command {
			seen <- req
			return echo(ctx, c, req)
		}), nil)
		s.Handle(oneway, HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
			seen <- req
			return nil
		}), nil)
	})
	var calls int
	cl := NewClient(ClientConfig{BeforeSend: func(req *Command) {
		calls++ // requests below are sent one at a time
		req.SetField("hooked", "yes")
		creds.SignFields(req.ExtFields, req.Body)
	}})
	t.Cleanup(func() { cl.Close() })
	if cl.Config().BeforeSend == nil || cl.Config().DialTimeout <= 0 {
		t.Fatalf("Config() = %+v: want the hook and the defaults", cl.Config())
	}
	ctx := testContext(t)

	verify := func(how string, req *Command) {
		t.Helper()
		if req.Field("hooked") != "yes" || req.Field(acl.FieldAccessKey) != "operator" {
			t.Fatalf("%s: the server got %v", how, req)
		}
		if want := acl.Sign(req.ExtFields, req.Body, "s3cret"); req.Field(acl.FieldSignature) != want {
			t.Fatalf("%s: signature %q does not verify, want %q", how, req.Field(acl.FieldSignature), want)
		}
	}
	resp, err := cl.Invoke(ctx, srv.addr, NewRequest(HeartBeat, map[string]string{"k": "v"}, []byte("body")))
	if err != nil || resp.Code != Success {
		t.Fatalf("invoke: %v %v", resp, err)
	}
	verify("Invoke", <-seen)

	done := make(chan error, 1)
	if err := cl.InvokeAsync(ctx, srv.addr, NewRequest(HeartBeat, nil, nil), func(_ *Command, err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	verify("InvokeAsync", <-seen)

	if err := cl.InvokeOneway(ctx, srv.addr, NewRequest(oneway, map[string]string{"x": "1"}, []byte("b"))); err != nil {
		t.Fatal(err)
	}
	verify("InvokeOneway", <-seen)
	if calls != 3 {
		t.Errorf("hook ran %d times for 3 requests", calls)
	}
}
