package tlsconfig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/internal/testlog"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
	"github.com/openrmq/rocketmq-operator/pkg/tlsconfig/tlstest"
)

func testLogger() (*slog.Logger, *testlog.Buffer) {
	b := &testlog.Buffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

func TestDefaultsAreJava497s(t *testing.T) {
	s := Default()
	p := s.Properties()
	want := map[string]string{
		"tls.server.mode": "permissive", "tls.enable": "false", "tls.test.mode.enable": "true",
		"tls.server.need.client.auth": "none", "tls.server.authClient": "false", "tls.client.authServer": "false",
		"tls.config.file": "/etc/rocketmq/tls.properties", "tls.server.certPath": "", "tls.client.trustCertPath": "",
	}
	for k, v := range want {
		if p[k] != v {
			t.Errorf("%s = %q, want %q", k, p[k], v)
		}
	}
	if len(p) != 15 || len(KeyNames()) != 15 {
		t.Errorf("%d keys, want TlsSystemConfig's 15", len(p))
	}
}

func TestSetAndValidateNameTheKey(t *testing.T) {
	s := Default()
	if known, err := s.Set("tls.server.mode", " enforcing "); !known || err != nil || s.Mode() != remoting.TLSEnforcing {
		t.Fatalf("Set mode: %v %v %v", known, err, s.Mode())
	}
	if known, _ := s.Set("listenPort", "1"); known {
		t.Error("listenPort taken for a TLS key")
	}
	if _, err := s.Set("tls.server.authClient", "yes"); err == nil || !strings.Contains(err.Error(), "tls.server.authClient") {
		t.Errorf("a bad boolean: %v", err)
	}
	for key, value := range map[string]string{"tls.server.mode": "strict", "tls.server.need.client.auth": "always", "tls.server.certPath": "/c"} {
		s := Default()
		s.Set(key, value)
		if err := s.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: %v", key, value, err)
		}
	}
	s.ServerKeyPassword = "secret"
	if p := s.Properties(); p["tls.server.keyPassword"] != "******" {
		t.Errorf("password shown: %q", p["tls.server.keyPassword"])
	}
}

func TestApplyFileWinsButNotForModeOrEnable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tls.properties")
	os.WriteFile(file, []byte("tls.server.mode=disabled\ntls.enable=true\ntls.server.need.client.auth=require\ntls.test.mode.enable=false\nfoo=bar\n"), 0o600)
	s := Default()
	s.ServerMode, s.ServerNeedClientAuth, s.ConfigFile = "enforcing", "optional", file
	warnings, err := s.ApplyFile()
	if err != nil {
		t.Fatal(err)
	}
	if s.ServerMode != "enforcing" || s.Enable || s.ServerNeedClientAuth != "require" || s.TestModeEnable {
		t.Errorf("after the file: %+v", s)
	}
	if len(warnings) != 3 || !strings.Contains(strings.Join(warnings, "\n"), "tls.server.mode is ignored") {
		t.Errorf("warnings: %q", warnings)
	}
	s.ConfigFile = filepath.Join(dir, "absent")
	if w, err := s.ApplyFile(); err != nil || w != nil {
		t.Errorf("a missing file: %v %v", w, err)
	}
}

// files is a certificate pair and CA as a mounted Secret holds them.
type files struct {
	ca     *tlstest.CA
	leaf   *tlstest.Leaf
	secret *tlstest.SecretDir
}

func newFiles(t *testing.T, ca *tlstest.CA, cn string) *files {
	leaf := ca.Issue(t, cn, tlstest.Options{})
	return &files{ca: ca, leaf: leaf, secret: tlstest.NewSecretDir(t, t.TempDir(), map[string][]byte{
		"tls.crt": leaf.CertPEM, "tls.key": leaf.KeyPEM, "ca.crt": ca.CertPEM})}
}

func (f *files) rotate(t *testing.T, cn string) *tlstest.Leaf {
	leaf := f.ca.Issue(t, cn, tlstest.Options{})
	f.secret.Update(t, map[string][]byte{"tls.crt": leaf.CertPEM, "tls.key": leaf.KeyPEM, "ca.crt": f.ca.CertPEM})
	f.leaf = leaf
	return leaf
}

func (f *files) serverSettings(mode, auth string) Settings {
	s := Default()
	s.ServerMode, s.ServerNeedClientAuth, s.TestModeEnable = mode, auth, false
	s.ServerCertPath, s.ServerKeyPath, s.ServerTrustCertPath = f.secret.Path("tls.crt"), f.secret.Path("tls.key"), f.secret.Path("ca.crt")
	return s
}

func (f *files) clientSettings() Settings {
	s := Default()
	s.Enable = true
	s.ClientCertPath, s.ClientKeyPath, s.ClientTrustCertPath = f.secret.Path("tls.crt"), f.secret.Path("tls.key"), f.secret.Path("ca.crt")
	return s
}

func TestWatcherReloadsAfterASecretSwapAndKeepsTheOldPairWhenTheNewIsBad(t *testing.T) {
	f := newFiles(t, tlstest.NewCA(t, "ca"), "first")
	log, logs := testLogger()
	clock := time.Now()
	srv, err := NewServer(f.serverSettings("enforcing", "none"), log, func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	cn := func() string { return srv.Certificate().Leaf.Subject.CommonName }
	if cn() != "first" {
		t.Fatalf("serving %q", cn())
	}
	if changed, err := srv.Check(); changed || err != nil {
		t.Fatalf("unchanged files: %v %v", changed, err)
	}

	f.rotate(t, "second")
	if changed, err := srv.Check(); !changed || err != nil || cn() != "second" {
		t.Fatalf("after the swap: %v %v, serving %q", changed, err, cn())
	}
	if !strings.Contains(logs.String(), "certificate files reloaded") {
		t.Errorf("reload not logged:\n%s", logs)
	}

	// A key that does not match the certificate: refused, logged once, old pair kept.
	other := f.ca.Issue(t, "other", tlstest.Options{})
	f.secret.Update(t, map[string][]byte{"tls.crt": f.ca.Issue(t, "third", tlstest.Options{}).CertPEM, "tls.key": other.KeyPEM, "ca.crt": f.ca.CertPEM})
	for range 2 {
		if changed, err := srv.Check(); changed || err == nil {
			t.Fatalf("a mismatched pair: %v %v", changed, err)
		}
	}
	if cn() != "second" || strings.Count(logs.String(), "cannot be used") != 1 {
		t.Errorf("serving %q; want second, and the refusal logged once:\n%s", cn(), logs)
	}

	// Garbage, then an expired pair: refused likewise.
	f.secret.Update(t, map[string][]byte{"tls.crt": []byte("junk"), "tls.key": []byte("junk"), "ca.crt": f.ca.CertPEM})
	if _, err := srv.Check(); err == nil || cn() != "second" {
		t.Errorf("garbage: %v, serving %q", err, cn())
	}
	expired := f.ca.Issue(t, "expired", tlstest.Options{NotBefore: clock.Add(-2 * time.Hour), NotAfter: clock.Add(-time.Hour)})
	f.secret.Update(t, map[string][]byte{"tls.crt": expired.CertPEM, "tls.key": expired.KeyPEM, "ca.crt": f.ca.CertPEM})
	if _, err := srv.Check(); err == nil || !strings.Contains(err.Error(), "expired") || cn() != "second" {
		t.Errorf("expired: %v, serving %q", err, cn())
	}
	// The injected clock decides what expired means.
	clock = clock.Add(-3 * time.Hour)
	f.rotate(t, "fourth") // valid from an hour before real now: not yet valid at the clock
	if changed, _ := srv.Check(); !changed {
		t.Error("a not-yet-valid pair refused; only expiry refuses")
	}
}

func TestWatcherStartPolls(t *testing.T) {
	f := newFiles(t, tlstest.NewCA(t, "ca"), "first")
	log, _ := testLogger()
	srv, err := NewServer(f.serverSettings("permissive", "none"), log, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start(10 * time.Millisecond)
	defer srv.Close()
	f.rotate(t, "second")
	deadline := time.Now().Add(10 * time.Second)
	for srv.Certificate().Leaf.Subject.CommonName != "second" {
		if time.Now().After(deadline) {
			t.Fatal("the new pair was not picked up within 10s of polling every 10ms")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestServerRefusesWhatItCannotUse(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	f := newFiles(t, ca, "srv")
	log, _ := testLogger()

	s := f.serverSettings("enforcing", "none")
	s.ServerCertPath, s.ServerKeyPath = "", ""
	if _, err := NewServer(s, log, nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "tls.server.certPath") {
		t.Errorf("no pair without test mode: %v", err)
	}
	s.TestModeEnable = true
	srv, err := NewServer(s, log, nil)
	if err != nil || srv.Certificate() == nil || srv.Certificate().Leaf.Subject.CommonName != "localhost" {
		t.Fatalf("test mode: a self-signed certificate: %v", err)
	}

	// An encrypted key (PKCS#8 "ENCRYPTED PRIVATE KEY" here only by its PEM type).
	der, _ := pem.Decode(f.leaf.KeyPEM)
	enc := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der.Bytes})
	keyPath := filepath.Join(t.TempDir(), "enc.key")
	os.WriteFile(keyPath, enc, 0o600)
	s = f.serverSettings("permissive", "none")
	s.ServerKeyPath, s.ServerKeyPassword = keyPath, "pw"
	if _, err := NewServer(s, log, nil); !errors.Is(err, ErrEncryptedKey) || !strings.Contains(err.Error(), "tls.server.keyPath") {
		t.Errorf("an encrypted key: %v", err)
	}

	s = f.serverSettings("disabled", "none")
	s.ServerCertPath = "/nonexistent" // not read: TLS is off
	if srv, err := NewServer(s, log, nil); err != nil || srv.RemotingTLS().Mode != remoting.TLSDisabled || srv.Certificate() != nil {
		t.Errorf("disabled: %v", err)
	}
}

// startTLSServer serves an echo on loopback with srv's TLS.
func startTLSServer(t *testing.T, srv *Server) string {
	t.Helper()
	rs := remoting.NewServer(remoting.ServerConfig{TLS: srv.RemotingTLS(), Logger: slog.New(slog.DiscardHandler)})
	rs.Handle(remoting.HeartBeat, remoting.HandlerFunc(func(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
		resp := req.NewResponse(remoting.Success, "")
		if st, ok := c.TLS(); ok && len(st.PeerCertificates) > 0 {
			resp.Remark = st.PeerCertificates[0].Subject.CommonName
		}
		return resp
	}), nil)
	l, err := rs.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Shutdown(context.Background()) })
	return l.Addr().String()
}

// call makes one request over a fresh connection and returns the client certificate's
// name the server saw, and the server certificate's name.
func call(t *testing.T, cfg *tls.Config, addr string) (clientCN, serverCN string, err error) {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientConfig{TLS: cfg, Logger: slog.New(slog.DiscardHandler)})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, remoting.NewRequest(remoting.HeartBeat, nil, nil))
	if err != nil {
		return "", "", err
	}
	c, _ := cl.Conn(ctx, addr)
	st, _ := c.TLS()
	return resp.Remark, st.PeerCertificates[0].Subject.CommonName, nil
}

func TestMutualTLSWithRotationOnBothSides(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	sf, cf := newFiles(t, ca, "server-1"), newFiles(t, ca, "client-1")
	log, _ := testLogger()
	srv, err := NewServer(sf.serverSettings("enforcing", "require"), log, nil)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := NewClient(cf.clientSettings(), log, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := startTLSServer(t, srv)
	// The client dials 127.0.0.1 with a certificate for localhost: the chain is checked,
	// the host name not, as 4.9's clients do.
	if c, s, err := call(t, cli.Config(), addr); err != nil || c != "client-1" || s != "server-1" {
		t.Fatalf("first call: client %q server %q: %v", c, s, err)
	}
	sf.rotate(t, "server-2")
	cf.rotate(t, "client-2")
	if _, err := srv.Check(); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Check(); err != nil {
		t.Fatal(err)
	}
	if c, s, err := call(t, cli.Config(), addr); err != nil || c != "client-2" || s != "server-2" {
		t.Fatalf("after rotation: client %q server %q: %v", c, s, err)
	}

	// A client certificate of another CA, and none at all, are refused.
	intruder := newFiles(t, tlstest.NewCA(t, "other ca"), "intruder")
	is := intruder.clientSettings()
	is.ClientTrustCertPath = cf.secret.Path("ca.crt")
	icli, err := NewClient(is, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := call(t, icli.Config(), addr); err == nil {
		t.Error("a client certificate of another CA was accepted")
	}
	if _, _, err := call(t, NewClientConfig(ca.Pool(), nil, nil), addr); err == nil {
		t.Error("a client without a certificate was accepted")
	}
}

func TestClientVerifiesTheChainOnlyWhenItHasATrustFile(t *testing.T) {
	ca, other := tlstest.NewCA(t, "ca"), tlstest.NewCA(t, "other")
	log, _ := testLogger()
	sf := newFiles(t, ca, "server")
	srv, err := NewServer(sf.serverSettings("enforcing", "none"), log, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := startTLSServer(t, srv)

	s := Default()
	s.Enable = true
	cli, _ := NewClient(s, log, nil)
	if _, _, err := call(t, cli.Config(), addr); err != nil {
		t.Errorf("no trust file (4.9's default: no verification): %v", err)
	}
	if _, _, err := call(t, NewClientConfig(other.Pool(), nil, nil), addr); err == nil {
		t.Error("a server certificate of an untrusted CA was accepted")
	} else if ce := (*CertificateError)(nil); !errors.As(err, &ce) || !ce.UnknownAuthority() || ce.Subject != "CN=server" {
		t.Errorf("untrusted CA: %v", err)
	}
	// Expiry, judged by the client's clock.
	late := func() time.Time { return time.Now().Add(48 * time.Hour) }
	if _, _, err := call(t, NewClientConfig(ca.Pool(), nil, late), addr); err == nil {
		t.Error("an expired server certificate was accepted")
	} else if ce := (*CertificateError)(nil); !errors.As(err, &ce) || !ce.Expired() || ce.NotAfter.IsZero() {
		t.Errorf("expired: %v", err)
	}
	if _, _, err := call(t, NewClientConfig(ca.Pool(), nil, nil), addr); err != nil {
		t.Errorf("trusted: %v", err)
	}
}

// Asking for client certificates caps the server at TLS 1.2 (see Server.build); without,
// TLS 1.3 is negotiated.
func TestClientCertificatesCapTLSAt12(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	log, _ := testLogger()
	for auth, want := range map[string]uint16{"none": tls.VersionTLS13, "optional": tls.VersionTLS12, "require": tls.VersionTLS12} {
		sf := newFiles(t, ca, "server")
		srv, err := NewServer(sf.serverSettings("enforcing", auth), log, nil)
		if err != nil {
			t.Fatal(err)
		}
		addr := startTLSServer(t, srv)
		cl := remoting.NewClient(remoting.ClientConfig{TLS: NewClientConfig(ca.Pool(), &sf.leaf.Pair, nil), Logger: slog.New(slog.DiscardHandler)})
		c, err := cl.Conn(t.Context(), addr)
		if err != nil {
			t.Fatal(err)
		}
		if st, _ := c.TLS(); st.Version != want {
			t.Errorf("need.client.auth=%s: TLS version %x, want %x", auth, st.Version, want)
		}
		cl.Close()
	}
}

func TestVerifyChainNeedsACertificate(t *testing.T) {
	if err := VerifyChain(nil, x509.NewCertPool(), time.Now(), x509.ExtKeyUsageServerAuth); err == nil {
		t.Error("no certificate verified")
	}
}
