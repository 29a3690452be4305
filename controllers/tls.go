package controllers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/resource"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
	"github.com/openrmq/rocketmq-operator/pkg/tlsconfig"
)

// Brokers with spec.tls speak TLS on every port. The operator's admin calls to them go
// over TLS too, trusting the ca.crt of spec.tls.secretName and presenting its tls.crt
// when the brokers ask for client certificates: BrokerAdmins makes that admin per Broker
// from the Secret (remade when the Secret changes). The TLS condition says whether the
// ready brokers' certificates verify against ca.crt, and if not which broker's fails and
// why (expired: when; not signed by ca.crt; the Secret missing or unusable).

// TLSAdmin is a BrokerAdmin that can speak TLS (RemotingAdmin is one).
type TLSAdmin interface {
	BrokerAdmin
	// WithTLS returns an admin whose connections are TLS ones with cfg, and what
	// releases them once it is no longer used.
	WithTLS(cfg *tls.Config) (BrokerAdmin, io.Closer)
}

// TLSProbe completes a TLS handshake with addr under cfg and returns the certificate
// chain the server presented.
type TLSProbe func(ctx context.Context, addr string, cfg *tls.Config) ([]*x509.Certificate, error)

// Reasons of the TLS condition.
const (
	ReasonTLSVerified        = "Verified"
	ReasonTLSNotChecked      = "NotChecked"
	ReasonTLSSecretNotFound  = "SecretNotFound"
	ReasonTLSSecretInvalid   = "SecretInvalid"
	ReasonTLSUnsupported     = "TLSUnsupported"
	ReasonCertificateExpired = "CertificateExpired"
	ReasonUnknownAuthority   = "UnknownAuthority"
	ReasonCertificateInvalid = "CertificateInvalid"
	ReasonTLSHandshakeFailed = "HandshakeFailed"
)

// tlsReprobe is how long a broker's handshake result is kept: a renewed certificate
// (the same Secret, so no new admin) is seen within it.
const tlsReprobe = 10 * time.Minute

// tlsProbeTimeout bounds one handshake.
const tlsProbeTimeout = 5 * time.Second

// tlsAdmin is the TLS admin of one Broker and the handshakes it made.
type tlsAdmin struct {
	secret  client.ObjectKey
	uid     types.UID
	version string
	admin   BrokerAdmin
	closer  io.Closer
	cfg     *tls.Config

	mu     sync.Mutex
	probed map[string]probeResult // by broker address
}

type probeResult struct {
	at    time.Time
	chain []*x509.Certificate
	err   error
}

// dialTLS is the production TLSProbe.
func dialTLS(ctx context.Context, addr string, cfg *tls.Config) ([]*x509.Certificate, error) {
	d := tls.Dialer{NetDialer: &net.Dialer{}, Config: remoting.ClientTLSConfig(cfg, addr)}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	return nc.(*tls.Conn).ConnectionState().PeerCertificates, nil
}

func (a *BrokerAdmins) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *BrokerAdmins) probe() TLSProbe {
	if a.Probe != nil {
		return a.Probe
	}
	return dialTLS
}

// tlsFor returns br's TLS admin, or, when none can be made, why (the TLS condition's
// reason and message). The error is a failure to read the Secret other than its
// absence, worth a retry.
func (a *BrokerAdmins) tlsFor(ctx context.Context, br *v1alpha1.Broker) (*tlsAdmin, string, string, error) {
	key := client.ObjectKeyFromObject(br)
	spec := br.Spec.TLS
	base, ok := a.base.(TLSAdmin)
	if !ok {
		return nil, ReasonTLSUnsupported, fmt.Sprintf("the operator's admin client (%T) cannot speak TLS", a.base), nil
	}
	secret := client.ObjectKey{Namespace: br.Namespace, Name: spec.SecretName}
	notFound := fmt.Sprintf("Secret %q (spec.tls.secretName) not found: the pods cannot start and the operator "+
		"makes no admin calls to this Broker until it exists", spec.SecretName)
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := a.meta.Get(ctx, secret, m); err != nil {
		if apierrors.IsNotFound(err) {
			a.forgetTLS(key)
			return nil, ReasonTLSSecretNotFound, notFound, nil
		}
		return nil, "", "", fmt.Errorf("reading Secret %s: %w", spec.SecretName, err)
	}
	// a.mu is not held across the API read (see For); the table is checked again after.
	needPair := spec.ClientAuth != "" && spec.ClientAuth != v1alpha1.TLSClientAuthNone
	if cur := a.currentTLS(key, secret, m.UID, m.ResourceVersion); cur != nil {
		return cur, "", "", nil
	}
	s := &corev1.Secret{}
	if err := a.data.Get(ctx, secret, s); err != nil {
		if apierrors.IsNotFound(err) {
			a.forgetTLS(key)
			return nil, ReasonTLSSecretNotFound, notFound, nil
		}
		return nil, "", "", fmt.Errorf("reading Secret %s: %w", spec.SecretName, err)
	}
	invalid := func(why string) (*tlsAdmin, string, string, error) {
		a.forgetTLS(key)
		return nil, ReasonTLSSecretInvalid, fmt.Sprintf("Secret %q (spec.tls.secretName): %s: the operator makes no "+
			"admin calls to this Broker until it is fixed", spec.SecretName, why), nil
	}
	pool, err := tlsconfig.ParsePool(s.Data[v1alpha1.TLSCAKey])
	if err != nil {
		return invalid(fmt.Sprintf("%s holds no PEM CA certificate", v1alpha1.TLSCAKey))
	}
	var pair *tls.Certificate
	if needPair {
		// The brokers ask for client certificates: the operator presents theirs.
		p, err := tls.X509KeyPair(s.Data[v1alpha1.TLSCertKey], s.Data[v1alpha1.TLSKeyKey])
		if err != nil {
			return invalid(fmt.Sprintf("%s and %s: %v", v1alpha1.TLSCertKey, v1alpha1.TLSKeyKey, err))
		}
		pair = &p
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if cur := a.tlsAdmins[key]; cur != nil && cur.secret == secret && cur.uid == s.UID && cur.version == s.ResourceVersion {
		return cur, "", "", nil // made meanwhile from the same Secret
	}
	a.forgetTLSLocked(key)
	cfg := tlsconfig.NewClientConfig(pool, pair, a.now)
	admin, closer := base.WithTLS(cfg)
	cur := &tlsAdmin{secret: secret, uid: s.UID, version: s.ResourceVersion, admin: admin, closer: closer, cfg: cfg,
		probed: map[string]probeResult{}}
	a.tlsAdmins[key] = cur
	return cur, "", "", nil
}

// currentTLS returns the Broker's TLS admin when it was made from this version of the
// Secret.
func (a *BrokerAdmins) currentTLS(key, secret client.ObjectKey, uid types.UID, version string) *tlsAdmin {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cur := a.tlsAdmins[key]; cur != nil && cur.secret == secret && cur.uid == uid && cur.version == version {
		return cur
	}
	return nil
}

// forgetTLS releases a Broker's TLS admin, if any.
func (a *BrokerAdmins) forgetTLS(broker client.ObjectKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forgetTLSLocked(broker)
}

func (a *BrokerAdmins) forgetTLSLocked(broker client.ObjectKey) {
	if cur := a.tlsAdmins[broker]; cur != nil {
		delete(a.tlsAdmins, broker)
		if cur.closer != nil {
			_ = cur.closer.Close()
		}
	}
}

// tlsCondition is the TLS condition of br: from acc when no TLS admin could be made,
// else from handshakes with its ready pods (each kept tlsReprobe). ok is false without
// spec.tls: no condition then.
func (a *BrokerAdmins) tlsCondition(ctx context.Context, br *v1alpha1.Broker, acc adminAccess, pods map[string]*corev1.Pod) (metav1.Condition, bool) {
	if br.Spec.TLS == nil {
		return metav1.Condition{}, false
	}
	c := metav1.Condition{Type: v1alpha1.ConditionTLS, Status: metav1.ConditionFalse, ObservedGeneration: br.Generation}
	if acc.TLSReason != "" {
		c.Reason, c.Message = acc.TLSReason, acc.TLSMessage
		return c, true
	}
	a.mu.Lock()
	ta := a.tlsAdmins[client.ObjectKeyFromObject(br)]
	a.mu.Unlock()
	if ta == nil {
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, ReasonTLSNotChecked, "no TLS admin for this Broker yet"
		return c, true
	}
	type target struct{ pod, addr string }
	var targets []target
	for g := range br.Spec.Groups {
		for id := range br.Spec.ReplicasPerGroup {
			if pod := resource.BrokerPodName(br, g, id); podReady(pods[pod]) {
				targets = append(targets, target{pod, resource.BrokerMemberAddress(br, g, id)})
			}
		}
	}
	results := make([]probeResult, len(targets))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = ta.probeOnce(ctx, a.probe(), a.now, t.addr)
		}()
	}
	wg.Wait()

	var bad []string
	var firstExpiry time.Time
	var firstPod, firstSubject string
	checked := 0
	for i, r := range results {
		t := targets[i]
		if r.err != nil {
			reason, why, judged := classifyTLSError(r.err, br.Spec.TLS.SecretName)
			if !judged {
				continue // not reachable now (restarting, say): no verdict on its certificate
			}
			checked++
			if c.Reason == "" || reason == ReasonCertificateExpired {
				c.Reason = reason // expiry first: it is what someone must act on
			}
			bad = append(bad, fmt.Sprintf("%s (%s): %s", t.pod, t.addr, why))
			continue
		}
		checked++
		if leaf := r.chain[0]; firstExpiry.IsZero() || leaf.NotAfter.Before(firstExpiry) {
			firstExpiry, firstPod, firstSubject = leaf.NotAfter, t.pod, leaf.Subject.String()
		}
	}
	switch {
	case len(bad) > 0:
		sort.Strings(bad)
		c.Message = strings.Join(bad, "; ")
	case checked == 0:
		c.Status, c.Reason = metav1.ConditionUnknown, ReasonTLSNotChecked
		c.Message = "no ready broker to make a TLS handshake with yet"
	default:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonTLSVerified
		c.Message = fmt.Sprintf("the certificates of %d brokers verify against %s of Secret %q; the first to expire is %s's (%s) at %s",
			checked, v1alpha1.TLSCAKey, br.Spec.TLS.SecretName, firstPod, firstSubject, firstExpiry.UTC().Format(time.RFC3339))
	}
	return c, true
}

// probeOnce returns the handshake result with addr, made at most every tlsReprobe.
func (ta *tlsAdmin) probeOnce(ctx context.Context, probe TLSProbe, now func() time.Time, addr string) probeResult {
	ta.mu.Lock()
	r, ok := ta.probed[addr]
	ta.mu.Unlock()
	if ok && now().Sub(r.at) < tlsReprobe {
		return r
	}
	pctx, cancel := context.WithTimeout(ctx, tlsProbeTimeout)
	defer cancel()
	chain, err := probe(pctx, addr, ta.cfg)
	if err == nil && len(chain) == 0 {
		err = errors.New("the broker presented no certificate")
	}
	r = probeResult{at: now(), chain: chain, err: err}
	var ne net.Error
	if err == nil || !errors.As(err, &ne) { // a network error is tried again next time
		ta.mu.Lock()
		ta.probed[addr] = r
		ta.mu.Unlock()
	}
	return r
}

// classifyTLSError turns a failed handshake into the condition's reason and what to
// say; judged is false for a broker that could not be reached at all.
func classifyTLSError(err error, secret string) (reason, why string, judged bool) {
	var ce *tlsconfig.CertificateError
	switch {
	case errors.As(err, &ce) && ce.Expired():
		return ReasonCertificateExpired, fmt.Sprintf("certificate %q expired at %s (valid from %s)", ce.Subject,
			ce.NotAfter.UTC().Format(time.RFC3339), ce.NotBefore.UTC().Format(time.RFC3339)), true
	case errors.As(err, &ce) && ce.UnknownAuthority():
		return ReasonUnknownAuthority, fmt.Sprintf("certificate %q (issuer %q, expires %s) is not signed by a CA in %s of Secret %q",
			ce.Subject, ce.Issuer, ce.NotAfter.UTC().Format(time.RFC3339), v1alpha1.TLSCAKey, secret), true
	case errors.As(err, &ce):
		return ReasonCertificateInvalid, ce.Error(), true
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" || errors.As(err, &ne) && ne.Timeout() {
		return "", "", false
	}
	return ReasonTLSHandshakeFailed, "TLS handshake failed: " + err.Error(), true
}

// setTLSCondition records the TLS condition (removes it without spec.tls), and reports
// whether it changed.
func setTLSCondition(conds *[]metav1.Condition, c metav1.Condition, ok bool) bool {
	if !ok {
		return meta.RemoveStatusCondition(conds, v1alpha1.ConditionTLS)
	}
	return meta.SetStatusCondition(conds, c)
}

// checkTLS sets the TLS condition of a Broker with spec.tls from handshakes with its
// ready brokers. A failure is a condition, not a failed reconcile.
func (r *BrokerReconciler) checkTLS(ctx context.Context, br *v1alpha1.Broker, st *brokerState) (time.Duration, error) {
	c, ok := r.admins().tlsCondition(ctx, br, st.access, st.pods)
	if setTLSCondition(&br.Status.Conditions, c, ok) && ok && c.Status == metav1.ConditionFalse {
		r.Recorder.Eventf(br, nil, corev1.EventTypeWarning, c.Reason, "TLS", "%s", c.Message)
	}
	return 0, nil
}
