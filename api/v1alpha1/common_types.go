package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// Condition types shared by every kind. Ready: every pod (or every broker call) is done.
// Progressing: a rollout or an admin action is under way. Degraded: the last reconcile failed.
const (
	ConditionReady       = "Ready"
	ConditionProgressing = "Progressing"
	ConditionDegraded    = "Degraded"
)

// ReclaimPolicy says what happens to a volume when its pod or owner goes away.
// +kubebuilder:validation:Enum=Retain;Delete
type ReclaimPolicy string

const (
	// ReclaimRetain keeps the PersistentVolumeClaim.
	ReclaimRetain ReclaimPolicy = "Retain"
	// ReclaimDelete deletes the PersistentVolumeClaim.
	ReclaimDelete ReclaimPolicy = "Delete"
)

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// PodOverrides are copied onto the pod template of every pod the operator creates for the
// resource. Labels and annotations are added to the operator's own; the operator's win.
type PodOverrides struct {
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ContainerSpec is the image and the resources of the main container.
type ContainerSpec struct {
	// Image of the container; it must hold the /namesrv and /broker binaries. Empty runs
	// the image of the operator's own version (openrmq/rocketmq-operator:<version>).
	// +kubebuilder:validation:MinLength=1
	// +optional
	Image string `json:"image,omitempty"`
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// Pod overrides: scheduling, security context, extra labels and annotations.
	// +optional
	Pod PodOverrides `json:"pod,omitempty"`
}

// NetworkPolicySpec asks for a NetworkPolicy, owned by the resource, that selects the
// resource's pods and admits ingress only from ClientPeers, the operator's namespace and
// the cluster's own pods (what exactly is on each kind's networkPolicy field). Egress is
// left alone. It only takes effect where the cluster's network plugin enforces
// NetworkPolicies.
type NetworkPolicySpec struct {
	// Enabled creates the NetworkPolicy; setting it to false (or removing networkPolicy)
	// deletes it.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// ClientPeers may reach the client ports, with the same meaning as a NetworkPolicy
	// ingress rule's from entries. Empty admits the pods of the resource's own namespace
	// (not every source, as an empty from would). [{namespaceSelector: {}}] admits every
	// pod of the cluster; an ipBlock admits addresses outside it, and brokers reachable
	// from there should run with spec.acl.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:XValidation:rule="has(self.podSelector) || has(self.namespaceSelector) || has(self.ipBlock)",message="a client peer sets podSelector, namespaceSelector or ipBlock"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.ipBlock) || !(has(self.podSelector) || has(self.namespaceSelector))",message="a client peer with ipBlock cannot also set podSelector or namespaceSelector"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.ipBlock) || isCIDR(self.ipBlock.cidr)",message="ipBlock.cidr must be a CIDR such as 10.0.0.0/8 or 2001:db8::/32"
	// +listType=atomic
	// +optional
	ClientPeers []networkingv1.NetworkPolicyPeer `json:"clientPeers,omitempty"`
}

// IsEnabled says whether a NetworkPolicy is wanted; a nil spec means no.
func (n *NetworkPolicySpec) IsEnabled() bool { return n != nil && n.Enabled }
