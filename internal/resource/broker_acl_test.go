package resource

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	brokeracl "github.com/openrmq/rocketmq-operator/broker/acl"
)

func TestACLSecretNames(t *testing.T) {
	br := broker()
	if ACLSecretName(br) != "" || OperatorCredentialsSecretName(br) != "" {
		t.Error("no spec.acl: no Secrets")
	}
	br.Spec.ACL = &v1alpha1.BrokerACL{SecretName: "mine"}
	if ACLSecretName(br) != "mine" || OperatorCredentialsSecretName(br) != "" {
		t.Errorf("file mode without credentials: %q %q", ACLSecretName(br), OperatorCredentialsSecretName(br))
	}
	br.Spec.ACL = &v1alpha1.BrokerACL{}
	if ACLSecretName(br) != "rmq-users-acl" || OperatorCredentialsSecretName(br) != "rmq-operator-credentials" {
		t.Errorf("users mode: %q %q", ACLSecretName(br), OperatorCredentialsSecretName(br))
	}
	br.Spec.ACL.OperatorCredentialsSecretName = "op"
	if OperatorCredentialsSecretName(br) != "op" {
		t.Errorf("users mode with named credentials: %q", OperatorCredentialsSecretName(br))
	}
	sts := buildSTS(t, br, "StatefulSet/rmq-broker-a")
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name == "acl" && v.Secret.SecretName != "rmq-users-acl" {
			t.Errorf("users mode mounts %s", v.Secret.SecretName)
		}
	}
}

// TestRenderPlainACL: the rendered file is stable, parses back, and is what the brokers load.
func TestRenderPlainACL(t *testing.T) {
	br := broker()
	f := PlainACL{GlobalWhiteRemoteAddresses: []string{"10.1.*.*"}, Accounts: []ACLAccount{
		{AccessKey: "rocketmq-operator", SecretKey: "operator-secret", Admin: true},
		{AccessKey: "billing-app", SecretKey: "12345678", DefaultTopicPerm: "DENY", TopicPerms: []string{"orders=PUB|SUB"},
			GroupPerms: []string{"billing=SUB"}, WhiteRemoteAddress: "192.168.1.{1,2}"},
	}}
	a, err := RenderPlainACL(br, f)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := RenderPlainACL(br, f)
	if string(a) != string(b) || !strings.HasPrefix(string(a), "# Rendered by rocketmq-operator from the User resources of Broker mq/rmq") {
		t.Fatalf("render:\n%s", a)
	}
	back, err := ParsePlainACL(a)
	if err != nil || len(back.Accounts) != 2 || back.Accounts[1].SecretKey != "12345678" || back.Accounts[1].TopicPerms[0] != "orders=PUB|SUB" {
		t.Fatalf("parse back: %+v %v", back, err)
	}
	if _, err := brokeracl.ParseRules(a); err != nil {
		t.Fatalf("the brokers would refuse the file: %v\n%s", err, a)
	}
	empty, _ := RenderPlainACL(br, PlainACL{})
	if !strings.Contains(string(empty), "accounts: []") {
		t.Errorf("no accounts is an empty list, which lets nothing in:\n%s", empty)
	}
}

func TestOperatorCredentialsSecretKeepsItsKey(t *testing.T) {
	br := broker()
	br.Spec.ACL = &v1alpha1.BrokerACL{}
	b := &OperatorCredentialsSecret{Instance: br, Scheme: scheme(t)}
	obj, _ := b.Build()
	if err := b.Update(obj); err != nil {
		t.Fatal(err)
	}
	s := obj.(*corev1.Secret)
	key := string(s.Data["secretKey"])
	if string(s.Data["accessKey"]) != OperatorAccessKey || len(key) < 16 || !metav1.IsControlledBy(s, br) {
		t.Fatalf("made %+v", s)
	}
	if err := b.Update(s); err != nil || string(s.Data["secretKey"]) != key {
		t.Errorf("the secret key changed on update: %q -> %q (%v)", key, s.Data["secretKey"], err)
	}
	other := &corev1.Secret{}
	_ = b.Update(other)
	if string(other.Data["secretKey"]) == key {
		t.Error("two Secrets made the same secret key")
	}
}
