package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/resource"
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
		Eventually(update(br, func() { br.Spec.Expose = &v1alpha1.BrokerExpose{Type: v1alpha1.ExposeClusterIP} })).Should(Succeed())
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

	// The API server has no load-balancer controller here: the test writes the Services'
	// status.loadBalancer.ingress as a cloud would.
	It("holds a LoadBalancer Broker's groups until their Services have IPs, then announces them", func() {
		ns := newNamespace()
		nsrv := newNameServer(ns, "ns")
		nsrv.Spec.Expose = &v1alpha1.NameServerExpose{Type: v1alpha1.ExposeLoadBalancer}
		Expect(k8s.Create(ctx, nsrv)).To(Succeed())
		br := newBroker(ns, "rmq") // 2 groups of 2
		br.Spec.Expose = &v1alpha1.BrokerExpose{Type: v1alpha1.ExposeLoadBalancer,
			LoadBalancer: &v1alpha1.LoadBalancerSpec{Annotations: map[string]string{"cloud/internal": "true"}}}
		Expect(k8s.Create(ctx, br)).To(Succeed())

		readyReason := func(g Gomega) (string, string) {
			g.Expect(get(br, ns, "rmq")()).To(Succeed())
			c := meta.FindStatusCondition(br.Status.Conditions, v1alpha1.ConditionReady)
			g.Expect(c).NotTo(BeNil())
			return c.Reason, c.Message
		}
		Eventually(func(g Gomega) {
			typ, _ := serviceNodePorts(g, ns, "ns")
			g.Expect(typ).To(Equal(corev1.ServiceTypeLoadBalancer))
			svc := &corev1.Service{}
			g.Expect(get(svc, ns, "rmq-broker-b-1")()).To(Succeed())
			g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
			g.Expect(svc.Annotations).To(HaveKeyWithValue("cloud/internal", "true"))
			reason, msg := readyReason(g)
			g.Expect(reason).To(Equal(ReasonLoadBalancerPending))
			g.Expect(msg).To(ContainSubstring("rmq-broker-a-0"))
		}).Should(Succeed())
		Expect(apierrors.IsNotFound(get(&appsv1.StatefulSet{}, ns, "rmq-broker-a")())).To(BeTrue())
		Expect(apierrors.IsNotFound(get(&corev1.ConfigMap{}, ns, "rmq-broker-a-config")())).To(BeTrue())

		setIngress := func(name, ip string) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			Eventually(func() error {
				if err := get(svc, ns, name)(); err != nil {
					return err
				}
				svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
				return k8s.Status().Update(ctx, svc)
			}).Should(Succeed())
		}
		setIngress("rmq-broker-a-0", "198.51.100.10")
		setIngress("rmq-broker-a-1", "198.51.100.11")
		Eventually(func(g Gomega) {
			svc := &corev1.Service{}
			g.Expect(get(svc, ns, "rmq-broker-a-1")()).To(Succeed())
			cm := &corev1.ConfigMap{}
			g.Expect(get(cm, ns, "rmq-broker-a-config")()).To(Succeed())
			g.Expect(cm.Data["rmq-broker-a-1.conf"]).To(And(ContainSubstring("brokerIP1=198.51.100.11\n"),
				ContainSubstring("brokerIP2="+svc.Spec.ClusterIP+"\n")))
			g.Expect(get(&appsv1.StatefulSet{}, ns, "rmq-broker-a")()).To(Succeed())
			reason, msg := readyReason(g) // group b still waits
			g.Expect(reason).To(Equal(ReasonLoadBalancerPending))
			g.Expect(msg).To(And(ContainSubstring("rmq-broker-b-0"), Not(ContainSubstring("rmq-broker-a-"))))
		}).Should(Succeed())
		Expect(apierrors.IsNotFound(get(&appsv1.StatefulSet{}, ns, "rmq-broker-b")())).To(BeTrue())
		// The node ports the API server allocated stay: reconciles do not rewrite the Service.
		stored := &corev1.Service{}
		Expect(get(stored, ns, "rmq-broker-a-0")()).To(Succeed())
		Expect(stored.Spec.Ports[0].NodePort).NotTo(BeZero())

		setIngress("rmq-broker-b-0", "198.51.100.20")
		setIngress("rmq-broker-b-1", "198.51.100.21")
		Eventually(func(g Gomega) {
			g.Expect(get(&appsv1.StatefulSet{}, ns, "rmq-broker-b")()).To(Succeed())
			reason, _ := readyReason(g)
			g.Expect(reason).NotTo(Equal(ReasonLoadBalancerPending))
		}).Should(Succeed())
		again := &corev1.Service{}
		Expect(get(again, ns, "rmq-broker-a-0")()).To(Succeed())
		Expect(again.ResourceVersion).To(Equal(stored.ResourceVersion))

		// A load balancer with a new IP rolls its group.
		setIngress("rmq-broker-a-1", "198.51.100.99")
		Eventually(func(g Gomega) {
			sts := &appsv1.StatefulSet{}
			g.Expect(get(sts, ns, "rmq-broker-a")()).To(Succeed())
			g.Expect(sts.Spec.Template.Annotations[resource.BrokerAddressesAnnotation]).To(ContainSubstring("/198.51.100.99"))
		}).Should(Succeed())

		// Back at ClusterIP: the API server takes the type change, the node ports it
		// allocated go, and the pods announce their ClusterIPs again.
		Eventually(update(nsrv, func() { nsrv.Spec.Expose = nil })).Should(Succeed())
		Eventually(update(br, func() { br.Spec.Expose = nil })).Should(Succeed())
		Eventually(func(g Gomega) {
			typ, ports := serviceNodePorts(g, ns, "ns")
			g.Expect(typ).To(Equal(corev1.ServiceTypeClusterIP))
			g.Expect(ports).To(Equal(map[string]int32{"remoting": 0, "http": 0}))
			svc := &corev1.Service{}
			g.Expect(get(svc, ns, "rmq-broker-a-1")()).To(Succeed())
			g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
			g.Expect(svc.Annotations).NotTo(HaveKey("cloud/internal"))
			cm := &corev1.ConfigMap{}
			g.Expect(get(cm, ns, "rmq-broker-a-config")()).To(Succeed())
			g.Expect(cm.Data["rmq-broker-a-1.conf"]).To(ContainSubstring("brokerIP1=" + svc.Spec.ClusterIP + "\n"))
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
		Entry("nodePort with type LoadBalancer", func(b *v1alpha1.Broker, _ *v1alpha1.NameServer) {
			b.Spec.Expose = brokerNodePort(30000, "")
			b.Spec.Expose.Type = v1alpha1.ExposeLoadBalancer
		}, "expose.nodePort is only for type NodePort"),
		Entry("loadBalancer with type NodePort", func(b *v1alpha1.Broker, _ *v1alpha1.NameServer) {
			b.Spec.Expose = brokerNodePort(30000, "")
			b.Spec.Expose.LoadBalancer = &v1alpha1.LoadBalancerSpec{}
		}, "expose.loadBalancer is only for type LoadBalancer"),
		Entry("a source range that is no CIDR", func(b *v1alpha1.Broker, _ *v1alpha1.NameServer) {
			b.Spec.Expose = &v1alpha1.BrokerExpose{Type: v1alpha1.ExposeLoadBalancer,
				LoadBalancer: &v1alpha1.LoadBalancerSpec{SourceRanges: []string{"203.0.113.7"}}}
		}, "loadBalancer.sourceRanges must be CIDRs"),
		Entry("a LoadBalancer Broker with source ranges", func(b *v1alpha1.Broker, _ *v1alpha1.NameServer) {
			b.Spec.Expose = &v1alpha1.BrokerExpose{Type: v1alpha1.ExposeLoadBalancer,
				LoadBalancer: &v1alpha1.LoadBalancerSpec{SourceRanges: []string{"203.0.113.0/24", "2001:db8::/32"}}}
		}, ""),
		Entry("a LoadBalancer NameServer with loadBalancer", func(_ *v1alpha1.Broker, n *v1alpha1.NameServer) {
			n.Spec.Expose = &v1alpha1.NameServerExpose{Type: v1alpha1.ExposeLoadBalancer, LoadBalancer: &v1alpha1.LoadBalancerSpec{}}
		}, ""),
		Entry("a NameServer with loadBalancer and type ClusterIP", func(_ *v1alpha1.Broker, n *v1alpha1.NameServer) {
			n.Spec.Expose = &v1alpha1.NameServerExpose{Type: v1alpha1.ExposeClusterIP, LoadBalancer: &v1alpha1.LoadBalancerSpec{}}
		}, "expose.loadBalancer is only for type LoadBalancer"),
		Entry("a NameServer with NodePort and no nodePort", func(_ *v1alpha1.Broker, n *v1alpha1.NameServer) {
			n.Spec.Expose = &v1alpha1.NameServerExpose{Type: v1alpha1.ExposeNodePort}
		}, "expose.type NodePort needs nodePort.firstPort"),
		Entry("a NameServer first port that leaves no room for the address server", func(_ *v1alpha1.Broker, n *v1alpha1.NameServer) {
			n.Spec.Expose = nameServerNodePort(32767)
		}, "expose.nodePort.firstPort must be at most 32766"),
	)
})
