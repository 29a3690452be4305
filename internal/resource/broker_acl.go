package resource

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// A Broker whose spec.acl names no secretName gets two Secrets of the operator's (see
// v1alpha1.BrokerACL): the plain_acl.yml it renders from the Broker's User resources, and,
// unless spec.acl.operatorCredentialsSecretName names one, the operator's own admin
// account. Both are owned by the Broker and labelled managed-by.

// OperatorAccessKey is the accessKey of the admin account the operator makes itself.
const OperatorAccessKey = "rocketmq-operator"

// UsersACLSecretName holds the plain_acl.yml rendered from User resources.
func UsersACLSecretName(br *v1alpha1.Broker) string { return br.Name + "-users-acl" }

// GeneratedCredentialsSecretName holds the admin account the operator made for itself.
func GeneratedCredentialsSecretName(br *v1alpha1.Broker) string {
	return br.Name + "-operator-credentials"
}

// ACLSecretName is the Secret the brokers' plain_acl.yml is mounted from: spec.acl's
// secretName, or the rendered one; "" without spec.acl.
func ACLSecretName(br *v1alpha1.Broker) string {
	switch acl := br.Spec.ACL; {
	case acl == nil:
		return ""
	case acl.UsersMode():
		return UsersACLSecretName(br)
	default:
		return acl.SecretName
	}
}

// OperatorCredentialsSecretName is the Secret the operator signs its calls with:
// spec.acl.operatorCredentialsSecretName, else (when it renders the file) the one it
// makes, else "" (calls go unsigned).
func OperatorCredentialsSecretName(br *v1alpha1.Broker) string {
	switch acl := br.Spec.ACL; {
	case acl == nil:
		return ""
	case acl.OperatorCredentialsSecretName != "":
		return acl.OperatorCredentialsSecretName
	case acl.UsersMode():
		return GeneratedCredentialsSecretName(br)
	default:
		return ""
	}
}

// ACLAccount is one account of plain_acl.yml, with the file's field names.
type ACLAccount struct {
	AccessKey          string   `json:"accessKey"`
	SecretKey          string   `json:"secretKey"`
	WhiteRemoteAddress string   `json:"whiteRemoteAddress,omitempty"`
	Admin              bool     `json:"admin,omitempty"`
	DefaultTopicPerm   string   `json:"defaultTopicPerm,omitempty"`
	DefaultGroupPerm   string   `json:"defaultGroupPerm,omitempty"`
	TopicPerms         []string `json:"topicPerms,omitempty"`
	GroupPerms         []string `json:"groupPerms,omitempty"`
}

// PlainACL is the content of plain_acl.yml.
type PlainACL struct {
	GlobalWhiteRemoteAddresses []string     `json:"globalWhiteRemoteAddresses,omitempty"`
	Accounts                   []ACLAccount `json:"accounts"`
}

// aclHeader starts every rendered file; the brokers skip comments.
const aclHeader = "# Rendered by rocketmq-operator from the User resources of Broker %s/%s; edits are overwritten.\n"

// RenderPlainACL writes the file for br, accounts in the order given: the same input
// gives the same bytes, so an unchanged file is not rewritten.
func RenderPlainACL(br *v1alpha1.Broker, f PlainACL) ([]byte, error) {
	if f.Accounts == nil {
		f.Accounts = []ACLAccount{}
	}
	body, err := yaml.Marshal(f)
	if err != nil {
		return nil, err
	}
	return append(fmt.Appendf(nil, aclHeader, br.Namespace, br.Name), body...), nil
}

// ParsePlainACL reads a file RenderPlainACL wrote (comments are YAML's).
func ParsePlainACL(data []byte) (PlainACL, error) {
	var f PlainACL
	err := yaml.Unmarshal(data, &f)
	return f, err
}

// UsersACLSecret builds the Secret of the rendered plain_acl.yml. It is never in a pod
// template's hash: the kubelet refreshes the mounted file and the brokers re-read it.
type UsersACLSecret struct {
	Instance *v1alpha1.Broker
	Scheme   *runtime.Scheme
	Content  []byte
}

func (b *UsersACLSecret) Build() (client.Object, error) {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: UsersACLSecretName(b.Instance), Namespace: b.Instance.Namespace}}, nil
}

func (b *UsersACLSecret) Update(obj client.Object) error {
	s := obj.(*corev1.Secret)
	s.Labels = merge(s.Labels, objectLabels(BrokerComponent, b.Instance.Name))
	s.Type = corev1.SecretTypeOpaque
	s.Data = map[string][]byte{ACLKey(b.Instance.Spec.ACL): b.Content}
	return controllerutil.SetControllerReference(b.Instance, s, b.Scheme)
}

// OperatorCredentialsSecret builds the Secret of the admin account the operator makes for
// itself. The secret key is drawn once, when the Secret is created, and kept after; delete
// the Secret to draw a new one.
type OperatorCredentialsSecret struct {
	Instance *v1alpha1.Broker
	Scheme   *runtime.Scheme
}

func (b *OperatorCredentialsSecret) Build() (client.Object, error) {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: GeneratedCredentialsSecretName(b.Instance), Namespace: b.Instance.Namespace}}, nil
}

func (b *OperatorCredentialsSecret) Update(obj client.Object) error {
	s := obj.(*corev1.Secret)
	s.Labels = merge(s.Labels, objectLabels(BrokerComponent, b.Instance.Name))
	s.Type = corev1.SecretTypeOpaque
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	if len(s.Data[v1alpha1.ACLAccessKeyKey]) == 0 || len(s.Data[v1alpha1.ACLSecretKeyKey]) < 7 {
		key := make([]byte, 24)
		if _, err := rand.Read(key); err != nil {
			return err
		}
		s.Data[v1alpha1.ACLAccessKeyKey] = []byte(OperatorAccessKey)
		s.Data[v1alpha1.ACLSecretKeyKey] = []byte(base64.RawURLEncoding.EncodeToString(key))
	}
	return controllerutil.SetControllerReference(b.Instance, s, b.Scheme)
}
