package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// Server is the TLS side of a server's listeners: the remoting.ServerTLS they negotiate
// with, backed by a Watcher of the certificate and trust files.
type Server struct {
	tls     *remoting.ServerTLS
	watcher *Watcher         // nil: no files to re-read
	self    *tls.Certificate // the test-mode certificate, when no pair is configured
	auth    tls.ClientAuthType
	roots   *x509.CertPool // the system's, for authClient without a trust file
	cur     atomic.Pointer[tls.Config]
}

// NewServer makes the server side of s (validated). With tls.server.mode=disabled the
// listeners speak plain text and close a ClientHello with a log line. now is the
// clock of certificate expiry checks (nil: time.Now).
func NewServer(s Settings, log *slog.Logger, now func() time.Time) (*Server, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	srv := &Server{tls: &remoting.ServerTLS{Mode: s.Mode()}}
	if srv.tls.Mode == remoting.TLSDisabled {
		return srv, nil
	}
	need := s.clientAuth()
	verify := s.ServerTrustCertPath != "" || s.ServerAuthClient
	switch {
	case need == ClientAuthNone:
		srv.auth = tls.NoClientCert
	case need == ClientAuthOptional && verify:
		srv.auth = tls.VerifyClientCertIfGiven
	case need == ClientAuthOptional:
		srv.auth = tls.RequestClientCert
	case verify:
		srv.auth = tls.RequireAndVerifyClientCert
	default:
		srv.auth = tls.RequireAnyClientCert
	}
	if verify && s.ServerTrustCertPath == "" && need != ClientAuthNone {
		roots, err := x509.SystemCertPool()
		if err != nil {
			return nil, fmt.Errorf("tls: %s=true without %s: the system's CA certificates: %w", KeyServerAuthClient, KeyServerTrustCertPath, err)
		}
		srv.roots = roots
	}

	files := Files{TrustPath: s.ServerTrustCertPath, KeyPassword: s.ServerKeyPassword,
		CertKey: KeyServerCertPath, KeyKey: KeyServerKeyPath, TrustKey: KeyServerTrustCertPath, PasswordKey: KeyServerKeyPassword}
	if need == ClientAuthNone {
		files.TrustPath = "" // not used: no client certificate is asked for
	}
	switch {
	case s.ServerCertPath != "":
		files.CertPath, files.KeyPath = s.ServerCertPath, s.ServerKeyPath
	case s.TestModeEnable:
		self, err := selfSigned(now())
		if err != nil {
			return nil, fmt.Errorf("tls: self-signed certificate: %w", err)
		}
		srv.self = self
		log.Info("TLS: serving a self-signed certificate (tls.test.mode.enable=true and no tls.server.certPath, as 4.9's default); clients that verify certificates refuse it")
	default:
		return nil, fmt.Errorf("%w: %s=%s needs %s and %s (or %s=true for a self-signed certificate)", ErrInvalid,
			KeyServerMode, s.ServerMode, KeyServerCertPath, KeyServerKeyPath, KeyTestModeEnable)
	}
	if files.CertPath != "" || files.TrustPath != "" {
		w, err := NewWatcher(files, log, now, srv.build)
		if err != nil {
			return nil, err
		}
		srv.watcher = w
	} else {
		srv.build(&Material{})
	}
	srv.tls.Config = &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return srv.cur.Load(), nil
		},
	}

	verification := "none asked for"
	switch {
	case need == ClientAuthNone:
	case files.TrustPath != "":
		verification = "verified against " + files.TrustPath
		if !s.ServerAuthClient {
			log.Info("TLS: client certificates are verified against tls.server.trustCertPath although tls.server.authClient=false (Java would take any)")
		}
	case srv.roots != nil:
		verification = "verified against the system's CA certificates"
	default:
		verification = "asked for, NOT verified (set tls.server.trustCertPath)"
		log.Warn("TLS: client certificates are asked for but not verified: tls.server.need.client.auth=" + need +
			" without tls.server.trustCertPath or tls.server.authClient")
	}
	certFrom := "self-signed"
	if files.CertPath != "" {
		certFrom = files.CertPath
		if s.TestModeEnable {
			log.Info("TLS: tls.test.mode.enable=true, but tls.server.certPath is set: serving it (Java would serve a self-signed certificate)")
		}
	}
	log.Info("TLS", "mode", srv.tls.Mode.String(), "certificate", certFrom, "clientAuth", need, "clientCertificates", verification)
	return srv, nil
}

// build makes the tls.Config handshakes use from m.
func (srv *Server) build(m *Material) {
	pair := m.Pair
	if pair == nil {
		pair = srv.self
	}
	pool := m.Pool
	if pool == nil {
		pool = srv.roots
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{*pair},
		ClientAuth:   srv.auth,
		ClientCAs:    pool,
	}
	if srv.auth != tls.NoClientCert {
		// The 4.9.7 Java client (Netty 4.1.65's SslHandler over the JDK 17 engine) that
		// presents a certificate in TLS 1.3 fails now and then: the server gets a record
		// it cannot decrypt with the handshake keys (bad_record_mac), or the client
		// stalls until its request times out; likely its request overtaking its second
		// flight. Measured on loopback: 4 of 6 such connections failed with TLS 1.3, none
		// of 14 with TLS 1.2 (whose client waits for the server's Finished before it
		// sends data), none of 8 in TLS 1.3 without a client certificate. Which client
		// will present one cannot be told from its ClientHello: TLS 1.2 for all here.
		cfg.MaxVersion = tls.VersionTLS12
	}
	srv.cur.Store(cfg)
}

// RemotingTLS is what ServerConfig.TLS (and the HA listener) take.
func (srv *Server) RemotingTLS() *remoting.ServerTLS { return srv.tls }

// Certificate is the pair new connections get; nil when TLS is disabled.
func (srv *Server) Certificate() *tls.Certificate {
	if c := srv.cur.Load(); c != nil {
		return &c.Certificates[0]
	}
	return nil
}

// Start re-reads the files every interval (DefaultWatchInterval when <= 0) until Close.
func (srv *Server) Start(interval time.Duration) {
	if srv.watcher != nil {
		srv.watcher.Start(interval)
	}
}

// Check re-reads the files now (see Watcher.Check).
func (srv *Server) Check() (bool, error) {
	if srv.watcher == nil {
		return false, nil
	}
	return srv.watcher.Check()
}

// Close stops re-reading the files.
func (srv *Server) Close() {
	if srv.watcher != nil {
		srv.watcher.Close()
	}
}

// Client is the TLS side of a broker's own connections (tls.enable): its certificate
// for mutual TLS and what it trusts, backed by a Watcher of the files.
type Client struct {
	watcher *Watcher
	roots   *x509.CertPool // the system's, for authServer without a trust file
	cfg     *tls.Config
}

// NewClient makes the client side of s (validated), or nil when tls.enable is false.
// now is the clock of certificate checks (nil: time.Now).
func NewClient(s Settings, log *slog.Logger, now func() time.Time) (*Client, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if !s.Enable {
		return nil, nil
	}
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	c := &Client{}
	files := Files{CertPath: s.ClientCertPath, KeyPath: s.ClientKeyPath, TrustPath: s.ClientTrustCertPath,
		KeyPassword: s.ClientKeyPassword,
		CertKey:     KeyClientCertPath, KeyKey: KeyClientKeyPath, TrustKey: KeyClientTrustCertPath, PasswordKey: KeyClientKeyPassword}
	if files.CertPath != "" || files.TrustPath != "" {
		w, err := NewWatcher(files, log, now, nil)
		if err != nil {
			return nil, err
		}
		c.watcher = w
	}
	verification := "NOT verified (as 4.9's default; set tls.client.trustCertPath)"
	switch {
	case files.TrustPath != "":
		verification = "chain verified against " + files.TrustPath
	case s.ClientAuthServer:
		roots, err := x509.SystemCertPool()
		if err != nil {
			return nil, fmt.Errorf("tls: %s=true without %s: the system's CA certificates: %w", KeyClientAuthServer, KeyClientTrustCertPath, err)
		}
		c.roots = roots
		verification = "chain verified against the system's CA certificates"
	}
	c.cfg = clientConfig(c.rootsNow, c.pairNow, now)
	cert := "none"
	if files.CertPath != "" {
		cert = files.CertPath
	}
	log.Info("TLS for outgoing connections", "serverCertificates", verification, "clientCertificate", cert)
	return c, nil
}

func (c *Client) rootsNow() *x509.CertPool {
	if c.watcher != nil {
		if m := c.watcher.Current(); m.Pool != nil {
			return m.Pool
		}
	}
	return c.roots
}

func (c *Client) pairNow() *tls.Certificate {
	if c.watcher != nil {
		return c.watcher.Current().Pair
	}
	return nil
}

// Config is what ClientConfig.TLS takes; it follows the files as they change.
func (c *Client) Config() *tls.Config {
	if c == nil {
		return nil
	}
	return c.cfg
}

// Start re-reads the files every interval (DefaultWatchInterval when <= 0) until Close.
func (c *Client) Start(interval time.Duration) {
	if c != nil && c.watcher != nil {
		c.watcher.Start(interval)
	}
}

// Check re-reads the files now (see Watcher.Check).
func (c *Client) Check() (bool, error) {
	if c == nil || c.watcher == nil {
		return false, nil
	}
	return c.watcher.Check()
}

// Close stops re-reading the files.
func (c *Client) Close() {
	if c != nil && c.watcher != nil {
		c.watcher.Close()
	}
}

// NewClientConfig is a client configuration with fixed material: it verifies the
// server's chain against roots (nil: no verification) but not its host name, and
// presents pair when the server asks (nil: none). The operator's admin client trusts a
// Secret's ca.crt with it.
func NewClientConfig(roots *x509.CertPool, pair *tls.Certificate, now func() time.Time) *tls.Config {
	if now == nil {
		now = time.Now
	}
	return clientConfig(func() *x509.CertPool { return roots }, func() *tls.Certificate { return pair }, now)
}

// clientConfig checks the chain itself, in VerifyConnection, which also runs on resumed
// sessions: crypto/tls would check the host name too, which RocketMQ's clients do not.
func clientConfig(roots func() *x509.CertPool, pair func() *tls.Certificate, now func() time.Time) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // the chain is checked in VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			pool := roots()
			if pool == nil {
				return nil
			}
			return VerifyChain(cs.PeerCertificates, pool, now(), x509.ExtKeyUsageServerAuth)
		},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if p := pair(); p != nil {
				return p, nil
			}
			return &tls.Certificate{}, nil // none: the server decides whether that will do
		},
	}
}
