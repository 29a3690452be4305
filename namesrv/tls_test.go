package namesrv

import (
	"crypto/tls"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
	"github.com/openrmq/rocketmq-operator/pkg/tlsconfig"
	"github.com/openrmq/rocketmq-operator/pkg/tlsconfig/tlstest"
)

func TestTLSKeysInTheConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "namesrv.conf")
	os.WriteFile(path, []byte("tls.server.mode=enforcing\ntls.server.certPath=/c\ntls.server.keyPath=/k\ntls.test.mode.enable=false\n"), 0o644)
	cfg, warnings, err := LoadConfig(path)
	if err != nil || len(warnings) != 0 {
		t.Fatal(err, warnings)
	}
	if cfg.TLS.Mode() != remoting.TLSEnforcing || cfg.TLS.ServerCertPath != "/c" || cfg.TLS.TestModeEnable {
		t.Errorf("TLS: %+v", cfg.TLS)
	}
	if p := cfg.Properties(); !strings.Contains(p, "tls.server.mode=enforcing\n") || !strings.Contains(p, "tls.test.mode.enable=false\n") {
		t.Errorf("properties:\n%s", p)
	}
	os.WriteFile(path, []byte("tls.server.mode=sometimes\n"), 0o644)
	if _, _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), "tls.server.mode") {
		t.Errorf("a bad mode: %v", err)
	}
	if d := DefaultConfig(); d.TLS.Mode() != remoting.TLSPermissive || !d.TLS.TestModeEnable {
		t.Errorf("defaults: %+v, want 4.9's", d.TLS)
	}
}

// An enforcing name server answers TLS clients and refuses plain text; the TLS keys
// cannot be changed remotely.
func TestEnforcingNameServer(t *testing.T) {
	ca := tlstest.NewCA(t, "ns ca")
	dir := t.TempDir()
	certPath, keyPath := ca.Issue(t, "namesrv", tlstest.Options{}).Write(t, dir, "tls.crt", "tls.key")
	cfg := testConfig(dir)
	cfg.TLS.ServerMode, cfg.TLS.ServerCertPath, cfg.TLS.ServerKeyPath = "enforcing", certPath, keyPath
	ns := startNameServer(t, cfg)

	secure := remoting.NewClient(remoting.ClientConfig{Logger: quiet, TLS: tlsconfig.NewClientConfig(ca.Pool(), nil, nil)})
	t.Cleanup(func() { secure.Close() })
	mustSucceed(t, invoke(t, secure, ns.Addr(), remoting.GetNameServerConfig, nil, nil))

	plain := remoting.NewClient(remoting.ClientConfig{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { plain.Close() })
	if _, err := plain.Invoke(t.Context(), ns.Addr(), remoting.NewRequest(remoting.GetNameServerConfig, nil, nil)); err == nil {
		t.Error("a plain-text request was answered")
	}

	resp := invoke(t, secure, ns.Addr(), remoting.UpdateNameServerConfig, nil, []byte("tls.server.mode=disabled\n"))
	if resp.Code != remoting.NoPermission {
		t.Errorf("a remote TLS update: %v", resp)
	}
	c, _ := secure.Conn(t.Context(), ns.Addr())
	if st, ok := c.TLS(); !ok || st.Version < tls.VersionTLS12 || st.PeerCertificates[0].Subject.CommonName != "namesrv" {
		t.Errorf("connection state: %v %+v", ok, st)
	}
}
