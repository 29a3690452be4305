package tlsconfig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"strings"
	"time"
)

// ErrEncryptedKey refuses a private key file that is encrypted: the Go standard library
// decrypts no PKCS#8, and legacy PEM encryption is insecure.
var ErrEncryptedKey = errors.New("tls: encrypted private keys are not supported; decrypt it (openssl pkcs8 -in key.pem -out key-plain.pem) and drop the keyPassword")

// parsePair makes a certificate chain and its private key, PEM, into a pair. keyKey and
// certKey name the settings in errors; password is the keyPassword set, if any.
func parsePair(certPEM, keyPEM []byte, certKey, keyKey, password string) (*tls.Certificate, []string, error) {
	var warnings []string
	if encrypted, found := keyIsEncrypted(keyPEM); !found {
		return nil, nil, fmt.Errorf("%s: no PEM private key in the file", keyKey)
	} else if encrypted {
		return nil, nil, fmt.Errorf("%s: %w", keyKey, ErrEncryptedKey)
	} else if password != "" {
		warnings = append(warnings, fmt.Sprintf("%s: the key is not encrypted; its keyPassword is ignored", keyKey))
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, warnings, fmt.Errorf("%s and %s: %w", certKey, keyKey, err)
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, warnings, fmt.Errorf("%s: %w", certKey, err)
		}
	}
	return &pair, warnings, nil
}

// keyIsEncrypted looks at the first private key block of a PEM file.
func keyIsEncrypted(keyPEM []byte) (encrypted, found bool) {
	for rest := keyPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return false, false
		}
		if b.Type == "ENCRYPTED PRIVATE KEY" {
			return true, true
		}
		if strings.HasSuffix(b.Type, "PRIVATE KEY") {
			return strings.Contains(b.Headers["Proc-Type"], "ENCRYPTED"), true
		}
	}
}

// parsePool reads PEM CA certificates.
func parsePool(pemBytes []byte, key string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("%s: no PEM certificate in the file", key)
	}
	return pool, nil
}

// ParsePool reads PEM CA certificates (a Secret's ca.crt, say) into a pool.
func ParsePool(pemBytes []byte) (*x509.CertPool, error) {
	return parsePool(pemBytes, "CA certificates")
}

// selfSigned makes the certificate a server in test mode serves without files, as
// Netty's SelfSignedCertificate does for Java: for localhost and this host's name.
func selfSigned(now time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	names := []string{"localhost"}
	if h, err := os.Hostname(); err == nil && h != "" && h != "localhost" {
		names = append(names, h)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "localhost", Organization: []string{"rocketmq self-signed (tls.test.mode.enable)"}},
		DNSNames:     names,
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// CertificateError says which certificate a peer presented failed verification, and
// why: the validity period is there for the "expired" case.
type CertificateError struct {
	Subject   string
	Issuer    string
	NotBefore time.Time
	NotAfter  time.Time
	Err       error // from x509: x509.CertificateInvalidError, x509.UnknownAuthorityError, ...
}

func (e *CertificateError) Error() string {
	return fmt.Sprintf("certificate %q (issuer %q, valid %s to %s): %v", e.Subject, e.Issuer,
		e.NotBefore.UTC().Format(time.RFC3339), e.NotAfter.UTC().Format(time.RFC3339), e.Err)
}

func (e *CertificateError) Unwrap() error { return e.Err }

// Expired reports whether the certificate was out of its validity period.
func (e *CertificateError) Expired() bool {
	var inv x509.CertificateInvalidError
	return errors.As(e.Err, &inv) && inv.Reason == x509.Expired
}

// UnknownAuthority reports whether the certificate is not signed by a trusted CA.
func (e *CertificateError) UnknownAuthority() bool {
	var ua x509.UnknownAuthorityError
	return errors.As(e.Err, &ua)
}

// VerifyChain checks a peer's chain (leaf first, as tls.ConnectionState has it) against
// roots at now, for usage, but not a host name: what RocketMQ's Java clients check.
func VerifyChain(chain []*x509.Certificate, roots *x509.CertPool, now time.Time, usage x509.ExtKeyUsage) error {
	if len(chain) == 0 {
		return errors.New("tls: the peer presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	leaf := chain[0]
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{usage}})
	if err != nil {
		return &CertificateError{Subject: leaf.Subject.String(), Issuer: leaf.Issuer.String(),
			NotBefore: leaf.NotBefore, NotAfter: leaf.NotAfter, Err: err}
	}
	return nil
}
