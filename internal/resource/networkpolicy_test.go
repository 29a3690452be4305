package resource

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// buildPolicy runs b like CreateOrUpdate would on a fresh object.
func buildPolicy(t *testing.T, b Builder) *networkingv1.NetworkPolicy {
	t.Helper()
	obj, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Update(obj); err != nil {
		t.Fatal(err)
	}
	return obj.(*networkingv1.NetworkPolicy)
}

func ports(t *testing.T, rule networkingv1.NetworkPolicyIngressRule) []int32 {
	t.Helper()
	var out []int32
	for _, p := range rule.Ports {
		if p.Protocol == nil || *p.Protocol != corev1.ProtocolTCP || p.Port == nil || p.Port.Type != intstr.Int {
			t.Errorf("port %+v: want a TCP port number", p)
			continue
		}
		out = append(out, p.Port.IntVal)
	}
	return out
}

var (
	sameNamespace = networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}}
	operatorNS    = networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{"kubernetes.io/metadata.name": "rocketmq-system"}}}
	appsNS = networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{"team": "apps"}}}
)

func TestNameServerNetworkPolicy(t *testing.T) {
	ns := nameServer()
	ns.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: true}
	np := buildPolicy(t, (&NameServerBuilder{Instance: ns, Scheme: scheme(t),
		OperatorNamespace: "rocketmq-system", Brokers: []string{"rmq2", "rmq1"}}).NetworkPolicy())

	if np.Name != "ns-nameserver" || np.Namespace != "mq" {
		t.Errorf("name = %s/%s", np.Namespace, np.Name)
	}
	if refs := np.OwnerReferences; len(refs) != 1 || refs[0].UID != "u1" || !ptr.Deref(refs[0].Controller, false) {
		t.Errorf("owner references = %v", refs)
	}
	if np.Labels[managedByLabel] != "rocketmq-operator" {
		t.Errorf("labels = %v: the manager's cache only holds managed objects", np.Labels)
	}
	wantPods := map[string]string{nameLabel: "rocketmq", ComponentLabel: "nameserver", InstanceLabel: "ns"}
	if !equality.Semantic.DeepEqual(np.Spec.PodSelector.MatchLabels, wantPods) || len(np.Spec.PodSelector.MatchExpressions) != 0 {
		t.Errorf("pod selector = %v, want the StatefulSet's %v", np.Spec.PodSelector, wantPods)
	}
	if !equality.Semantic.DeepEqual(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("policy types = %v: ingress only", np.Spec.PolicyTypes)
	}
	if len(np.Spec.Ingress) != 2 {
		t.Fatalf("ingress = %+v: want the name-server rule and the metrics rule", np.Spec.Ingress)
	}
	wantMetricsRule(t, np.Spec.Ingress[1])
	rule := np.Spec.Ingress[0]
	if got := ports(t, rule); !equality.Semantic.DeepEqual(got, []int32{9876, 8080}) {
		t.Errorf("ports = %v", got)
	}
	brokers := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{nameLabel: "rocketmq", ComponentLabel: "broker"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: InstanceLabel,
			Operator: metav1.LabelSelectorOpIn, Values: []string{"rmq1", "rmq2"}}}}}
	want := []networkingv1.NetworkPolicyPeer{sameNamespace, brokers, operatorNS}
	if !equality.Semantic.DeepEqual(rule.From, want) {
		t.Errorf("from =\n%+v\nwant the namespace (no client peers), the Brokers (sorted), the operator:\n%+v", rule.From, want)
	}
	// The Broker peer selects the pods of the named Brokers and no other.
	sel, err := metav1.LabelSelectorAsSelector(brokers.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	for name, selected := range map[string]bool{"rmq1": true, "other": false} {
		br := broker()
		br.Name = name
		objs := build(t, (&BrokerBuilder{Instance: br, Scheme: scheme(t)}).Builders())
		tpl := objs["StatefulSet/"+name+"-broker-a"].(*appsv1.StatefulSet).Spec.Template
		if sel.Matches(labels.Set(tpl.Labels)) != selected {
			t.Errorf("Broker %s pods %v: selected = %v, want %v", name, tpl.Labels, !selected, selected)
		}
	}
}

// TestNameServerNetworkPolicyPeers: client peers replace the namespace default; no Broker
// and no operator namespace add no peer (an In with no values is invalid).
func TestNameServerNetworkPolicyPeers(t *testing.T) {
	ns := nameServer()
	ns.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: true,
		ClientPeers: []networkingv1.NetworkPolicyPeer{appsNS}}
	np := buildPolicy(t, (&NameServerBuilder{Instance: ns, Scheme: scheme(t)}).NetworkPolicy())
	if from := np.Spec.Ingress[0].From; !equality.Semantic.DeepEqual(from, []networkingv1.NetworkPolicyPeer{appsNS}) {
		t.Errorf("from = %+v, want the client peer only", from)
	}
	np.Spec.Ingress[0].From[0].NamespaceSelector.MatchLabels["team"] = "changed"
	if ns.Spec.NetworkPolicy.ClientPeers[0].NamespaceSelector.MatchLabels["team"] != "apps" {
		t.Error("the policy shares the spec's selectors: peers must be copied")
	}
}

func TestBrokerNetworkPolicy(t *testing.T) {
	br := broker()
	cidr := networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "192.0.2.0/24"}}
	br.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: true,
		ClientPeers: []networkingv1.NetworkPolicyPeer{appsNS, cidr}}
	np := buildPolicy(t, (&BrokerBuilder{Instance: br, Scheme: scheme(t),
		OperatorNamespace: "rocketmq-system"}).NetworkPolicy())

	if np.Name != "rmq-broker" || np.Namespace != "mq" {
		t.Errorf("name = %s/%s", np.Namespace, np.Name)
	}
	if refs := np.OwnerReferences; len(refs) != 1 || refs[0].UID != "u2" {
		t.Errorf("owner references = %v", refs)
	}
	// Every group: no broker-name label in the selector.
	wantPods := map[string]string{nameLabel: "rocketmq", ComponentLabel: "broker", InstanceLabel: "rmq"}
	if !equality.Semantic.DeepEqual(np.Spec.PodSelector.MatchLabels, wantPods) {
		t.Errorf("pod selector = %v, want every group's pods %v", np.Spec.PodSelector.MatchLabels, wantPods)
	}
	if len(np.Spec.Ingress) != 3 {
		t.Fatalf("ingress = %+v: want a client rule, an HA rule and the metrics rule", np.Spec.Ingress)
	}
	wantMetricsRule(t, np.Spec.Ingress[2])
	own := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: wantPods}}

	clients := np.Spec.Ingress[0]
	if got := ports(t, clients); !equality.Semantic.DeepEqual(got, []int32{10911, 10909}) {
		t.Errorf("client ports = %v, want listenPort and the fast channel", got)
	}
	if want := []networkingv1.NetworkPolicyPeer{appsNS, cidr, own, operatorNS}; !equality.Semantic.DeepEqual(clients.From, want) {
		t.Errorf("client from =\n%+v\nwant the peers, the Broker's pods (slave sync), the operator:\n%+v", clients.From, want)
	}
	ha := np.Spec.Ingress[1]
	if got := ports(t, ha); !equality.Semantic.DeepEqual(got, []int32{10912}) {
		t.Errorf("HA ports = %v", got)
	}
	if !equality.Semantic.DeepEqual(ha.From, []networkingv1.NetworkPolicyPeer{own}) {
		t.Errorf("HA from = %+v: only the Broker's own pods", ha.From)
	}
	// The policy selects the pods every group's StatefulSet runs.
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	objs := build(t, (&BrokerBuilder{Instance: br, Scheme: scheme(t)}).Builders())
	for _, g := range []string{"a", "b", "c"} {
		tpl := objs["StatefulSet/rmq-broker-"+g].(*appsv1.StatefulSet).Spec.Template
		if !sel.Matches(labels.Set(tpl.Labels)) {
			t.Errorf("group %s: pod labels %v not selected by %v", g, tpl.Labels, sel)
		}
	}
}

// TestBrokerNetworkPolicyDefaults: no client peers admits the namespace; no operator
// namespace leaves it out.
func TestBrokerNetworkPolicyDefaults(t *testing.T) {
	br := broker()
	br.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: true}
	np := buildPolicy(t, (&BrokerBuilder{Instance: br, Scheme: scheme(t)}).NetworkPolicy())
	from := np.Spec.Ingress[0].From
	if len(from) != 2 || !equality.Semantic.DeepEqual(from[0], sameNamespace) || from[1].PodSelector == nil {
		t.Errorf("client from = %+v, want the namespace and the Broker's pods", from)
	}
}

// TestNetworkPolicyUpdateIsStable: a second Update of the stored object changes nothing,
// and keeps labels others added, so CreateOrUpdate does not write on every reconcile.
func TestNetworkPolicyUpdateIsStable(t *testing.T) {
	br := broker()
	br.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: true}
	b := (&BrokerBuilder{Instance: br, Scheme: scheme(t), OperatorNamespace: "rocketmq-system"}).NetworkPolicy()
	np := buildPolicy(t, b)
	np.Labels["extra"] = "kept"
	before := np.DeepCopy()
	if err := b.Update(np); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(before, np) {
		t.Errorf("a second Update changed the policy:\n%+v\n%+v", before, np)
	}
}

// wantMetricsRule: the metrics port, from every namespace (Prometheus runs anywhere).
func wantMetricsRule(t *testing.T, rule networkingv1.NetworkPolicyIngressRule) {
	t.Helper()
	if got := ports(t, rule); !equality.Semantic.DeepEqual(got, []int32{DefaultMetricsPort}) {
		t.Errorf("metrics rule ports = %v", got)
	}
	want := []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}
	if !equality.Semantic.DeepEqual(rule.From, want) {
		t.Errorf("metrics rule from = %+v, want every namespace", rule.From)
	}
}
