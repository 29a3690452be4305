package resource

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// loadBalancerAnnotationsKey lists the annotation keys spec.expose.loadBalancer put on a
// Service, so that a key removed from the spec leaves the Service and others' keys stay.
const loadBalancerAnnotationsKey = "rocketmq.openrmq.io/load-balancer-annotations"

// exposeService gives a client Service spec.expose's type and its ports. ports carry the
// node ports of type NodePort and 0 otherwise, which the API server requires of a Service
// leaving NodePort. A LoadBalancer Service keeps the node ports the API server allocated
// (it would fill them in again, and every reconcile would write) and carries lb's source
// ranges and annotations; lb is nil for the other types.
func exposeService(svc *corev1.Service, typ corev1.ServiceType, lb *v1alpha1.LoadBalancerSpec, ports []corev1.ServicePort) {
	if typ == corev1.ServiceTypeLoadBalancer {
		for i := range ports {
			if j := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ports[i].Name }); j >= 0 && ports[i].NodePort == 0 {
				ports[i].NodePort = svc.Spec.Ports[j].NodePort
			}
		}
	}
	svc.Spec.Type = typ
	svc.Spec.Ports = ports
	svc.Spec.LoadBalancerSourceRanges = nil
	for _, k := range strings.Split(svc.Annotations[loadBalancerAnnotationsKey], ",") {
		delete(svc.Annotations, k)
	}
	delete(svc.Annotations, loadBalancerAnnotationsKey)
	if lb == nil {
		return
	}
	svc.Spec.LoadBalancerSourceRanges = lb.SourceRanges
	if len(lb.Annotations) > 0 {
		svc.Annotations = merge(svc.Annotations, lb.Annotations)
		svc.Annotations[loadBalancerAnnotationsKey] = strings.Join(slices.Sorted(maps.Keys(lb.Annotations)), ",")
	}
}

// loadBalancerIngress is the first IP the cloud's load-balancer controller wrote to a
// LoadBalancer Service's status, or "" with the first hostname when it gave hostnames
// only (AWS's classic and network load balancers do): a broker cannot announce those.
func loadBalancerIngress(svc *corev1.Service) (ip, hostname string) {
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return "", ""
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			return in.IP, ""
		}
		if hostname == "" {
			hostname = in.Hostname
		}
	}
	return "", hostname
}
