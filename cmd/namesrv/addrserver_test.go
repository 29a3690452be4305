package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"testing"
)

type fakeResolver map[string][]string

func (f fakeResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	if ips, ok := f[host]; ok {
		return ips, nil
	}
	return nil, errors.New("no such host")
}

// TestResolvePeers: the address server answers IPs, which every official client accepts
// (the Go client refuses host names: "IP addr error"), one per name-server pod.
func TestResolvePeers(t *testing.T) {
	r := fakeResolver{"ns-headless.mq.svc": {"10.244.0.7", "10.244.0.5", "10.244.0.7"}}
	got, err := resolvePeers(context.Background(), r, "ns-headless.mq.svc:9876")
	if err != nil || !slices.Equal(got, []string{"10.244.0.5:9876", "10.244.0.7:9876"}) {
		t.Errorf("resolvePeers = %v, %v", got, err)
	}
	if _, err := resolvePeers(context.Background(), r, "other.svc:9876"); err == nil {
		t.Error("an unknown name must fail")
	}
	if got, err := resolvePeers(context.Background(), r, ""); got != nil || err != nil {
		t.Errorf("no peers: %v, %v", got, err)
	}
}

// TestAddressServerFallsBackToSelf: a name server whose peers do not resolve still
// answers itself, in the body format the clients split on ';'.
func TestAddressServerFallsBackToSelf(t *testing.T) {
	h := addressServer("nowhere.svc:9876", "127.0.0.1:9876", fakeResolver{}, slog.New(slog.DiscardHandler))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", addressPath, nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 || string(body) != "127.0.0.1:9876" {
		t.Errorf("answer %d %q", rec.Code, body)
	}
}
