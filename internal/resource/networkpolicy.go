package resource

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// The NetworkPolicies of spec.networkPolicy admit ingress only; egress stays open (brokers
// dial name servers, DNS and, for transaction checks, producers). Every policy admits:
//
//	NameServer <name>-nameserver, pods of the NameServer:
//	  listenPort,    <- client peers, the pods of Brokers whose nameServerRef names it,
//	  8080 (HTTP)       the operator's namespace (8080 serves the address list clients
//	                    resolve the name servers with)
//	Broker <name>-broker, pods of every group of the Broker:
//	  listenPort,    <- client peers, the Broker's own pods (a slave copies topics, offsets
//	  listenPort-2      and groups from its master's listenPort), the operator's namespace
//	  listenPort+1   <- the Broker's own pods (a slave replicates the commitlog from its master)
//	  metrics (5557) <- every namespace (Prometheus; both policies, metrics.go)
//
// Client peers are spec.networkPolicy.clientPeers, or every pod of the resource's namespace
// when that is empty. With spec.expose NodePort or LoadBalancer the client ports (a
// NameServer's listenPort; a Broker's listenPort and listenPort-2, not HA) also admit
// every address, in a rule of their own (outsideIngress): a connection through a node
// port or a load balancer comes from outside the cluster, or from a node when kube-proxy
// masquerades it, and no selector matches either.
// Ports are numbers, not the container ports' names, so every network plugin reads them
// alike.

// NamespaceNameLabel is the label the API server sets on every namespace to its name.
const NamespaceNameLabel = "kubernetes.io/metadata.name"

// NameServerNetworkPolicyName is the NetworkPolicy of spec.networkPolicy. The suffix keeps
// it apart from a Broker's of the same name.
func NameServerNetworkPolicyName(ns *v1alpha1.NameServer) string { return ns.Name + "-nameserver" }

// BrokerNetworkPolicyName is the NetworkPolicy of spec.networkPolicy.
func BrokerNetworkPolicyName(br *v1alpha1.Broker) string { return br.Name + "-broker" }

// NetworkPolicy builds the NameServer's NetworkPolicy. It is not in Builders: the
// controller applies it when spec.networkPolicy is enabled and deletes it otherwise.
func (b *NameServerBuilder) NetworkPolicy() Builder { return &nameServerNetworkPolicy{b} }

// NetworkPolicy builds the Broker's NetworkPolicy; see NameServerBuilder.NetworkPolicy.
func (b *BrokerBuilder) NetworkPolicy() Builder { return &brokerNetworkPolicy{b} }

type nameServerNetworkPolicy struct{ *NameServerBuilder }

func (b *nameServerNetworkPolicy) Build() (client.Object, error) {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{
		Name: NameServerNetworkPolicyName(b.Instance), Namespace: b.Instance.Namespace}}, nil
}

func (b *nameServerNetworkPolicy) Update(obj client.Object) error {
	np := obj.(*networkingv1.NetworkPolicy)
	ns := b.Instance
	np.Labels = merge(np.Labels, b.labels())
	from := clientPeers(ns.Spec.NetworkPolicy)
	if len(b.Brokers) > 0 {
		from = append(from, brokerPodsPeer(b.Brokers))
	}
	from = append(from, operatorPeers(b.OperatorNamespace)...)
	np.Spec = networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: selectorLabels(NameServerComponent, ns.Name)},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			Ports: tcpPorts(ns.Spec.Ports.ListenPort, HealthPort),
			From:  from,
		}, metricsIngress(DefaultMetricsPort)},
	}
	if ns.Spec.Expose.ServiceType() != corev1.ServiceTypeClusterIP {
		np.Spec.Ingress = append(np.Spec.Ingress, outsideIngress(ns.Spec.Ports.ListenPort))
	}
	return controllerutil.SetControllerReference(ns, np, b.Scheme)
}

type brokerNetworkPolicy struct{ *BrokerBuilder }

func (b *brokerNetworkPolicy) Build() (client.Object, error) {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{
		Name: BrokerNetworkPolicyName(b.Instance), Namespace: b.Instance.Namespace}}, nil
}

func (b *brokerNetworkPolicy) Update(obj client.Object) error {
	np := obj.(*networkingv1.NetworkPolicy)
	br := b.Instance
	np.Labels = merge(np.Labels, objectLabels(BrokerComponent, br.Name))
	pods := selectorLabels(BrokerComponent, br.Name)
	own := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: pods}}
	from := append(clientPeers(br.Spec.NetworkPolicy), own)
	from = append(from, operatorPeers(b.OperatorNamespace)...)
	listen := br.Spec.ListenPort
	np.Spec = networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: selectorLabels(BrokerComponent, br.Name)},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{
			{Ports: tcpPorts(listen, listen-2), From: from},
			{Ports: tcpPorts(listen + 1), From: []networkingv1.NetworkPolicyPeer{*own.DeepCopy()}},
		},
	}
	if port, ok := BrokerMetricsPort(br); ok {
		np.Spec.Ingress = append(np.Spec.Ingress, metricsIngress(port))
	}
	if br.Spec.Expose.ServiceType() != corev1.ServiceTypeClusterIP {
		np.Spec.Ingress = append(np.Spec.Ingress, outsideIngress(listen, listen-2))
	}
	return controllerutil.SetControllerReference(br, np, b.Scheme)
}

// clientPeers copies spec.networkPolicy.clientPeers, or, when empty, returns one peer that
// selects every pod of the policy's namespace.
func clientPeers(spec *v1alpha1.NetworkPolicySpec) []networkingv1.NetworkPolicyPeer {
	if spec == nil || len(spec.ClientPeers) == 0 {
		return []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
	}
	out := make([]networkingv1.NetworkPolicyPeer, len(spec.ClientPeers))
	for i := range spec.ClientPeers {
		spec.ClientPeers[i].DeepCopyInto(&out[i])
	}
	return out
}

// operatorPeers selects the operator's namespace, or nothing when it is unknown.
func operatorPeers(namespace string) []networkingv1.NetworkPolicyPeer {
	if namespace == "" {
		return nil
	}
	return []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{NamespaceNameLabel: namespace}}}}
}

// brokerPodsPeer selects the pods of the named Brokers in the policy's namespace; names
// are sorted so the policy only changes when the set does.
func brokerPodsPeer(brokers []string) networkingv1.NetworkPolicyPeer {
	sel := selectorLabels(BrokerComponent, "")
	delete(sel, InstanceLabel)
	return networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{
		MatchLabels: sel,
		MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: InstanceLabel, Operator: metav1.LabelSelectorOpIn,
			Values: slices.Sorted(slices.Values(brokers))}},
	}}
}

// outsideIngress admits ports from every IPv4 and IPv6 address.
func outsideIngress(ports ...int32) networkingv1.NetworkPolicyIngressRule {
	return networkingv1.NetworkPolicyIngressRule{Ports: tcpPorts(ports...), From: []networkingv1.NetworkPolicyPeer{
		{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}}, {IPBlock: &networkingv1.IPBlock{CIDR: "::/0"}}}}
}

// tcpPorts sets the protocol the API server would default, so Update does not flap.
func tcpPorts(ports ...int32) []networkingv1.NetworkPolicyPort {
	out := make([]networkingv1.NetworkPolicyPort, len(ports))
	for i, p := range ports {
		out[i] = networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP),
			Port: ptr.To(intstr.FromInt32(p))}
	}
	return out
}
