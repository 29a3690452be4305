// Package resource builds the Kubernetes objects the operator owns, one builder per object.
// Build returns the object with only its name and namespace set; Update fills in everything
// else on the object read from the API server (or the empty one about to be created), so the
// controller can apply it with controllerutil.CreateOrUpdate.
package resource

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/version"
)

// Builder builds one child object.
type Builder interface {
	// Build returns the object with its name and namespace only.
	Build() (client.Object, error)
	// Update sets labels, spec and owner reference on obj.
	Update(obj client.Object) error
}

// AppliedHook is a Builder that wants to see its object as the API server stored it (with
// the fields the server fills in, such as a Service's ClusterIP) before the builders after
// it run.
type AppliedHook interface {
	Applied(obj client.Object)
}

// Holder is a Builder whose object must not be applied yet, because what it would hold
// is not known (a Broker group's load-balancer IPs): it is skipped, a stored object kept
// as it is. Held is asked after the builders before it were applied.
type Holder interface {
	Held() bool
}

const (
	// ConfigHashAnnotation on a pod template carries the hash of the rendered config, so a
	// config change rolls the pods and nothing else does.
	ConfigHashAnnotation = "rocketmq.openrmq.io/config-hash"
	// BrokerNameLabel marks the objects of one broker group.
	BrokerNameLabel = "rocketmq.openrmq.io/broker-name"
	// BrokerIDLabel marks a broker pod's own Service with the pod's brokerId (ordinal).
	BrokerIDLabel = "rocketmq.openrmq.io/broker-id"
	// BrokerAddressesAnnotation on a group's pod template lists the addresses its pods
	// announce (pod=ClusterIP, or pod=ClusterIP/load-balancer IP): a pod Service that got
	// a new IP rolls the group.
	BrokerAddressesAnnotation = "rocketmq.openrmq.io/broker-addresses"
	// podNameLabel is the label the StatefulSet controller puts on each of its pods.
	podNameLabel = "statefulset.kubernetes.io/pod-name"

	// InstanceLabel holds the owning resource's name.
	InstanceLabel = "app.kubernetes.io/instance"
	// ComponentLabel is "nameserver" or "broker".
	ComponentLabel = "app.kubernetes.io/component"
	nameLabel      = "app.kubernetes.io/name"
	managedByLabel = "app.kubernetes.io/managed-by"
)

// ManagedBy labels every object the operator creates; the manager's cache only holds
// objects carrying it.
var ManagedBy = map[string]string{managedByLabel: "rocketmq-operator"}

// selectorLabels are the labels a StatefulSet selects on; they never change.
func selectorLabels(component, instance string) map[string]string {
	return map[string]string{
		nameLabel:      "rocketmq",
		ComponentLabel: component,
		InstanceLabel:  instance,
	}
}

// objectLabels are the selector labels plus managed-by.
func objectLabels(component, instance string) map[string]string {
	l := selectorLabels(component, instance)
	l[managedByLabel] = "rocketmq-operator"
	return l
}

// merge returns a copy of extra overlaid with ours, so ours win on conflicts.
func merge(extra, ours map[string]string) map[string]string {
	out := map[string]string{}
	maps.Copy(out, extra)
	maps.Copy(out, ours)
	return out
}

// Hash is the hex sha256 of s, shortened: it only has to change when s changes.
func Hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:16]
}

// applyPodOverrides copies the user's scheduling and security settings onto a pod spec.
func applyPodOverrides(spec *corev1.PodSpec, c v1alpha1.ContainerSpec) {
	spec.Affinity = c.Pod.Affinity
	spec.Tolerations = c.Pod.Tolerations
	spec.NodeSelector = c.Pod.NodeSelector
	spec.PriorityClassName = c.Pod.PriorityClassName
	spec.SecurityContext = podSecurityContext(c.Pod.SecurityContext)
	spec.ImagePullSecrets = c.ImagePullSecrets
}

// image is the container image of c: its own, or the operator's version's.
func image(c v1alpha1.ContainerSpec) string {
	if c.Image == "" {
		return version.DefaultImage
	}
	return c.Image
}

// pullPolicy defaults like the API server would, so Update does not flap against defaults.
func pullPolicy(p corev1.PullPolicy) corev1.PullPolicy {
	if p == "" {
		return corev1.PullIfNotPresent
	}
	return p
}
