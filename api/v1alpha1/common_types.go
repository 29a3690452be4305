package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
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
	// Image of the container; it must hold the /namesrv and /broker binaries.
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`
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
