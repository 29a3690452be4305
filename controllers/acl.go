package controllers

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/resource"
	"github.com/openrmq/rocketmq-operator/pkg/acl"
)

// Brokers with spec.acl check every request against plain_acl.yml. The operator signs its
// admin calls to such a Broker with the account in spec.acl.operatorCredentialsSecretName:
// BrokerAdmins hands each reconcile the admin for the Broker at hand, and the
// AdminAccess condition tells the user whether the calls are signed or will be refused.

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// CredentialedAdmin is a BrokerAdmin that can sign its requests (RemotingAdmin is one).
type CredentialedAdmin interface {
	BrokerAdmin
	// WithCredentials returns an admin that signs every request with creds, and what
	// releases it (its connections) once it is no longer used.
	WithCredentials(creds acl.Credentials) (BrokerAdmin, io.Closer)
}

// Reasons of the AdminAccess condition.
const (
	ReasonSigned                    = "Signed"
	ReasonCredentialsNotSet         = "CredentialsNotSet"
	ReasonCredentialsSecretNotFound = "CredentialsSecretNotFound"
	ReasonCredentialsInvalid        = "CredentialsInvalid"
	ReasonSigningUnsupported        = "SigningUnsupported"
)

// adminAccess is how the operator's calls reach one Broker's brokers.
type adminAccess struct {
	// Admin makes the calls; nil when none can be made (the credentials are missing or bad).
	Admin BrokerAdmin
	// Reason and Message of the AdminAccess condition; Reason is "" without spec.acl.
	Reason, Message string
	// TLSReason and TLSMessage say why a Broker with spec.tls has no admin (its Secret is
	// missing or unusable): the TLS condition's; the AdminAccess condition is then left
	// as it was. Both "" otherwise.
	TLSReason, TLSMessage string
}

// err is why no call can be made, or nil.
func (a adminAccess) err() error {
	if a.Admin != nil {
		return nil
	}
	if a.TLSReason != "" {
		return fmt.Errorf("%s", a.TLSMessage)
	}
	return fmt.Errorf("%s", a.Message)
}

// BrokerAdmins hands out the admin for one Broker's calls: the unsigned base admin, or, for
// a Broker with spec.acl.operatorCredentialsSecretName, one made from it that signs with
// the account in that Secret. Signing admins are kept per Broker and remade when the
// Secret's content changes, so an edited Secret applies to the next call.
//
// Secret content is never cached: the manager's cache holds only Secrets' metadata (the
// controllers watch Secrets metadata-only), whose resourceVersion tells when to read a
// Secret again through the API reader.
type BrokerAdmins struct {
	base BrokerAdmin
	meta client.Reader // the manager's client: Secret metadata from the cache
	data client.Reader // the manager's API reader: Secret content, uncached

	// Probe makes the TLS condition's handshakes [a TLS dial]; Now is the clock of their
	// certificate checks [time.Now]. Tests replace them.
	Probe TLSProbe
	Now   func() time.Time

	mu        sync.Mutex
	signed    map[client.ObjectKey]*signedAdmin // by Broker
	tlsAdmins map[client.ObjectKey]*tlsAdmin    // by Broker with spec.tls (tls.go)
}

type signedAdmin struct {
	via     *tlsAdmin // the TLS admin it signs over; nil: the base admin
	secret  client.ObjectKey
	uid     types.UID
	version string // resourceVersion of the Secret read
	creds   acl.Credentials
	admin   BrokerAdmin
	closer  io.Closer
}

// NewBrokerAdmins returns the admins of Brokers made from base. meta reads Secret metadata
// (the manager's client), data reads Secrets themselves (the manager's API reader).
func NewBrokerAdmins(base BrokerAdmin, meta, data client.Reader) *BrokerAdmins {
	return &BrokerAdmins{base: base, meta: meta, data: data, signed: map[client.ObjectKey]*signedAdmin{},
		tlsAdmins: map[client.ObjectKey]*tlsAdmin{}}
}

// For returns how calls reach br's brokers: over TLS with spec.tls (tls.go), signed with
// spec.acl's credentials. The error is a failure to read a Secret other than its
// absence, worth a retry; a missing or unusable Secret is in the access.
func (a *BrokerAdmins) For(ctx context.Context, br *v1alpha1.Broker) (adminAccess, error) {
	key := client.ObjectKeyFromObject(br)
	base := a.base
	var via *tlsAdmin
	if br.Spec.TLS != nil {
		ta, reason, msg, err := a.tlsFor(ctx, br)
		if err != nil {
			return adminAccess{}, err
		}
		if ta == nil {
			a.forgetSigned(key)
			return adminAccess{TLSReason: reason, TLSMessage: msg}, nil
		}
		base, via = ta.admin, ta
	} else {
		a.forgetTLS(key)
	}
	if br.Spec.ACL == nil {
		a.forgetSigned(key)
		return adminAccess{Admin: base}, nil
	}
	name := resource.OperatorCredentialsSecretName(br)
	if name == "" {
		a.forgetSigned(key)
		return adminAccess{Admin: base, Reason: ReasonCredentialsNotSet, Message: "spec.acl.operatorCredentialsSecretName " +
			"is not set: the operator's admin calls (subscription groups, offsets and lag, name-server updates) go " +
			"unsigned, and the brokers refuse them unless plain_acl.yml white-lists the operator's address"}, nil
	}
	signer, ok := base.(CredentialedAdmin)
	if !ok {
		return adminAccess{Reason: ReasonSigningUnsupported, Message: fmt.Sprintf(
			"the operator's admin client (%T) cannot sign requests", base)}, nil
	}
	secret := client.ObjectKey{Namespace: br.Namespace, Name: name}
	src := "spec.acl.operatorCredentialsSecretName"
	if br.Spec.ACL.OperatorCredentialsSecretName == "" {
		src = "the operator's own account, which it makes"
	}
	notFound := adminAccess{Reason: ReasonCredentialsSecretNotFound, Message: fmt.Sprintf(
		"Secret %q (%s) not found: the operator makes no admin calls "+
			"to this Broker until it exists", name, src)}

	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := a.meta.Get(ctx, secret, m); err != nil {
		if apierrors.IsNotFound(err) {
			a.forgetSigned(key)
			return notFound, nil
		}
		return adminAccess{}, fmt.Errorf("reading Secret %s: %w", name, err)
	}

	// a.mu guards the table only: it is not held across the API read below, so that a
	// slow API server holds up no other Broker's calls (the ConsumerGroup and Topic
	// controllers share these admins). What the read finds is checked against the table
	// again once a.mu is taken back.
	a.mu.Lock()
	if cur := a.signed[key]; cur != nil && cur.via == via && cur.secret == secret && cur.uid == m.UID && cur.version == m.ResourceVersion {
		access := cur.access()
		a.mu.Unlock()
		return access, nil
	}
	a.mu.Unlock()
	s := &corev1.Secret{}
	if err := a.data.Get(ctx, secret, s); err != nil {
		if apierrors.IsNotFound(err) {
			a.forgetSigned(key)
			return notFound, nil
		}
		return adminAccess{}, fmt.Errorf("reading Secret %s: %w", name, err)
	}
	creds := acl.Credentials{AccessKey: string(s.Data[v1alpha1.ACLAccessKeyKey]), SecretKey: string(s.Data[v1alpha1.ACLSecretKeyKey])}
	if creds.AccessKey == "" || creds.SecretKey == "" {
		a.forgetSigned(key)
		return adminAccess{Reason: ReasonCredentialsInvalid, Message: fmt.Sprintf(
			"Secret %q (%s) needs non-empty keys %s and %s: the operator "+
				"makes no admin calls to this Broker until it has them", name, src, v1alpha1.ACLAccessKeyKey, v1alpha1.ACLSecretKeyKey)}, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := a.signed[key]
	if cur != nil && cur.via == via && cur.secret == secret && cur.creds == creds {
		// Same account (say, only labels changed): keep the admin and its connections.
		cur.uid, cur.version = s.UID, s.ResourceVersion
		return cur.access(), nil
	}
	a.forgetLocked(key)
	admin, closer := signer.WithCredentials(creds)
	cur = &signedAdmin{via: via, secret: secret, uid: s.UID, version: s.ResourceVersion, creds: creds, admin: admin, closer: closer}
	a.signed[key] = cur
	return cur.access(), nil
}

func (s *signedAdmin) access() adminAccess {
	return adminAccess{Admin: s.admin, Reason: ReasonSigned, Message: fmt.Sprintf(
		"admin calls are signed with accessKey %s from Secret %q; plain_acl.yml must declare it admin: true",
		s.creds.AccessKey, s.secret.Name)}
}

// Forget releases the signing and TLS admins of a Broker, if any: the Broker is gone. A
// call still under way on them fails, and its reconcile retries.
func (a *BrokerAdmins) Forget(broker client.ObjectKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forgetLocked(broker)
	a.forgetTLSLocked(broker)
}

// forgetSigned releases the signing admin of a Broker, if any: it no longer signs.
func (a *BrokerAdmins) forgetSigned(broker client.ObjectKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forgetLocked(broker)
}

func (a *BrokerAdmins) forgetLocked(broker client.ObjectKey) {
	if cur := a.signed[broker]; cur != nil {
		delete(a.signed, broker)
		if cur.closer != nil {
			_ = cur.closer.Close()
		}
	}
}

// setAdminAccess records the AdminAccess condition of a Broker with spec.acl (and removes
// it without), and reports whether it changed.
func setAdminAccess(conds *[]metav1.Condition, gen int64, acc adminAccess) bool {
	if acc.Reason == "" {
		return meta.RemoveStatusCondition(conds, v1alpha1.ConditionAdminAccess)
	}
	c := metav1.Condition{Type: v1alpha1.ConditionAdminAccess, Status: metav1.ConditionFalse,
		Reason: acc.Reason, Message: acc.Message, ObservedGeneration: gen}
	if acc.Reason == ReasonSigned {
		c.Status = metav1.ConditionTrue
	}
	return meta.SetStatusCondition(conds, c)
}

// brokersOfSecret maps a Secret to the Brokers of its namespace that use it: as the
// operator's credentials (spec.acl's or the generated ones), unless credsOnly also as the
// ACL file (spec.acl's or the one rendered from Users), and as spec.tls's Secret (whose
// ca.crt the operator's calls trust).
func brokersOfSecret(ctx context.Context, c client.Reader, secret client.Object, credsOnly bool) []v1alpha1.Broker {
	var list v1alpha1.BrokerList
	if err := c.List(ctx, &list, client.InNamespace(secret.GetNamespace())); err != nil {
		return nil
	}
	var out []v1alpha1.Broker
	for _, b := range list.Items {
		n := secret.GetName()
		if resource.OperatorCredentialsSecretName(&b) == n || (!credsOnly && resource.ACLSecretName(&b) == n) ||
			b.Spec.TLS != nil && b.Spec.TLS.SecretName == n {
			out = append(out, b)
		}
	}
	return out
}

// requestsOf turns Brokers into reconcile requests.
func requestsOf(brokers []v1alpha1.Broker) []reconcile.Request {
	var out []reconcile.Request
	for i := range brokers {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&brokers[i])})
	}
	return out
}
