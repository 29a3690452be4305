package controllers

import (
	"context"
	"fmt"
	"io"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/pkg/acl"
	rmqadmin "github.com/openrmq/rocketmq-operator/pkg/admin"
)

// countingSigner counts the signing admins made and released.
type countingSigner struct {
	*fakeAdmin
	made   []acl.Credentials
	closed int
}

func (s *countingSigner) WithCredentials(c acl.Credentials) (BrokerAdmin, io.Closer) {
	s.made = append(s.made, c)
	signed, _ := s.fakeAdmin.WithCredentials(c)
	return signed, closerFunc(func() error { s.closed++; return nil })
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// TestBrokerAdminsKeepsAndRemakes: one signing admin per Broker, kept while the Secret's
// account stays, remade (and the old one released) when it changes, released when the
// Broker stops naming it; the Secret's absence or bad content is reported, not an error.
func TestBrokerAdminsKeepsAndRemakes(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).Build()
	signer := &countingSigner{fakeAdmin: newFakeAdmin()}
	admins := NewBrokerAdmins(signer, c, c)
	br := &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: "rmq"}}

	check := func(wantReason string, wantMade, wantClosed int) adminAccess {
		t.Helper()
		acc, err := admins.For(ctx, br)
		if err != nil {
			t.Fatal(err)
		}
		if acc.Reason != wantReason || len(signer.made) != wantMade || signer.closed != wantClosed {
			t.Fatalf("reason %q (%s), made %d, closed %d; want %q, %d, %d", acc.Reason, acc.Message,
				len(signer.made), signer.closed, wantReason, wantMade, wantClosed)
		}
		if (acc.Admin == nil) != (acc.err() != nil) {
			t.Fatalf("admin %v with err %v", acc.Admin, acc.err())
		}
		return acc
	}
	if acc := check("", 0, 0); acc.Admin != BrokerAdmin(signer) {
		t.Fatal("no ACL: the base admin")
	}
	br.Spec.ACL = &v1alpha1.BrokerACL{SecretName: "acl"}
	if acc := check(ReasonCredentialsNotSet, 0, 0); acc.Admin != BrokerAdmin(signer) {
		t.Fatal("no credentials: the base admin, unsigned")
	}
	br.Spec.ACL.OperatorCredentialsSecretName = "op"
	check(ReasonCredentialsSecretNotFound, 0, 0)

	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: "op"},
		Data: map[string][]byte{"accessKey": []byte("operator")}}
	if err := c.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	check(ReasonCredentialsInvalid, 0, 0)
	sec.Data["secretKey"] = []byte("s1")
	if err := c.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	first := check(ReasonSigned, 1, 0)
	if signer.made[0] != (acl.Credentials{AccessKey: "operator", SecretKey: "s1"}) {
		t.Fatalf("signed with %+v", signer.made[0])
	}
	if err := first.Admin.UpdateBrokerConfig(ctx, "b:1", nil); err != nil {
		t.Fatal(err)
	}
	if calls := signer.callsFor("UpdateBrokerConfig", ""); len(calls) != 1 || calls[0].As != "operator" {
		t.Fatalf("calls %+v", calls)
	}
	check(ReasonSigned, 1, 0) // unchanged Secret: the same admin

	sec.Labels = map[string]string{"team": "mq"}
	if err := c.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	check(ReasonSigned, 1, 0) // same account: kept
	sec.Data["secretKey"] = []byte("s2")
	if err := c.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	check(ReasonSigned, 2, 1) // new secret key: remade, the old one released

	br.Spec.ACL.OperatorCredentialsSecretName = ""
	check(ReasonCredentialsNotSet, 2, 2)
	br.Spec.ACL.OperatorCredentialsSecretName = "op"
	check(ReasonSigned, 3, 2)
	admins.Forget(client.ObjectKeyFromObject(br))
	check(ReasonSigned, 4, 3)
	if err := c.Delete(ctx, sec); err != nil {
		t.Fatal(err)
	}
	check(ReasonCredentialsSecretNotFound, 4, 4)

	// A base admin that cannot sign cannot serve a Broker with credentials.
	plain := NewBrokerAdmins(struct{ BrokerAdmin }{signer}, c, c)
	if acc, err := plain.For(ctx, br); err != nil || acc.Reason != ReasonSigningUnsupported || acc.Admin != nil {
		t.Fatalf("%+v %v", acc, err)
	}
}

func TestExplainRefusal(t *testing.T) {
	refused := fmt.Errorf("on broker-a: %w", &rmqadmin.Error{Request: 200, Code: 1, Remark: "No accessKey is configured"})
	unsigned := adminAccess{Reason: ReasonCredentialsNotSet, Message: "spec.acl.operatorCredentialsSecretName is not set"}
	if got := explainRefusal(refused, unsigned).Error(); got != refused.Error()+
		" (the call was unsigned: the Broker's spec.acl.operatorCredentialsSecretName is not set)" {
		t.Errorf("got %s", got)
	}
	for _, acc := range []adminAccess{{}, {Reason: ReasonSigned}} {
		if got := explainRefusal(refused, acc); got != refused {
			t.Errorf("%+v: %v", acc, got)
		}
	}
	if got := explainRefusal(errString("connection refused"), unsigned); got.Error() != "connection refused" {
		t.Errorf("not a refusal: %v", got)
	}
	if explainRefusal(nil, unsigned) != nil {
		t.Error("nil stays nil")
	}
}
