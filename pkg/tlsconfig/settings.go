// Package tlsconfig reads RocketMQ 4.9's TLS settings, the tls.* keys of Java's
// TlsSystemConfig, and makes of them the TLS side of a server (a broker's or name
// server's listeners) and of a client (a broker's own connections to name servers and
// its master), with the certificate files re-read while running.
//
// # Keys and defaults (4.9.7's)
//
//	tls.server.mode              permissive   disabled | permissive | enforcing
//	tls.enable                   false        the broker's outgoing connections use TLS (also useTLS)
//	tls.config.file              /etc/rocketmq/tls.properties, read when it exists
//	tls.test.mode.enable         true         see below
//	tls.server.need.client.auth  none         none | optional | require
//	tls.server.certPath, tls.server.keyPath   PEM certificate chain and private key
//	tls.server.keyPassword                    refused: see below
//	tls.server.authClient        false        verify client certificates
//	tls.server.trustCertPath                  PEM CA certificates for client certificates
//	tls.client.certPath, tls.client.keyPath   the broker's own certificate (mutual TLS)
//	tls.client.keyPassword                    refused: see below
//	tls.client.authServer        false        verify the server's certificate
//	tls.client.trustCertPath                  PEM CA certificates for server certificates
//
// As in Java, the tls.config.file's values win over the config file's, except
// tls.server.mode and tls.enable, which Java reads from system properties only and
// ignores there (so do we, with a warning).
//
// # Where this differs from Java, and why
//
//   - tls.test.mode.enable=true makes Java serve a self-signed certificate and its
//     clients trust anything, whatever the paths say. Here it only fills in what is
//     missing: a server without tls.server.certPath/keyPath serves a self-signed
//     certificate made at start (Java's default behaviour), and configured files are
//     used. Without test mode, a server that speaks TLS and has no pair refuses to
//     start (Java would log an error and close every TLS connection).
//   - A trust file given is used: client certificates are verified against
//     tls.server.trustCertPath when it is set and need.client.auth asks for one, even
//     with tls.server.authClient=false (Java would then take any certificate); likewise
//     tls.client.trustCertPath for the server's certificate. authClient/authServer=true
//     without a trust file verifies against the system's roots (Java: the JDK's).
//     Without either, certificates are not verified, as in Java, and a warning says so.
//   - Java's clients check the certificate chain but not the host name (Netty's
//     SslHandler gets no peer host); so do ours: brokers announce IP addresses, which
//     certificates seldom name.
//   - Encrypted private keys (keyPassword): the Go standard library cannot decrypt
//     PKCS#8, so a password or an encrypted key is refused with the openssl command
//     that decrypts it, rather than taking a cryptography dependency for it.
//   - Unknown modes and client-auth values are refused naming the key (Java takes them
//     for permissive and none).
//   - TLS 1.2 and 1.3 with Go's default cipher suites; a server that asks for client
//     certificates (need.client.auth optional or require) offers TLS 1.2 at most,
//     because the 4.9.7 Java client presenting a certificate over TLS 1.3 fails on
//     most connections (see Server.build).
//
// Certificate, key and trust files are re-read every few seconds (Watcher): a pair
// that parses, matches and has not expired replaces the one in use for new
// connections; anything else is logged and the previous pair kept. The kubelet updates
// a mounted Secret by swapping a symlink, so the files' content is compared, not an
// inotify watch of the files.
package tlsconfig

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/openrmq/rocketmq-operator/pkg/properties"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// ErrInvalid wraps every refused value; the message names the key.
var ErrInvalid = errors.New("tls: invalid setting")

// Client authentication values of tls.server.need.client.auth.
const (
	ClientAuthNone     = "none"
	ClientAuthOptional = "optional"
	ClientAuthRequire  = "require"
)

// DefaultConfigFile is tls.config.file's default, Java's.
const DefaultConfigFile = "/etc/rocketmq/tls.properties"

// Settings are the tls.* keys. Field comments give the key.
type Settings struct {
	ServerMode           string // tls.server.mode
	Enable               bool   // tls.enable
	ConfigFile           string // tls.config.file
	TestModeEnable       bool   // tls.test.mode.enable
	ServerNeedClientAuth string // tls.server.need.client.auth
	ServerKeyPath        string // tls.server.keyPath
	ServerKeyPassword    string // tls.server.keyPassword
	ServerCertPath       string // tls.server.certPath
	ServerAuthClient     bool   // tls.server.authClient
	ServerTrustCertPath  string // tls.server.trustCertPath
	ClientKeyPath        string // tls.client.keyPath
	ClientKeyPassword    string // tls.client.keyPassword
	ClientCertPath       string // tls.client.certPath
	ClientAuthServer     bool   // tls.client.authServer
	ClientTrustCertPath  string // tls.client.trustCertPath
}

// Default returns 4.9.7's defaults.
func Default() Settings {
	return Settings{
		ServerMode:           remoting.TLSPermissive.String(),
		ConfigFile:           DefaultConfigFile,
		TestModeEnable:       true,
		ServerNeedClientAuth: ClientAuthNone,
	}
}

// Key binds a key to its field: a *string or a *bool.
type Key struct {
	Name string
	Ptr  any
}

// Names of the keys, as TlsSystemConfig spells them.
const (
	KeyServerMode           = "tls.server.mode"
	KeyEnable               = "tls.enable"
	KeyConfigFile           = "tls.config.file"
	KeyTestModeEnable       = "tls.test.mode.enable"
	KeyServerNeedClientAuth = "tls.server.need.client.auth"
	KeyServerKeyPath        = "tls.server.keyPath"
	KeyServerKeyPassword    = "tls.server.keyPassword"
	KeyServerCertPath       = "tls.server.certPath"
	KeyServerAuthClient     = "tls.server.authClient"
	KeyServerTrustCertPath  = "tls.server.trustCertPath"
	KeyClientKeyPath        = "tls.client.keyPath"
	KeyClientKeyPassword    = "tls.client.keyPassword"
	KeyClientCertPath       = "tls.client.certPath"
	KeyClientAuthServer     = "tls.client.authServer"
	KeyClientTrustCertPath  = "tls.client.trustCertPath"
)

// Keys lists every key with its field, in TlsSystemConfig's order.
func (s *Settings) Keys() []Key {
	return []Key{
		{KeyServerMode, &s.ServerMode},
		{KeyEnable, &s.Enable},
		{KeyConfigFile, &s.ConfigFile},
		{KeyTestModeEnable, &s.TestModeEnable},
		{KeyServerNeedClientAuth, &s.ServerNeedClientAuth},
		{KeyServerKeyPath, &s.ServerKeyPath},
		{KeyServerKeyPassword, &s.ServerKeyPassword},
		{KeyServerCertPath, &s.ServerCertPath},
		{KeyServerAuthClient, &s.ServerAuthClient},
		{KeyServerTrustCertPath, &s.ServerTrustCertPath},
		{KeyClientKeyPath, &s.ClientKeyPath},
		{KeyClientKeyPassword, &s.ClientKeyPassword},
		{KeyClientCertPath, &s.ClientCertPath},
		{KeyClientAuthServer, &s.ClientAuthServer},
		{KeyClientTrustCertPath, &s.ClientTrustCertPath},
	}
}

// IsSecret reports whether a key's value must not be shown (GET_BROKER_CONFIG, -p).
func IsSecret(key string) bool {
	return key == KeyServerKeyPassword || key == KeyClientKeyPassword
}

// Set parses value into key. It reports false for a key that is not a TLS one.
func (s *Settings) Set(key, value string) (bool, error) {
	for _, k := range s.Keys() {
		if k.Name == key {
			return true, setValue(k, value)
		}
	}
	return false, nil
}

func setValue(k Key, raw string) error {
	v := strings.TrimSpace(raw)
	switch p := k.Ptr.(type) {
	case *string:
		*p = v
	case *bool:
		// Java's Boolean.parseBoolean takes anything but "true" for false; a typo
		// should not turn verification off silently.
		switch strings.ToLower(v) {
		case "true":
			*p = true
		case "false":
			*p = false
		default:
			return fmt.Errorf("%w: %s=%q is not true or false", ErrInvalid, k.Name, raw)
		}
	}
	return nil
}

// Properties returns every key with its value; passwords are masked.
func (s *Settings) Properties() map[string]string {
	out := make(map[string]string)
	for _, k := range s.Keys() {
		switch p := k.Ptr.(type) {
		case *string:
			out[k.Name] = *p
			if IsSecret(k.Name) && *p != "" {
				out[k.Name] = "******"
			}
		case *bool:
			out[k.Name] = strconv.FormatBool(*p)
		}
	}
	return out
}

// Mode is tls.server.mode parsed; Validate refuses what does not parse.
func (s *Settings) Mode() remoting.TLSMode {
	m, _ := remoting.ParseTLSMode(s.ServerMode)
	return m
}

// Validate checks the values; the error names the key.
func (s *Settings) Validate() error {
	if _, err := remoting.ParseTLSMode(s.ServerMode); err != nil {
		return fmt.Errorf("%w: %s=%q: must be disabled, permissive or enforcing", ErrInvalid, KeyServerMode, s.ServerMode)
	}
	switch strings.ToLower(s.ServerNeedClientAuth) {
	case "", ClientAuthNone, ClientAuthOptional, ClientAuthRequire:
	default:
		return fmt.Errorf("%w: %s=%q: must be none, optional or require", ErrInvalid, KeyServerNeedClientAuth, s.ServerNeedClientAuth)
	}
	if (s.ServerCertPath == "") != (s.ServerKeyPath == "") {
		return fmt.Errorf("%w: %s and %s go together (one is set, the other not)", ErrInvalid, KeyServerCertPath, KeyServerKeyPath)
	}
	if (s.ClientCertPath == "") != (s.ClientKeyPath == "") {
		return fmt.Errorf("%w: %s and %s go together (one is set, the other not)", ErrInvalid, KeyClientCertPath, KeyClientKeyPath)
	}
	return nil
}

// clientAuth is need.client.auth in lower case, "" as none.
func (s *Settings) clientAuth() string {
	if a := strings.ToLower(s.ServerNeedClientAuth); a != "" {
		return a
	}
	return ClientAuthNone
}

// ApplyFile reads tls.config.file over s, as Java's TlsHelper does when the file
// exists: its values win. tls.server.mode, tls.enable and tls.config.file are ignored
// there, as in Java, and so are keys that are not TLS keys; both come back as warnings.
// A missing file is no error; an unreadable one, or a bad value, is.
func (s *Settings) ApplyFile() ([]string, error) {
	if s.ConfigFile == "" {
		return nil, nil
	}
	f, err := os.Open(s.ConfigFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KeyConfigFile, err)
	}
	defer f.Close()
	props, err := properties.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", KeyConfigFile, s.ConfigFile, err)
	}
	var warnings []string
	for _, p := range props {
		switch p.Key {
		case KeyServerMode, KeyEnable, KeyConfigFile:
			warnings = append(warnings, fmt.Sprintf("%s line %d: %s is ignored in %s (as Java does); set it in the config file",
				s.ConfigFile, p.Line, p.Key, KeyConfigFile))
			continue
		}
		known, err := s.Set(p.Key, p.Value)
		if err != nil {
			return warnings, fmt.Errorf("%s line %d: %w", s.ConfigFile, p.Line, err)
		}
		if !known {
			warnings = append(warnings, fmt.Sprintf("%s line %d: unknown key %s ignored", s.ConfigFile, p.Line, p.Key))
		}
	}
	return warnings, s.Validate()
}

// KeyNames returns every key, sorted.
func KeyNames() []string {
	var s Settings
	var out []string
	for _, k := range s.Keys() {
		out = append(out, k.Name)
	}
	sort.Strings(out)
	return out
}
