// Package tlstest makes certificate authorities and certificates for tests, with
// crypto/x509 only: ECDSA P-256 keys in PKCS#8 PEM ("PRIVATE KEY"), which Java's
// Netty reads as well as Go.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// TB is what the helpers need of a test: *testing.T, *testing.B and GinkgoT() have it.
type TB interface {
	Helper()
	Fatal(args ...any)
}

// CA is a certificate authority.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     *ecdsa.PrivateKey
}

// NewCA makes a self-signed CA named name, valid from an hour ago for ten years.
func NewCA(tb TB, name string) *CA {
	tb.Helper()
	key := newKey(tb)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(tb),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"rocketmq-operator tests"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return &CA{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), key: key}
}

// Pool is a pool of the CA's certificate.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Options of Issue. Zero values take the defaults in brackets.
type Options struct {
	DNSNames []string // [localhost]
	IPs      []net.IP // [127.0.0.1, ::1]
	// NotBefore and NotAfter [an hour ago, a day from now]. A certificate that expired
	// an hour ago, whatever the hour: NotBefore -2h, NotAfter -1h from time.Now().
	NotBefore, NotAfter time.Time
	// NoNames leaves DNSNames and IPs empty (a certificate for another host: set
	// DNSNames to that host instead).
	NoNames bool
}

// Leaf is a certificate and its key.
type Leaf struct {
	Cert    *x509.Certificate
	CertPEM []byte // the certificate, then the CA's: a chain as cert-manager writes tls.crt
	KeyPEM  []byte
	Pair    tls.Certificate
}

// Issue makes a certificate for cn signed by ca, for both server and client
// authentication.
func (ca *CA) Issue(tb TB, cn string, o Options) *Leaf {
	tb.Helper()
	now := time.Now()
	if o.NotBefore.IsZero() {
		o.NotBefore = now.Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = now.Add(24 * time.Hour)
	}
	if !o.NoNames {
		if len(o.DNSNames) == 0 && len(o.IPs) == 0 {
			o.DNSNames = []string{"localhost"}
			o.IPs = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		}
	} else {
		o.DNSNames, o.IPs = nil, nil
	}
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb),
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     o.DNSNames,
		IPAddresses:  o.IPs,
		NotBefore:    o.NotBefore,
		NotAfter:     o.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	l := &Leaf{Cert: cert, CertPEM: append(pemBlock("CERTIFICATE", der), ca.CertPEM...), KeyPEM: pemBlock("PRIVATE KEY", pkcs8)}
	if l.Pair, err = tls.X509KeyPair(l.CertPEM, l.KeyPEM); err != nil {
		tb.Fatal(err)
	}
	return l
}

// Write writes the certificate and key as dir/certName and dir/keyName (mode 0600) and
// returns their paths.
func (l *Leaf) Write(tb TB, dir, certName, keyName string) (certPath, keyPath string) {
	tb.Helper()
	certPath, keyPath = filepath.Join(dir, certName), filepath.Join(dir, keyName)
	WriteFile(tb, certPath, l.CertPEM)
	WriteFile(tb, keyPath, l.KeyPEM)
	return certPath, keyPath
}

// WriteCA writes the CA certificate to path.
func (ca *CA) WriteCA(tb TB, path string) string {
	tb.Helper()
	WriteFile(tb, path, ca.CertPEM)
	return path
}

// WriteFile replaces path with data through a temporary file and a rename, as an
// atomic update of a mounted Secret leaves it.
func WriteFile(tb TB, path string, data []byte) {
	tb.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
}

func newKey(tb TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

func serial(tb TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// SecretDir is a folder laid out as the kubelet lays out a mounted Secret: each key a
// symlink to ..data/<key>, ..data a symlink to a timestamped folder, and an update a
// new folder swapped in by renaming a symlink over ..data.
type SecretDir struct {
	Dir string
	gen int
}

// NewSecretDir makes dir hold files as a mounted Secret.
func NewSecretDir(tb TB, dir string, files map[string][]byte) *SecretDir {
	tb.Helper()
	s := &SecretDir{Dir: dir}
	s.Update(tb, files)
	for name := range files {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

// Path is the path of a key's file.
func (s *SecretDir) Path(name string) string { return filepath.Join(s.Dir, name) }

// Update replaces the content of every key at once (the keys stay those NewSecretDir
// was given).
func (s *SecretDir) Update(tb TB, files map[string][]byte) {
	tb.Helper()
	s.gen++
	gen := filepath.Join(s.Dir, "..gen"+time.Now().Format("_2006_01_02_15_04_05.")+strconv.Itoa(s.gen))
	if err := os.MkdirAll(gen, 0o755); err != nil {
		tb.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(gen, name), data, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	tmp := filepath.Join(s.Dir, "..data_tmp")
	os.Remove(tmp)
	if err := os.Symlink(filepath.Base(gen), tmp); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(s.Dir, "..data")); err != nil {
		tb.Fatal(err)
	}
}
