package health

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

func get(t *testing.T, s *Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + s.Addr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func TestProbeEndpointsFollowTheProcess(t *testing.T) {
	s, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := func(path string, code int, body string) {
		t.Helper()
		if c, b := get(t, s, path); c != code || b != body {
			t.Errorf("%s = %d %q, want %d %q", path, c, b, code, body)
		}
	}
	// Recovering: alive, not started, not ready.
	want("/livez", 200, "ok")
	want("/startupz", 503, "starting")
	want("/readyz", 503, "starting")

	reason := errors.New("not registered with any name server")
	s.Started(func() error { return reason })
	want("/startupz", 200, "ok")
	want("/readyz", 503, "not registered with any name server")
	reason = nil
	want("/readyz", 200, "ok")

	s.Stopping()
	want("/readyz", 503, "shutting down")
	want("/livez", 200, "ok")
}
