package v1alpha1

// ExposeType says how clients reach a resource's pods. LoadBalancer and hostNetwork are
// not offered yet.
// +kubebuilder:validation:Enum=ClusterIP;NodePort
type ExposeType string

const (
	// ExposeClusterIP: reachable from inside the cluster only.
	ExposeClusterIP ExposeType = "ClusterIP"
	// ExposeNodePort: also reachable from outside, through ports opened on every node.
	ExposeNodePort ExposeType = "NodePort"
)

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
type NameServerExpose struct {
	// Type ClusterIP (the default) or NodePort; LoadBalancer and hostNetwork are not
	// offered yet.
	// +kubebuilder:default=ClusterIP
	// +optional
	Type ExposeType `json:"type,omitempty"`
	// NodePort applies with type NodePort and is ignored otherwise.
	// +optional
	NodePort *NodePortSpec `json:"nodePort,omitempty"`
}

// BrokerExpose is how clients reach the brokers.
// +kubebuilder:validation:XValidation:rule="self.type != 'NodePort' || has(self.nodePort)",message="expose.type NodePort needs nodePort.firstPort"
type BrokerExpose struct {
	// Type ClusterIP (the default) or NodePort; LoadBalancer and hostNetwork are not
	// offered yet.
	// +kubebuilder:default=ClusterIP
	// +optional
	Type ExposeType `json:"type,omitempty"`
	// NodePort applies with type NodePort and is ignored otherwise.
	// +optional
	NodePort *BrokerNodePortSpec `json:"nodePort,omitempty"`
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
