package controllers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	rmqadmin "github.com/openrmq/rocketmq-operator/pkg/admin"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
	"github.com/openrmq/rocketmq-operator/pkg/tlsconfig/tlstest"
)

// tlsBroker is a loopback remoting server in enforcing mode that answers
// UPDATE_BROKER_CONFIG, standing in for the brokers of a Broker with spec.tls; its
// certificate can be swapped.
type tlsBroker struct {
	addr  string
	pair  atomic.Pointer[tls.Certificate]
	calls chan *remoting.Command
}

func startTLSBroker(t *testing.T, pair *tls.Certificate, clientCAs *x509.CertPool) *tlsBroker {
	t.Helper()
	b := &tlsBroker{calls: make(chan *remoting.Command, 16)}
	b.pair.Store(pair)
	cfg := &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return b.pair.Load(), nil }}
	if clientCAs != nil {
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, clientCAs
	}
	s := remoting.NewServer(remoting.ServerConfig{Logger: slog.New(slog.DiscardHandler),
		TLS: &remoting.ServerTLS{Mode: remoting.TLSEnforcing, Config: cfg}})
	s.Handle(remoting.UpdateBrokerConfig, remoting.HandlerFunc(func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		b.calls <- req
		return req.NewResponse(remoting.Success, "")
	}), nil)
	l, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	b.addr = l.Addr().String()
	return b
}

func readyPods(names ...string) map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for _, n := range names {
		out[n] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	return out
}

// TestBrokerAdminsTLS: for a Broker with spec.tls the operator's calls go over TLS,
// trusting the Secret's ca.crt (and presenting its tls.crt where client certificates are
// required); the TLS condition says whether the brokers' certificates verify, which one
// fails and why, and when the first expires.
func TestBrokerAdminsTLS(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).Build()
	rc := remoting.NewClient(remoting.ClientConfig{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { rc.Close() })
	admins := NewBrokerAdmins(RemotingAdmin{C: rmqadmin.New(rc)}, c, c)
	t.Cleanup(func() { admins.Forget(client.ObjectKey{Namespace: "mq", Name: "rmq"}) })

	ca := tlstest.NewCA(t, "broker CA")
	leaf := ca.Issue(t, "rmq-broker", tlstest.Options{})
	b := startTLSBroker(t, &leaf.Pair, nil)
	admins.Probe = func(ctx context.Context, _ string, cfg *tls.Config) ([]*x509.Certificate, error) {
		return dialTLS(ctx, b.addr, cfg) // every pod address leads to the loopback broker
	}
	br := &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: "rmq", Generation: 3},
		Spec: v1alpha1.BrokerSpec{Groups: 1, ReplicasPerGroup: 2, ListenPort: 10911,
			TLS: &v1alpha1.TLSSpec{SecretName: "rmq-tls"}}}
	pods := readyPods("rmq-broker-a-0", "rmq-broker-a-1")

	condition := func(wantStatus metav1.ConditionStatus, wantReason string, wantIn ...string) adminAccess {
		t.Helper()
		acc, err := admins.For(ctx, br)
		if err != nil {
			t.Fatal(err)
		}
		cond, ok := admins.tlsCondition(ctx, br, acc, pods)
		if !ok || cond.Type != v1alpha1.ConditionTLS || cond.Status != wantStatus || cond.Reason != wantReason || cond.ObservedGeneration != 3 {
			t.Fatalf("condition %+v; want %s %s", cond, wantStatus, wantReason)
		}
		for _, w := range wantIn {
			if !strings.Contains(cond.Message, w) {
				t.Errorf("message %q lacks %q", cond.Message, w)
			}
		}
		return acc
	}

	acc := condition(metav1.ConditionFalse, ReasonTLSSecretNotFound, `"rmq-tls"`)
	if acc.Admin != nil || acc.err() == nil {
		t.Fatal("an admin without the TLS Secret")
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: "rmq-tls"},
		Data: map[string][]byte{"tls.crt": leaf.CertPEM, "tls.key": leaf.KeyPEM}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	condition(metav1.ConditionFalse, ReasonTLSSecretInvalid, "ca.crt")

	secret.Data["ca.crt"] = ca.CertPEM
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	acc = condition(metav1.ConditionTrue, ReasonTLSVerified, "2 brokers", "rmq-broker-a-", leaf.Cert.NotAfter.UTC().Format(time.RFC3339))
	if err := acc.Admin.UpdateBrokerConfig(ctx, b.addr, map[string]string{"namesrvAddr": "n:9876"}); err != nil {
		t.Fatalf("an admin call over TLS: %v", err)
	}
	if req := <-b.calls; !strings.Contains(string(req.Body), "namesrvAddr=n:9876") {
		t.Errorf("the broker got %q", req.Body)
	}

	// An expired certificate, then one of another CA, with a new Secret version (new admin,
	// new handshakes): the condition names the pod, the certificate and when it expired.
	now := time.Now()
	expired := ca.Issue(t, "rmq-broker-expired", tlstest.Options{NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-time.Hour)})
	b.pair.Store(&expired.Pair)
	secret.Labels = map[string]string{"bump": "1"}
	c.Update(ctx, secret)
	condition(metav1.ConditionFalse, ReasonCertificateExpired, "rmq-broker-a-0", "CN=rmq-broker-expired",
		"expired at "+expired.Cert.NotAfter.UTC().Format(time.RFC3339))

	other := tlstest.NewCA(t, "other CA").Issue(t, "rmq-broker-other", tlstest.Options{})
	b.pair.Store(&other.Pair)
	secret.Labels["bump"] = "2"
	c.Update(ctx, secret)
	condition(metav1.ConditionFalse, ReasonUnknownAuthority, "CN=rmq-broker-other", "not signed by a CA in ca.crt")

	// A broker that cannot be reached is not judged.
	admins.Probe = func(ctx context.Context, _ string, cfg *tls.Config) ([]*x509.Certificate, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	}
	secret.Labels["bump"] = "3"
	c.Update(ctx, secret)
	condition(metav1.ConditionUnknown, ReasonTLSNotChecked)

	// Without spec.tls: no condition, the base admin.
	br.Spec.TLS = nil
	acc, _ = admins.For(ctx, br)
	if _, ok := admins.tlsCondition(ctx, br, acc, pods); ok || acc.Admin != admins.base {
		t.Error("without spec.tls: a condition, or not the base admin")
	}
}

// With clientAuth Require the brokers refuse a client without a certificate; the
// operator presents the Secret's tls.crt. Signing (spec.acl) goes over the TLS admin.
func TestBrokerAdminsTLSClientCertificateAndACL(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	clientgoscheme.AddToScheme(s)
	ca := tlstest.NewCA(t, "broker CA")
	leaf := ca.Issue(t, "rmq-broker", tlstest.Options{})
	b := startTLSBroker(t, &leaf.Pair, ca.Pool())
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: "rmq-tls"},
			Data: map[string][]byte{"tls.crt": leaf.CertPEM, "tls.key": leaf.KeyPEM, "ca.crt": ca.CertPEM}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: "op"},
			Data: map[string][]byte{"accessKey": []byte("operator"), "secretKey": []byte("s3cret")}},
	).Build()
	rc := remoting.NewClient(remoting.ClientConfig{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { rc.Close() })
	admins := NewBrokerAdmins(RemotingAdmin{C: rmqadmin.New(rc)}, c, c)
	br := &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: "rmq"},
		Spec: v1alpha1.BrokerSpec{TLS: &v1alpha1.TLSSpec{SecretName: "rmq-tls", ClientAuth: v1alpha1.TLSClientAuthRequire}}}
	t.Cleanup(func() { admins.Forget(client.ObjectKeyFromObject(br)) })

	acc, err := admins.For(ctx, br)
	if err != nil || acc.Admin == nil {
		t.Fatalf("%v %v", acc, err)
	}
	if err := acc.Admin.UpdateBrokerConfig(ctx, b.addr, map[string]string{"k": "v"}); err != nil {
		t.Fatalf("with the Secret's certificate: %v", err)
	}
	<-b.calls

	br.Spec.ACL = &v1alpha1.BrokerACL{SecretName: "acl", OperatorCredentialsSecretName: "op"}
	acc, err = admins.For(ctx, br)
	if err != nil || acc.Reason != ReasonSigned {
		t.Fatalf("%+v %v", acc, err)
	}
	if err := acc.Admin.UpdateBrokerConfig(ctx, b.addr, map[string]string{"k": "v"}); err != nil {
		t.Fatalf("signed, over TLS: %v", err)
	}
	if req := <-b.calls; req.ExtFields["AccessKey"] != "operator" || req.ExtFields["Signature"] == "" {
		t.Errorf("not signed: %v", req.ExtFields)
	}
}
