package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ACLPerm is a plain_acl.yml permission: DENY, PUB, SUB or PUB|SUB.
// +kubebuilder:validation:Enum=DENY;PUB;SUB;PUB|SUB
type ACLPerm string

// DefaultUserSecretKeyKey is secretKeyRef.key's default.
const DefaultUserSecretKeyKey = "secretKey"

// UserSpec is one account of the plain_acl.yml the operator renders for a Broker whose
// spec.acl names no secretName (see BrokerACL). The fields are plain_acl.yml's.
type UserSpec struct {
	// BrokerRef names the Broker (same namespace) whose brokers accept the account; immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="brokerRef is immutable"
	BrokerRef LocalObjectReference `json:"brokerRef"`

	// AccessKey of the account: at least 7 printable characters (the brokers ignore
	// shorter keys), unique among the Broker's Users and not the operator's own.
	// +kubebuilder:validation:MinLength=7
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[!-~]+$`
	AccessKey string `json:"accessKey"`

	// SecretKeyRef is the Secret key (same namespace) that holds the secret key, at least 7
	// characters. Changing the Secret reaches the brokers without a restart.
	SecretKeyRef SecretKeyReference `json:"secretKeyRef"`

	// Admin lets the account make admin requests (create topics and groups, change broker
	// configuration). An admin account without topicPerms and groupPerms may do anything.
	// +optional
	Admin bool `json:"admin,omitempty"`

	// WhiteRemoteAddress lets requests from matching addresses in as this account without
	// a signature check, in plain_acl.yml's forms: 10.0.0.1, 10.0.0.1,10.0.0.2,
	// 192.168.1.{1,2}, 192.168.1.1-100, 192.168.*.* (IPv6 alike). A value the brokers
	// cannot parse leaves the User out of the file (Ready False, AccountInvalid).
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F.:,*{}-]*$`
	// +optional
	WhiteRemoteAddress string `json:"whiteRemoteAddress,omitempty"`

	// DefaultTopicPerm applies to topics topicPerms does not name; unset is DENY.
	// +optional
	DefaultTopicPerm ACLPerm `json:"defaultTopicPerm,omitempty"`
	// DefaultGroupPerm applies to groups groupPerms does not name; unset is DENY.
	// +optional
	DefaultGroupPerm ACLPerm `json:"defaultGroupPerm,omitempty"`

	// TopicPerms as plain_acl.yml spells them: topic=PUB, topic=SUB, topic=PUB|SUB or
	// topic=DENY.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:Pattern=`^[%|a-zA-Z0-9_-]+=(DENY|PUB|SUB|PUB\|SUB|SUB\|PUB)$`
	// +listType=atomic
	// +optional
	TopicPerms []string `json:"topicPerms,omitempty"`
	// GroupPerms as plain_acl.yml spells them: group=SUB, group=PUB|SUB or group=DENY.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:Pattern=`^[%|a-zA-Z0-9_-]+=(DENY|PUB|SUB|PUB\|SUB|SUB\|PUB)$`
	// +listType=atomic
	// +optional
	GroupPerms []string `json:"groupPerms,omitempty"`
}

// SecretKeyReference names one key of a Secret in the same namespace.
type SecretKeyReference struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="secretKeyRef.name must be the name of a Secret (lower case letters, digits, '-' and '.')"
	Name string `json:"name"`
	// Key in the Secret; default secretKey.
	// +kubebuilder:default=secretKey
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	Key string `json:"key,omitempty"`
}

// Reasons of a User's Ready condition.
const (
	// UserReasonLoaded: every broker pod accepts a request signed as the account.
	UserReasonLoaded = "Loaded"
	// UserReasonNotLoaded: the account is in the rendered file, but a broker still refuses
	// it (the kubelet refreshes a mounted Secret within about a minute, then the brokers
	// re-read it within 5 s); the message has the broker's remark.
	UserReasonNotLoaded      = "NotLoaded"
	UserReasonBrokerNotFound = "BrokerNotFound"
	// UserReasonACLNotEnabled: the Broker has no spec.acl; its brokers take every request.
	UserReasonACLNotEnabled = "ACLNotEnabled"
	// UserReasonACLFromSecret: the Broker's spec.acl.secretName supplies plain_acl.yml, so
	// Users are not rendered.
	UserReasonACLFromSecret  = "ACLFileFromSecret"
	UserReasonSecretNotFound = "SecretNotFound"
	UserReasonSecretKeyBad   = "SecretKeyInvalid"
	// UserReasonDuplicate: an older User of the Broker has the same accessKey; that one's
	// account is in the file.
	UserReasonDuplicate = "DuplicateAccessKey"
	// UserReasonReserved: the accessKey is the operator's own account.
	UserReasonReserved = "ReservedAccessKey"
	// UserReasonInvalid: the brokers could not parse the account (a whiteRemoteAddress
	// they do not understand, say); it is left out so the others still load.
	UserReasonInvalid = "AccountInvalid"
)

// UserStatus is the observed state of an account.
type UserStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// AccessKey rendered into the Broker's plain_acl.yml (empty while it is not).
	// +optional
	AccessKey string `json:"accessKey,omitempty"`
	// Loaded is "accepting/all" broker pods, as last probed.
	// +optional
	Loaded string `json:"loaded,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// User is an account of a Broker's plain ACL.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rmquser,categories=rocketmq
// +kubebuilder:printcolumn:name="AccessKey",type=string,JSONPath=`.spec.accessKey`
// +kubebuilder:printcolumn:name="Broker",type=string,JSONPath=`.spec.brokerRef.name`
// +kubebuilder:printcolumn:name="Admin",type=boolean,JSONPath=`.spec.admin`
// +kubebuilder:printcolumn:name="Loaded",type=string,JSONPath=`.status.loaded`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type User struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   UserSpec   `json:"spec"`
	Status UserStatus `json:"status,omitempty"`
}

// UserList is a list of User.
// +kubebuilder:object:root=true
type UserList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []User `json:"items"`
}

func init() {
	SchemeBuilder.Register(&User{}, &UserList{})
}

// SecretKeyKey is secretKeyRef.key, or secretKey.
func (u *User) SecretKeyKey() string {
	if u.Spec.SecretKeyRef.Key == "" {
		return DefaultUserSecretKeyKey
	}
	return u.Spec.SecretKeyRef.Key
}
