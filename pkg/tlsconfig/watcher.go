package tlsconfig

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultWatchInterval is how often a Watcher re-reads its files. Java's
// FileWatchService looks every 500 ms; the kubelet takes up to a minute or so to update
// a mounted Secret, so a few seconds more change nothing.
const DefaultWatchInterval = 2 * time.Second

// Files are the files a Watcher keeps loaded, each with the key that names it.
type Files struct {
	CertPath, KeyPath string // a PEM certificate chain and its key; both or neither
	TrustPath         string // PEM CA certificates; optional
	KeyPassword       string // the keyPassword setting: only to refuse or ignore it

	CertKey, KeyKey, TrustKey, PasswordKey string // the settings' names, for messages
}

// Material is what a Watcher loaded last.
type Material struct {
	Pair *tls.Certificate // nil without CertPath; Pair.Leaf is set
	Pool *x509.CertPool   // nil without TrustPath
}

// Watcher keeps a key pair and a trust pool read from files, and replaces them when the
// files' content changes and the new content is usable. Its clock is injectable.
type Watcher struct {
	files Files
	log   *slog.Logger
	now   func() time.Time
	// onLoad runs under mu with each material installed, so derived state (a server's
	// tls.Config) changes with it.
	onLoad func(*Material)

	cur atomic.Pointer[Material]

	mu      sync.Mutex // one Check at a time
	seen    [3][]byte  // the content last looked at, loaded or refused
	refused error      // why seen was refused; nil when it is in use
	lastErr string     // the last refusal logged, so it is logged once

	stop chan struct{}
	done chan struct{}
}

// NewWatcher loads files at once; an error there is the caller's to report (a broker
// does not start without its certificate). now is the clock (nil: time.Now).
func NewWatcher(files Files, log *slog.Logger, now func() time.Time, onLoad func(*Material)) (*Watcher, error) {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	w := &Watcher{files: files, log: log, now: now, onLoad: onLoad}
	contents, err := w.read()
	if err != nil {
		return nil, err
	}
	m, warnings, err := w.parse(contents)
	if err != nil {
		return nil, err
	}
	for _, msg := range warnings {
		log.Warn("TLS: " + msg)
	}
	if m.Pair != nil {
		if leaf := m.Pair.Leaf; !w.now().Before(leaf.NotAfter) {
			// Served all the same: clients that do not verify (the official Go client
			// does not) keep working until it is replaced.
			log.Warn("TLS: the certificate has expired; replace it", "file", files.CertPath,
				"subject", leaf.Subject.String(), "notAfter", leaf.NotAfter)
		}
	}
	w.seen = contents
	w.install(m)
	return w, nil
}

// Current is the material in use.
func (w *Watcher) Current() *Material { return w.cur.Load() }

func (w *Watcher) install(m *Material) {
	w.cur.Store(m)
	if w.onLoad != nil {
		w.onLoad(m)
	}
}

func (w *Watcher) read() ([3][]byte, error) {
	var out [3][]byte
	for i, f := range []struct{ path, key string }{
		{w.files.CertPath, w.files.CertKey}, {w.files.KeyPath, w.files.KeyKey}, {w.files.TrustPath, w.files.TrustKey},
	} {
		if f.path == "" {
			continue
		}
		b, err := os.ReadFile(f.path)
		if err != nil {
			return out, fmt.Errorf("%s: %w", f.key, err)
		}
		out[i] = b
	}
	return out, nil
}

func (w *Watcher) parse(c [3][]byte) (*Material, []string, error) {
	m := &Material{}
	var warnings []string
	if w.files.CertPath != "" {
		pair, warns, err := parsePair(c[0], c[1], w.files.CertKey, w.files.KeyKey, w.files.KeyPassword)
		warnings = warns
		if err != nil {
			return nil, warnings, err
		}
		m.Pair = pair
	}
	if w.files.TrustPath != "" {
		pool, err := parsePool(c[2], w.files.TrustKey)
		if err != nil {
			return nil, warnings, err
		}
		m.Pool = pool
	}
	return m, warnings, nil
}

// Check re-reads the files and installs what they hold when it changed and is usable: a
// pair that parses, whose key matches and that has not expired, and a trust file with a
// certificate. Otherwise the material in use stays and the reason is logged, once for
// the same content. It reports whether it installed new material, and why the files'
// content is refused while it is.
func (w *Watcher) Check() (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	contents, err := w.read()
	if err == nil && sameContents(contents, w.seen) {
		return false, w.refused
	}
	if err == nil {
		var m *Material
		var warnings []string
		m, warnings, err = w.parse(contents)
		if err == nil && m.Pair != nil && !w.now().Before(m.Pair.Leaf.NotAfter) {
			err = fmt.Errorf("%s: the new certificate %q expired at %s", w.files.CertKey,
				m.Pair.Leaf.Subject.String(), m.Pair.Leaf.NotAfter.UTC().Format(time.RFC3339))
		}
		if err == nil {
			for _, msg := range warnings {
				w.log.Warn("TLS: " + msg)
			}
			w.seen, w.refused, w.lastErr = contents, nil, ""
			w.install(m)
			w.logLoaded(m)
			return true, nil
		}
		w.seen, w.refused = contents, err // looked at again once it changes
	}
	if msg := err.Error(); msg != w.lastErr {
		w.lastErr = msg
		w.log.Warn("TLS: the certificate files changed but cannot be used; keeping the ones in use", "err", err)
	}
	return false, err
}

func (w *Watcher) logLoaded(m *Material) {
	attrs := []any{}
	if m.Pair != nil {
		leaf := m.Pair.Leaf
		attrs = append(attrs, "file", w.files.CertPath, "subject", leaf.Subject.String(),
			"serial", leaf.SerialNumber.Text(16), "notAfter", leaf.NotAfter)
	}
	if m.Pool != nil {
		attrs = append(attrs, "trust", w.files.TrustPath)
	}
	w.log.Info("TLS: certificate files reloaded; new connections use them", attrs...)
}

// Start re-reads the files every interval (DefaultWatchInterval when <= 0) until Close.
func (w *Watcher) Start(interval time.Duration) {
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	w.mu.Lock()
	if w.stop != nil {
		w.mu.Unlock()
		return
	}
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	w.mu.Unlock()
	go func() {
		defer close(w.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				_, _ = w.Check() // a refused change is logged by Check and kept in its state
			}
		}
	}()
}

// Close stops what Start started.
func (w *Watcher) Close() {
	w.mu.Lock()
	stop, done := w.stop, w.done
	w.mu.Unlock()
	if stop == nil {
		return
	}
	select {
	case <-stop:
	default:
		close(stop)
	}
	<-done
}

func sameContents(a, b [3][]byte) bool {
	return bytes.Equal(a[0], b[0]) && bytes.Equal(a[1], b[1]) && bytes.Equal(a[2], b[2])
}
