package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	res "github.com/openrmq/rocketmq-operator/internal/resource"
)

var (
	inNamespace  = networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}}
	fromOperator = networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{res.NamespaceNameLabel: operatorNamespace}}}
)

func teamPeer(team string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{"team": team}}}
}

// policyFrom waits for the NetworkPolicy to exist, controlled by owner, and returns the
// from entries of its first ingress rule.
func policyFrom(owner client.Object, name string) func(Gomega) []networkingv1.NetworkPolicyPeer {
	return func(g Gomega) []networkingv1.NetworkPolicyPeer {
		np := &networkingv1.NetworkPolicy{}
		g.Expect(get(np, owner.GetNamespace(), name)()).To(Succeed())
		g.Expect(metav1.IsControlledBy(np, owner)).To(BeTrue(), "owned by %s, so it is garbage collected", owner.GetName())
		g.Expect(np.Spec.Ingress).NotTo(BeEmpty())
		return np.Spec.Ingress[0].From
	}
}

// policyGone succeeds once the NetworkPolicy does not exist.
func policyGone(ns, name string) func() bool {
	return func() bool {
		return apierrors.IsNotFound(get(&networkingv1.NetworkPolicy{}, ns, name)())
	}
}

var _ = Describe("spec.networkPolicy", func() {
	It("keeps a NameServer's NetworkPolicy: its Brokers, a peer change, restored when deleted, gone when disabled", func() {
		ns := newNamespace()
		nsrv := newNameServer(ns, "ns")
		nsrv.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: true}
		Expect(k8s.Create(ctx, nsrv)).To(Succeed())

		Eventually(policyFrom(nsrv, "ns-nameserver")).Should(Equal(
			[]networkingv1.NetworkPolicyPeer{inNamespace, fromOperator}))
		np := &networkingv1.NetworkPolicy{}
		Expect(get(np, ns, "ns-nameserver")()).To(Succeed())
		Expect(np.Spec.PodSelector.MatchLabels).To(HaveKeyWithValue(res.InstanceLabel, "ns"))
		Expect(np.Spec.Ingress).To(HaveLen(2))          // the name-server port and the address server, and metrics
		Expect(np.Spec.Ingress[0].Ports).To(HaveLen(2)) // remoting and the address server
		Expect(np.Spec.Ingress[0].Ports[0].Port.IntVal).To(Equal(int32(9876)))
		Expect(np.Spec.Ingress[0].Ports[1].Port.IntVal).To(Equal(int32(8080)))
		Expect(np.Spec.Ingress[1].Ports[0].Port.IntVal).To(Equal(int32(res.DefaultMetricsPort)))

		// A Broker that references it is admitted; one that does not is not.
		Expect(k8s.Create(ctx, newBroker(ns, "rmq"))).To(Succeed())
		other := newBroker(ns, "other")
		other.Spec.NameServerRef = &v1alpha1.LocalObjectReference{Name: "elsewhere"}
		Expect(k8s.Create(ctx, other)).To(Succeed())
		Eventually(func(g Gomega) {
			from := policyFrom(nsrv, "ns-nameserver")(g)
			g.Expect(from).To(HaveLen(3))
			g.Expect(from[1].PodSelector).NotTo(BeNil())
			g.Expect(from[1].PodSelector.MatchExpressions).To(ConsistOf(metav1.LabelSelectorRequirement{
				Key: res.InstanceLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"rmq"}}))
		}).Should(Succeed())

		Eventually(update(nsrv, func() {
			nsrv.Spec.NetworkPolicy.ClientPeers = []networkingv1.NetworkPolicyPeer{teamPeer("apps")}
		})).Should(Succeed())
		Eventually(func(g Gomega) {
			from := policyFrom(nsrv, "ns-nameserver")(g)
			g.Expect(from).To(HaveLen(3))
			g.Expect(from[0]).To(Equal(teamPeer("apps")), "the client peers replace the namespace")
			g.Expect(from[2]).To(Equal(fromOperator))
		}).Should(Succeed())

		// Deleted by hand, it comes back.
		Expect(get(np, ns, "ns-nameserver")()).To(Succeed())
		Expect(k8s.Delete(ctx, np)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(&networkingv1.NetworkPolicy{}, ns, "ns-nameserver")()).To(Succeed())
		}).Should(Succeed())

		Eventually(update(nsrv, func() { nsrv.Spec.NetworkPolicy.Enabled = false })).Should(Succeed())
		Eventually(policyGone(ns, "ns-nameserver")).Should(BeTrue())
	})

	It("keeps a Broker's NetworkPolicy before anything else, follows its peers and deletes it when disabled", func() {
		ns := newNamespace()
		br := newBroker(ns, "rmq")
		br.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: true,
			ClientPeers: []networkingv1.NetworkPolicyPeer{teamPeer("apps")}}
		// No NameServer "ns": the Broker waits for it, but its policy is the first step.
		Expect(k8s.Create(ctx, br)).To(Succeed())

		own := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
			"app.kubernetes.io/name": "rocketmq", res.ComponentLabel: res.BrokerComponent, res.InstanceLabel: "rmq"}}}
		Eventually(policyFrom(br, "rmq-broker")).Should(Equal(
			[]networkingv1.NetworkPolicyPeer{teamPeer("apps"), own, fromOperator}))
		np := &networkingv1.NetworkPolicy{}
		Expect(get(np, ns, "rmq-broker")()).To(Succeed())
		Expect(np.Spec.Ingress).To(HaveLen(3)) // clients, HA, metrics
		Expect(np.Spec.Ingress[2].Ports[0].Port.IntVal).To(Equal(int32(res.DefaultMetricsPort)))
		var clientPorts []int32
		for _, p := range np.Spec.Ingress[0].Ports {
			clientPorts = append(clientPorts, p.Port.IntVal)
		}
		Expect(clientPorts).To(Equal([]int32{10911, 10909}))
		Expect(np.Spec.Ingress[1].Ports).To(HaveLen(1))
		Expect(np.Spec.Ingress[1].Ports[0].Port.IntVal).To(Equal(int32(10912)))
		Expect(np.Spec.Ingress[1].From).To(Equal([]networkingv1.NetworkPolicyPeer{own}))

		Eventually(update(br, func() {
			br.Spec.NetworkPolicy.ClientPeers = append(br.Spec.NetworkPolicy.ClientPeers, teamPeer("billing"))
		})).Should(Succeed())
		Eventually(policyFrom(br, "rmq-broker")).Should(Equal(
			[]networkingv1.NetworkPolicyPeer{teamPeer("apps"), teamPeer("billing"), own, fromOperator}))

		Eventually(update(br, func() { br.Spec.NetworkPolicy = nil })).Should(Succeed())
		Eventually(policyGone(ns, "rmq-broker")).Should(BeTrue())
	})

	It("leaves a NetworkPolicy it does not own alone when disabled", func() {
		ns := newNamespace()
		mine := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ns-nameserver"},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{}}}
		Expect(k8s.Create(ctx, mine)).To(Succeed())
		nsrv := newNameServer(ns, "ns")
		nsrv.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: false}
		Expect(k8s.Create(ctx, nsrv)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(nsrv, ns, "ns")()).To(Succeed())
			g.Expect(nsrv.Status.ObservedGeneration).To(Equal(nsrv.Generation))
		}).Should(Succeed())
		Consistently(get(&networkingv1.NetworkPolicy{}, ns, "ns-nameserver"), "1s").Should(Succeed())
	})

	It("refuses client peers a NetworkPolicy would refuse", func() {
		ns := newNamespace()
		for peer, msg := range map[*networkingv1.NetworkPolicyPeer]string{
			{}: "a client peer sets podSelector, namespaceSelector or ipBlock",
			{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}, PodSelector: &metav1.LabelSelector{}}: "cannot also set podSelector",
			{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0"}}:                                         "ipBlock.cidr must be a CIDR",
		} {
			nsrv := newNameServer(ns, "bad")
			nsrv.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: true,
				ClientPeers: []networkingv1.NetworkPolicyPeer{*peer}}
			Expect(k8s.Create(ctx, nsrv)).To(MatchError(And(
				ContainSubstring("spec.networkPolicy.clientPeers[0]"), ContainSubstring(msg))))
			br := newBroker(ns, "bad")
			br.Spec.NetworkPolicy = nsrv.Spec.NetworkPolicy
			Expect(k8s.Create(ctx, br)).To(MatchError(ContainSubstring(msg)))
		}
		nsrv := newNameServer(ns, "good")
		nsrv.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: true, ClientPeers: []networkingv1.NetworkPolicyPeer{
			{IPBlock: &networkingv1.IPBlock{CIDR: "2001:db8::/32"}}, teamPeer("apps"),
			{PodSelector: &metav1.LabelSelector{}, NamespaceSelector: &metav1.LabelSelector{}}}}
		Expect(k8s.Create(ctx, nsrv)).To(Succeed())
		// What the CRD admits, the NetworkPolicy API accepts.
		Eventually(policyFrom(nsrv, "good-nameserver")).Should(HaveLen(4))
	})
})
