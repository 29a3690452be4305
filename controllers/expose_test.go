package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

func brokerNodePort(first int32, host string) *v1alpha1.BrokerExpose {
	return &v1alpha1.BrokerExpose{Type: v1alpha1.ExposeNodePort, NodePort: &v1alpha1.BrokerNodePortSpec{
		NodePortSpec: v1alpha1.NodePortSpec{FirstPort: first}, AdvertisedHost: host}}
}

func nameServerNodePort(first int32) *v1alpha1.NameServerExpose {
	return &v1alpha1.NameServerExpose{Type: v1alpha1.ExposeNodePort, NodePort: &v1alpha1.NodePortSpec{FirstPort: first}}
}

// serviceNodePorts is a Service's type and node ports by port name.
func serviceNodePorts(g Gomega, ns, name string) (corev1.ServiceType, map[string]int32) {
	svc := &corev1.Service{}
	g.Expect(get(svc, ns, name)()).To(Succeed())
	out := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		out[p.Name] = p.NodePort
	}
	return svc.Spec.Type, out
}

var _ = Describe("spec.expose", func() {
	It("opens the node ports the spec lays out and closes them again back at ClusterIP", func() {
		ns := newNamespace()
		nsrv := newNameServer(ns, "ns")
		nsrv.Spec.Expose = nameServerNodePort(31400)
		Expect(k8s.Create(ctx, nsrv)).To(Succeed())
		br := newBroker(ns, "rmq") // 2 groups of 2
		br.Spec.Expose = brokerNodePort(31500, "")
		Expect(k8s.Create(ctx, br)).To(Succeed())

		Eventually(func(g Gomega) {
			typ, ports := serviceNodePorts(g, ns, "ns")
			g.Expect(typ).To(Equal(corev1.ServiceTypeNodePort))
			g.Expect(ports).To(Equal(map[string]int32{"remoting": 31400, "http": 31401}))
			// broker-b's slave: group 1 starts at 31500+15, brokerId 1 three further.
			typ, ports = serviceNodePorts(g, ns, "rmq-broker-b-1")
			g.Expect(typ).To(Equal(corev1.ServiceTypeNodePort))
			g.Expect(ports).To(Equal(map[string]int32{"fast": 31518, "ha": 31519, "remoting": 31520}))
			svc := &corev1.Service{}
			g.Expect(get(svc, ns, "rmq-broker-b-1")()).To(Succeed())
			cm := &corev1.ConfigMap{}
			g.Expect(get(cm, ns, "rmq-broker-b-config")()).To(Succeed())
			g.Expect(cm.Data["rmq-broker-b-1.conf"]).To(And(ContainSubstring("brokerIP2="+svc.Spec.ClusterIP+"\n"),
				ContainSubstring("advertisedListenPort=31520\n"), Not(ContainSubstring("brokerIP1="))))
			sts := &appsv1.StatefulSet{}
			g.Expect(get(sts, ns, "rmq-broker-b")()).To(Succeed())
			g.Expect(sts.Spec.Template.Spec.Containers[0].Command).To(ContainElements("-brokerIP1", "$(BROKER_IP1)"))
		}).Should(Succeed())

		// The API server takes a Service back from NodePort only with its node ports at 0.
		Eventually(update(nsrv, func() { nsrv.Spec.Expose = nil })).Should(Succeed())
		Eventually(update(br, func() { br.Spec.Expose.Type = v1alpha1.ExposeClusterIP })).Should(Succeed())
		Eventually(func(g Gomega) {
			typ, ports := serviceNodePorts(g, ns, "ns")
			g.Expect(typ).To(Equal(corev1.ServiceTypeClusterIP))
			g.Expect(ports).To(Equal(map[string]int32{"remoting": 0, "http": 0}))
			typ, ports = serviceNodePorts(g, ns, "rmq-broker-b-1")
			g.Expect(typ).To(Equal(corev1.ServiceTypeClusterIP))
			g.Expect(ports).To(Equal(map[string]int32{"fast": 0, "ha": 0, "remoting": 0}))
			sts := &appsv1.StatefulSet{}
			g.Expect(get(sts, ns, "rmq-broker-b")()).To(Succeed())
			g.Expect(sts.Spec.Template.Spec.Containers[0].Command).NotTo(ContainElement("-brokerIP1"))
		}).Should(Succeed())
		Eventually(func(g Gomega) { // and the ports are free: another Broker takes them
			other := newBroker(ns, "other")
			other.Spec.Groups, other.Spec.ReplicasPerGroup = 1, 1
			other.Spec.Expose = brokerNodePort(31500, "")
			g.Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, other))).To(Succeed())
			typ, ports := serviceNodePorts(g, ns, "other-broker-a-0")
			g.Expect(typ).To(Equal(corev1.ServiceTypeNodePort))
			g.Expect(ports).To(Equal(map[string]int32{"fast": 31500, "ha": 31501, "remoting": 31502}))
		}).Should(Succeed())
	})

	DescribeTable("refuses invalid expose specs",
		func(mutate func(*v1alpha1.Broker, *v1alpha1.NameServer), msg string) {
			ns := newNamespace()
			br, nsrv := newBroker(ns, "bad"), newNameServer(ns, "bad")
			mutate(br, nsrv)
			var obj client.Object = br
			if nsrv.Spec.Expose != nil {
				obj = nsrv
			}
			err := k8s.Create(ctx, obj, client.DryRunAll)
			if msg == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(ContainSubstring(msg)))
		},
		Entry("a Broker with NodePort and no nodePort", func(b *v1alpha1.Broker, _ *v1alpha1.NameServer) {
			b.Spec.Expose = &v1alpha1.BrokerExpose{Type: v1alpha1.ExposeNodePort}
		}, "expose.type NodePort needs nodePort.firstPort"),
		Entry("a first port below the node-port range", func(b *v1alpha1.Broker, _ *v1alpha1.NameServer) {
			b.Spec.Expose = brokerNodePort(29999, "")
		}, "spec.expose.nodePort.firstPort"),
		Entry("a block of ports that passes 32767", func(b *v1alpha1.Broker, _ *v1alpha1.NameServer) {
			b.Spec.Expose = brokerNodePort(32748, "") // 2 groups of 2: the last port is firstPort+15+6-1
		}, "expose.nodePort.firstPort leaves too few node ports"),
		Entry("a block of ports that just fits", func(b *v1alpha1.Broker, _ *v1alpha1.NameServer) {
			b.Spec.Expose = brokerNodePort(32747, "")
		}, ""),
		Entry("an advertisedHost that is no IP address", func(b *v1alpha1.Broker, _ *v1alpha1.NameServer) {
			b.Spec.Expose = brokerNodePort(30000, "brokers.example.com")
		}, "nodePort.advertisedHost must be an IP address"),
		Entry("advertisedListenPort in spec.config", func(b *v1alpha1.Broker, _ *v1alpha1.NameServer) {
			b.Spec.Config["advertisedListenPort"] = "30913"
		}, "config must not set keys the operator owns"),
		Entry("a NameServer with NodePort and no nodePort", func(_ *v1alpha1.Broker, n *v1alpha1.NameServer) {
			n.Spec.Expose = &v1alpha1.NameServerExpose{Type: v1alpha1.ExposeNodePort}
		}, "expose.type NodePort needs nodePort.firstPort"),
		Entry("a NameServer first port that leaves no room for the address server", func(_ *v1alpha1.Broker, n *v1alpha1.NameServer) {
			n.Spec.Expose = nameServerNodePort(32767)
		}, "expose.nodePort.firstPort must be at most 32766"),
	)
})
