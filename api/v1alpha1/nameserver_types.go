package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NameServerSpec is the desired state of a name server ensemble. Name servers share no
// state, so every replica is equal and brokers register with all of them.
// +kubebuilder:validation:XValidation:rule="has(self.persistence) == has(oldSelf.persistence)",message="persistence cannot be added or removed after creation (StatefulSet volume claims are immutable)"
// +kubebuilder:validation:XValidation:rule="!has(self.expose) || self.expose.type != 'NodePort' || !has(self.expose.nodePort) || self.expose.nodePort.firstPort <= 32766",message="expose.nodePort.firstPort must be at most 32766: the address server takes firstPort+1"
type NameServerSpec struct {
	ContainerSpec `json:",inline"`

	// Number of name server pods.
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// +kubebuilder:default={}
	// +optional
	Ports NameServerPorts `json:"ports,omitempty"`

	// Persistence keeps the KV config (kvConfigPath) on a PersistentVolumeClaim per pod;
	// without it the KV config lives in an emptyDir and is lost with the pod.
	// +optional
	Persistence *NameServerPersistence `json:"persistence,omitempty"`

	// NetworkPolicy, when enabled, keeps a NetworkPolicy <name>-nameserver that admits the
	// name-server port (ports.listenPort) only from networkPolicy.clientPeers (default: this
	// namespace), from the pods of the Brokers whose nameServerRef names this NameServer
	// (they register), and from the operator's namespace. Brokers elsewhere that list it in
	// nameServerAddresses need a client peer. With expose NodePort or LoadBalancer the
	// name-server port admits every address as well (ipBlocks 0.0.0.0/0 and ::/0). The name server has no
	// ACL: whoever reaches it can register brokers and change routes, so keep it inside
	// the cluster, or exposed, behind a firewall.
	// +optional
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty"`

	// TLS turns on TLS for the name-server port (see TLSSpec; the operator makes no calls
	// to name servers, so there is no TLS condition here).
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// Expose says how clients reach the name servers. ClusterIP (the default): through
	// status.address and the NameServer's Service, inside the cluster. NodePort: the
	// Service also opens node port firstPort for the name-server port, so that clients
	// outside use <node IP>:firstPort as namesrvAddr (the Broker they are routed to needs
	// expose NodePort too), and firstPort+1 for the address server on 8080 (a Service of
	// type NodePort opens every port it carries; pinned, it stays out of the random
	// allocation that could take a Broker's ports). LoadBalancer: the Service is of type
	// LoadBalancer, and clients outside use its status.loadBalancer.ingress IP with
	// ports.listenPort (9876) as namesrvAddr; status.address stays the pod IPs the Brokers
	// inside use. The name server has no ACL: admit only your clients' addresses
	// (a firewall in front of the nodes, or loadBalancer.sourceRanges).
	// +optional
	Expose *NameServerExpose `json:"expose,omitempty"`
}

// NameServerPorts are the ports a name server listens on.
type NameServerPorts struct {
	// Port clients and brokers connect to (namesrv.conf listenPort).
	// +kubebuilder:default=9876
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	// +optional
	ListenPort int32 `json:"listenPort,omitempty"`
}

// NameServerPersistence describes the claim that holds the KV config.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="persistence is immutable"
type NameServerPersistence struct {
	// +kubebuilder:default="1Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="persistence.size must be positive"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// NameServerStatus is the observed state of a name server ensemble.
type NameServerStatus struct {
	// Generation of the spec the status reflects; set only after a successful reconcile.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Address is the namesrvAddr list clients use: the IP and port of every ready name
	// server, separated by ';', kept current as pods move. Every official client takes it
	// (NAMESRV_ADDR, setNamesrvAddr, the Go client's passthrough resolver); an application
	// that should follow pods without reading this status uses AddressURL.
	// +optional
	Address string `json:"address,omitempty"`
	// AddressURL is the ensemble's name-server address server, in the style of RocketMQ's:
	// every name-server pod answers the current list of pod IPs there, behind the
	// NameServer's Service. The Go client takes the URL (primitive.NewHttpResolver), the
	// Java client the host (-Drocketmq.namesrv.domain=<name>.<namespace>.svc).
	// +optional
	AddressURL string `json:"addressURL,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NameServer runs RocketMQ name servers as a StatefulSet.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rmqns,categories=rocketmq
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.status.address`,priority=1
// +kubebuilder:printcolumn:name="AddressURL",type=string,JSONPath=`.status.addressURL`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NameServer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NameServerSpec   `json:"spec"`
	Status NameServerStatus `json:"status,omitempty"`
}

// NameServerList is a list of NameServer.
// +kubebuilder:object:root=true
type NameServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NameServer `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NameServer{}, &NameServerList{})
}
