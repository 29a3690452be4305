//go:build k8s

package e2ek8s

import (
	"fmt"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/version"
)

// spec.expose NodePort on the test cluster: kube-proxy serves node ports on the node's IP,
// 10.244.0.1, only (nodePortAddresses), and this host reaches it as a client outside the
// cluster would reach a node. The ports are away from every other step's.
const (
	nodePortNS       = "rmq-e2e-nodeport"
	nodeIP           = "10.244.0.1"
	nameServerPort   = 30876 // the NameServer's firstPort: the name-server port
	brokerFirstPort  = 30911 // the Broker's firstPort: broker-a-0 takes 30911-30913
	brokerNodePort   = brokerFirstPort + 2
	nodePortMessages = 100
)

// checkNodePort runs a NameServer and a one-pod Broker exposed through node ports in a
// namespace of their own and moves messages with the official Go client from this host,
// through <node>:<node port> only: the route must name the broker's node port.
func checkNodePort() {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nodePortNS, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() {
		Expect(k8s.Delete(ctx, ns)).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(ns), ns) }).
			WithTimeout(2 * time.Minute).WithPolling(time.Second).ShouldNot(Succeed())
	})
	container := func(cpu, memory string) v1alpha1.ContainerSpec {
		return v1alpha1.ContainerSpec{Image: version.DefaultImage, Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}}}
	}
	t0 := time.Now()
	nsrv := &v1alpha1.NameServer{ObjectMeta: metav1.ObjectMeta{Name: "ns", Namespace: nodePortNS},
		Spec: v1alpha1.NameServerSpec{ContainerSpec: container("50m", "128Mi"), Replicas: 1,
			Expose: &v1alpha1.NameServerExpose{Type: v1alpha1.ExposeNodePort,
				NodePort: &v1alpha1.NodePortSpec{FirstPort: nameServerPort}}}}
	Expect(k8s.Create(ctx, nsrv)).To(Succeed())
	br := &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: nodePortNS},
		Spec: v1alpha1.BrokerSpec{ContainerSpec: container("100m", "256Mi"),
			NameServerRef: &v1alpha1.LocalObjectReference{Name: "ns"}, Groups: 1, ReplicasPerGroup: 1,
			Config:  map[string]string{"autoCreateTopicEnable": "false"},
			Storage: v1alpha1.BrokerStorage{Size: ptr.To(resource.MustParse("1Gi")), WhenDeleted: v1alpha1.ReclaimDelete},
			Expose: &v1alpha1.BrokerExpose{Type: v1alpha1.ExposeNodePort, NodePort: &v1alpha1.BrokerNodePortSpec{
				NodePortSpec: v1alpha1.NodePortSpec{FirstPort: brokerFirstPort}}}}}
	Expect(k8s.Create(ctx, br)).To(Succeed())
	tp := &v1alpha1.Topic{ObjectMeta: metav1.ObjectMeta{Name: "outside", Namespace: nodePortNS},
		Spec: v1alpha1.TopicSpec{BrokerRef: v1alpha1.LocalObjectReference{Name: "ext"}, Queues: ptr.To[int32](4)}}
	Expect(k8s.Create(ctx, tp)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(nsrv), nsrv)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(nsrv.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "NameServer: %v", nsrv.Status.Conditions)
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(br), br)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(br.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "Broker: %v", br.Status.Conditions)
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tp), tp)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(tp.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "Topic: %v", tp.Status.Conditions)
	}).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
	report("NodePort NameServer, Broker and Topic Ready in %s", since(t0))

	svc := &corev1.Service{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: nodePortNS, Name: "ext-broker-a-0"}, svc)).To(Succeed())
	Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeNodePort))
	var remoting int32
	for _, p := range svc.Spec.Ports {
		if p.Name == "remoting" {
			remoting = p.NodePort
		}
	}
	Expect(remoting).To(Equal(int32(brokerNodePort)), "the pod Service's remoting node port")

	nameServer := fmt.Sprintf("%s:%d", nodeIP, nameServerPort)
	want := fmt.Sprintf("%s:%d", nodeIP, brokerNodePort)
	var announced string
	Eventually(func() string {
		if r := routeFrom(nameServer, tp.Name); r != nil && len(r.BrokerDatas) == 1 {
			announced = r.BrokerDatas[0].BrokerAddrs[0]
		}
		return announced
	}).WithTimeout(time.Minute).Should(Equal(want), "the route from %s announces the broker at its node's IP and node port", nameServer)

	keys := produceGo([]string{nameServer}, tp.Name, "nodeport", nodePortMessages)
	got := consumeGo([]string{nameServer}, "e2e-nodeport-"+runID, tp.Name, keys, consumer.ConsumeFromFirstOffset, 2*time.Minute)
	Expect(got).To(Equal(len(keys)))
	report("outside client through NodePort: sent=%d received=%d via %s", len(keys), got, announced)
}
