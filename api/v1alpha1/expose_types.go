package v1alpha1

import corev1 "k8s.io/api/core/v1"

// ExposeType says how clients reach a resource's pods. hostNetwork is not offered.
// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
type ExposeType string

const (
	// ExposeClusterIP: reachable from inside the cluster only.
	ExposeClusterIP ExposeType = "ClusterIP"
	// ExposeNodePort: also reachable from outside, through ports opened on every node.
	ExposeNodePort ExposeType = "NodePort"
	// ExposeLoadBalancer: also reachable from outside, through a cloud load balancer per
	// Service.
	ExposeLoadBalancer ExposeType = "LoadBalancer"
)

// LoadBalancerSpec is what the Services of expose LoadBalancer carry for the cloud's
// load-balancer controller.
type LoadBalancerSpec struct {
	// Annotations are copied onto each LoadBalancer Service: clouds configure their load
	// balancers with them (internal or external, NLB or classic, ...). Keys removed here
	// are removed from the Services.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// SourceRanges are the client CIDRs the load balancers admit
	// (spec.loadBalancerSourceRanges); empty admits every address.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:items:XValidation:rule="isCIDR(self)",message="loadBalancer.sourceRanges must be CIDRs such as 203.0.113.0/24"
	// +listType=atomic
	// +optional
	SourceRanges []string `json:"sourceRanges,omitempty"`
}

// NodePortSpec is where a NameServer's node ports start.
type NodePortSpec struct {
	// FirstPort is the first node port the resource takes; the others follow it (see the
	// resource's expose field). It must lie in the cluster's node-port range, by default
	// 30000-32767, and no other Service may hold the ports.
	// +kubebuilder:validation:Minimum=30000
	// +kubebuilder:validation:Maximum=32767
	FirstPort int32 `json:"firstPort"`
}

// BrokerNodePortSpec is where a Broker's node ports start and the host its pods announce.
type BrokerNodePortSpec struct {
	NodePortSpec `json:",inline"`

	// AdvertisedHost is an IP address on which clients outside the cluster reach the
	// nodes (a node's external address, or a load balancer in front of every node): each
	// broker pod announces it with its own node port. Unset, each pod announces the IP of
	// the node it runs on (status.hostIP), which clients must be able to reach.
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="nodePort.advertisedHost must be an IP address"
	// +optional
	AdvertisedHost string `json:"advertisedHost,omitempty"`
}

// NameServerExpose is how clients reach the name servers.
// +kubebuilder:validation:XValidation:rule="self.type != 'NodePort' || has(self.nodePort)",message="expose.type NodePort needs nodePort.firstPort"
// +kubebuilder:validation:XValidation:rule="self.type == 'NodePort' || !has(self.nodePort)",message="expose.nodePort is only for type NodePort"
// +kubebuilder:validation:XValidation:rule="self.type == 'LoadBalancer' || !has(self.loadBalancer)",message="expose.loadBalancer is only for type LoadBalancer"
type NameServerExpose struct {
	// Type ClusterIP (the default), NodePort or LoadBalancer; hostNetwork is not offered.
	// +kubebuilder:default=ClusterIP
	// +optional
	Type ExposeType `json:"type,omitempty"`
	// NodePort is for type NodePort only.
	// +optional
	NodePort *NodePortSpec `json:"nodePort,omitempty"`
	// LoadBalancer is for type LoadBalancer only, and optional there.
	// +optional
	LoadBalancer *LoadBalancerSpec `json:"loadBalancer,omitempty"`
}

// BrokerExpose is how clients reach the brokers.
// +kubebuilder:validation:XValidation:rule="self.type != 'NodePort' || has(self.nodePort)",message="expose.type NodePort needs nodePort.firstPort"
// +kubebuilder:validation:XValidation:rule="self.type == 'NodePort' || !has(self.nodePort)",message="expose.nodePort is only for type NodePort"
// +kubebuilder:validation:XValidation:rule="self.type == 'LoadBalancer' || !has(self.loadBalancer)",message="expose.loadBalancer is only for type LoadBalancer"
type BrokerExpose struct {
	// Type ClusterIP (the default), NodePort or LoadBalancer; hostNetwork is not offered.
	// +kubebuilder:default=ClusterIP
	// +optional
	Type ExposeType `json:"type,omitempty"`
	// NodePort is for type NodePort only.
	// +optional
	NodePort *BrokerNodePortSpec `json:"nodePort,omitempty"`
	// LoadBalancer is for type LoadBalancer only, and optional there.
	// +optional
	LoadBalancer *LoadBalancerSpec `json:"loadBalancer,omitempty"`
}

// NodePorts is spec.expose.nodePort when the name servers are exposed through node
// ports, nil otherwise.
func (e *NameServerExpose) NodePorts() *NodePortSpec {
	if e == nil || e.Type != ExposeNodePort {
		return nil
	}
	return e.NodePort
}

// NodePorts is spec.expose.nodePort when the brokers are exposed through node ports, nil
// otherwise.
func (e *BrokerExpose) NodePorts() *BrokerNodePortSpec {
	if e == nil || e.Type != ExposeNodePort {
		return nil
	}
	return e.NodePort
}

// LoadBalanced says the name servers are exposed through a load balancer; lb is
// spec.expose.loadBalancer (nil when unset).
func (e *NameServerExpose) LoadBalanced() (lb *LoadBalancerSpec, ok bool) {
	if e == nil || e.Type != ExposeLoadBalancer {
		return nil, false
	}
	return e.LoadBalancer, true
}

// LoadBalanced says the brokers are exposed through load balancers, one per pod; lb is
// spec.expose.loadBalancer (nil when unset).
func (e *BrokerExpose) LoadBalanced() (lb *LoadBalancerSpec, ok bool) {
	if e == nil || e.Type != ExposeLoadBalancer {
		return nil, false
	}
	return e.LoadBalancer, true
}

// ServiceType is the type of the name servers' client Service.
func (e *NameServerExpose) ServiceType() corev1.ServiceType {
	if e == nil || e.Type == "" {
		return corev1.ServiceTypeClusterIP
	}
	return corev1.ServiceType(e.Type)
}

// ServiceType is the type of each broker pod's Service.
func (e *BrokerExpose) ServiceType() corev1.ServiceType {
	if e == nil || e.Type == "" {
		return corev1.ServiceTypeClusterIP
	}
	return corev1.ServiceType(e.Type)
}
