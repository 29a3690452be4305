package controllers

import (
	"fmt"
	"maps"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	res "github.com/openrmq/rocketmq-operator/internal/resource"
)

func newBroker(ns, name string) *v1alpha1.Broker {
	return &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.BrokerSpec{
			ContainerSpec:    v1alpha1.ContainerSpec{Image: "openrmq/rocketmq:1"},
			NameServerRef:    &v1alpha1.LocalObjectReference{Name: "ns"},
			Groups:           2,
			ReplicasPerGroup: 2,
			Config:           map[string]string{"autoCreateTopicEnable": "false"},
		},
	}
}

// runPods plays the StatefulSet controller and kubelet for a Broker: every pod exists,
// runs with an IP and is Ready, and every StatefulSet reports it.
func runPods(br *v1alpha1.Broker) {
	GinkgoHelper()
	for g := range br.Spec.Groups {
		runGroupPods(br, g)
	}
}

// runGroupPods is runPods for group g alone. The pods carry markReady's revision, so
// that the roll sees them at the StatefulSet's current spec.
func runGroupPods(br *v1alpha1.Broker, g int32) {
	GinkgoHelper()
	sts := &appsv1.StatefulSet{}
	Eventually(get(sts, br.Namespace, res.BrokerGroupName(br, g))).Should(Succeed())
	for id := range br.Spec.ReplicasPerGroup {
		labels := map[string]string{appsv1.StatefulSetRevisionLabel: "r1"}
		maps.Copy(labels, sts.Spec.Template.Labels)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: br.Namespace,
			Name: res.BrokerPodName(br, g, id), Labels: labels},
			Spec: *sts.Spec.Template.Spec.DeepCopy()}
		// The StatefulSet controller would add the claim as a volume.
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "store",
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		Expect(k8s.Create(ctx, pod)).To(Succeed())
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning,
			PodIP:      fmt.Sprintf("10.0.%d.%d", g, id),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
	}
	markReady(sts)
}

var _ = Describe("Broker", func() {
	It("creates one StatefulSet per group with per-pod broker.conf and reports members", func() {
		ns := newNamespace()
		Expect(k8s.Create(ctx, newNameServer(ns, "ns"))).To(Succeed())
		br := newBroker(ns, "rmq")
		Expect(k8s.Create(ctx, br)).To(Succeed())
		Expect(br.Spec.BrokerRole).To(Equal(v1alpha1.AsyncMaster), "defaulted")

		sts := &appsv1.StatefulSet{}
		Eventually(get(sts, ns, "rmq-broker-b")).Should(Succeed())
		Expect(get(sts, ns, "rmq-broker-a")()).To(Succeed())
		Expect(*sts.Spec.Replicas).To(Equal(int32(2)))
		Expect(sts.Spec.PodManagementPolicy).To(Equal(appsv1.OrderedReadyPodManagement))
		Expect(sts.Spec.ServiceName).To(Equal("rmq-broker-a-headless"))
		Expect(sts.Spec.VolumeClaimTemplates).To(HaveLen(1))
		Expect(sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted).
			To(Equal(appsv1.RetainPersistentVolumeClaimRetentionPolicyType))
		c := sts.Spec.Template.Spec.Containers[0]
		Expect(c.Command).To(Equal([]string{"/broker", "-c", "/etc/rocketmq/broker/$(POD_NAME).conf", "-n", "$(NAMESRV_ADDR)",
			"-http", ":8080", "-shutdown-delay", "4s"}))

		cm := &corev1.ConfigMap{}
		Expect(get(cm, ns, "rmq-broker-a-config")()).To(Succeed())
		Expect(cm.Data["rmq-broker-a-0.conf"]).To(And(ContainSubstring("brokerName=broker-a\n"),
			ContainSubstring("brokerId=0\n"), ContainSubstring("brokerRole=ASYNC_MASTER\n"),
			ContainSubstring("brokerClusterName=DefaultCluster\n"), ContainSubstring("autoCreateTopicEnable=false\n")))
		Expect(cm.Data["rmq-broker-a-1.conf"]).To(And(ContainSubstring("brokerId=1\n"), ContainSubstring("brokerRole=SLAVE\n")))
		Expect(cm.Data["rmq-broker-a-0.conf"]).NotTo(ContainSubstring("namesrvAddr"))
		nsCM := &corev1.ConfigMap{}
		Expect(get(nsCM, ns, "rmq-namesrv")()).To(Succeed())
		Expect(nsCM.Data["namesrvAddr"]).To(Equal(fmt.Sprintf(
			"ns-0.ns-headless.%[1]s.svc:9876;ns-1.ns-headless.%[1]s.svc:9876", ns)))
		Expect(get(&corev1.Service{}, ns, "rmq-broker-b-headless")()).To(Succeed())

		runPods(br)
		Eventually(func(g Gomega) {
			g.Expect(get(br, ns, "rmq")()).To(Succeed())
			g.Expect(br.Status.ObservedGeneration).To(Equal(br.Generation))
			g.Expect(br.Status.ReadySummary).To(Equal("4/4"))
			g.Expect(meta.IsStatusConditionTrue(br.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
			g.Expect(br.Status.Groups).To(HaveLen(2))
			g.Expect(br.Status.Groups[1].BrokerName).To(Equal("broker-b"))
			g.Expect(*br.Status.Groups[1].Master).To(Equal(v1alpha1.BrokerMember{BrokerID: 0,
				Pod: "rmq-broker-b-0", Address: "rmq-broker-b-0.rmq-broker-b-headless." + ns + ".svc:10911", Ready: true}))
			g.Expect(br.Status.Groups[1].Slaves).To(HaveLen(1))
		}).Should(Succeed())
	})

	It("pushes a new name-server list live without changing the pod template", func() {
		ns := newNamespace()
		nsrv := newNameServer(ns, "ns")
		Expect(k8s.Create(ctx, nsrv)).To(Succeed())
		br := newBroker(ns, "rmq")
		Expect(k8s.Create(ctx, br)).To(Succeed())
		runPods(br)
		Eventually(func(g Gomega) {
			g.Expect(get(br, ns, "rmq")()).To(Succeed())
			g.Expect(br.Status.NameServerAddress).To(ContainSubstring("ns-1.ns-headless"))
		}).Should(Succeed())
		sts := &appsv1.StatefulSet{}
		Expect(get(sts, ns, "rmq-broker-a")()).To(Succeed())
		before := sts.Spec.Template.DeepCopy()

		Eventually(update(nsrv, func() { nsrv.Spec.Replicas = 3 })).Should(Succeed())
		want := fmt.Sprintf("ns-0.ns-headless.%[1]s.svc:9876;ns-1.ns-headless.%[1]s.svc:9876;ns-2.ns-headless.%[1]s.svc:9876", ns)
		// Every running pod gets it. A reconcile that read a stale cache may push twice; the
		// call is idempotent, so the test asks for every pod, not for exactly four calls.
		Eventually(func() map[string]string {
			got := map[string]string{}
			for _, c := range admin.callsFor("UpdateBrokerConfig", want) {
				got[c.Addr] = c.Args
			}
			return got
		}).Should(Equal(map[string]string{
			"10.0.0.0:10911": "map[namesrvAddr:" + want + "]", "10.0.0.1:10911": "map[namesrvAddr:" + want + "]",
			"10.0.1.0:10911": "map[namesrvAddr:" + want + "]", "10.0.1.1:10911": "map[namesrvAddr:" + want + "]",
		}))
		Eventually(func(g Gomega) {
			g.Expect(get(br, ns, "rmq")()).To(Succeed())
			g.Expect(br.Status.NameServerAddress).To(Equal(want))
		}).Should(Succeed())
		nsCM := &corev1.ConfigMap{}
		Expect(get(nsCM, ns, "rmq-namesrv")()).To(Succeed())
		Expect(nsCM.Data["namesrvAddr"]).To(Equal(want))
		Expect(get(sts, ns, "rmq-broker-a")()).To(Succeed())
		Expect(sts.Spec.Template.Annotations).To(Equal(before.Annotations))
		Expect(sts.Spec.Template.Spec.Containers[0].Env).To(Equal(before.Spec.Containers[0].Env))
	})

	It("retries a failed push and reports Degraded until it succeeds", func() {
		ns := newNamespace()
		br := newBroker(ns, "rmq")
		br.Spec.NameServerRef = nil
		br.Spec.NameServerAddresses = []string{"a.example:9876"}
		br.Spec.Groups = 1
		Expect(k8s.Create(ctx, br)).To(Succeed())
		runPods(br)
		Eventually(func(g Gomega) {
			g.Expect(get(br, ns, "rmq")()).To(Succeed())
			g.Expect(br.Status.NameServerAddress).To(Equal("a.example:9876"))
		}).Should(Succeed())

		admin.setFail("UpdateBrokerConfig", fmt.Errorf("connection refused"))
		Eventually(update(br, func() { br.Spec.NameServerAddresses = []string{"b.example:9876"} })).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(br, ns, "rmq")()).To(Succeed())
			d := meta.FindStatusCondition(br.Status.Conditions, v1alpha1.ConditionDegraded)
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(d.Reason).To(Equal("NameServerPushFailed"))
			g.Expect(br.Status.NameServerAddress).To(Equal("a.example:9876"))
		}).Should(Succeed())
		admin.setFail("UpdateBrokerConfig", nil)
		Eventually(func(g Gomega) {
			g.Expect(get(br, ns, "rmq")()).To(Succeed())
			g.Expect(br.Status.NameServerAddress).To(Equal("b.example:9876"))
			g.Expect(meta.IsStatusConditionFalse(br.Status.Conditions, v1alpha1.ConditionDegraded)).To(BeTrue())
		}, "40s").Should(Succeed())
	})

	It("rolls a config or image change through the template hash, and removes scaled-in groups", func() {
		ns := newNamespace()
		Expect(k8s.Create(ctx, newNameServer(ns, "ns"))).To(Succeed())
		br := newBroker(ns, "rmq")
		Expect(k8s.Create(ctx, br)).To(Succeed())
		sts := &appsv1.StatefulSet{}
		Eventually(get(sts, ns, "rmq-broker-a")).Should(Succeed())
		oldHash := sts.Spec.Template.Annotations[res.ConfigHashAnnotation]
		Expect(oldHash).NotTo(BeEmpty())

		Eventually(update(br, func() {
			br.Spec.Config["maxMessageSize"] = "1048576"
			br.Spec.Image = "openrmq/rocketmq:2"
			br.Spec.Groups = 1
		})).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(sts, ns, "rmq-broker-a")()).To(Succeed())
			g.Expect(sts.Spec.Template.Annotations[res.ConfigHashAnnotation]).NotTo(Equal(oldHash))
			g.Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal("openrmq/rocketmq:2"))
		}).Should(Succeed())
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rmq-broker-b"}, &appsv1.StatefulSet{})
		}).Should(MatchError(ContainSubstring("not found")))
		Eventually(get(&corev1.ConfigMap{}, ns, "rmq-broker-b-config")).Should(MatchError(ContainSubstring("not found")))
	})

	It("waits for a missing NameServer with a readable reason", func() {
		ns := newNamespace()
		br := newBroker(ns, "rmq")
		Expect(k8s.Create(ctx, br)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(br, ns, "rmq")()).To(Succeed())
			c := meta.FindStatusCondition(br.Status.Conditions, v1alpha1.ConditionReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal("NameServerNotFound"))
		}).Should(Succeed())
		Expect(k8s.Create(ctx, newNameServer(ns, "ns"))).To(Succeed())
		Eventually(get(&appsv1.StatefulSet{}, ns, "rmq-broker-a")).Should(Succeed())
	})

	DescribeTable("refuses invalid specs",
		func(mutate func(*v1alpha1.Broker), msg string) {
			br := newBroker(newNamespace(), "bad")
			mutate(br)
			Expect(k8s.Create(ctx, br)).To(MatchError(ContainSubstring(msg)))
		},
		Entry("both name-server sources", func(b *v1alpha1.Broker) {
			b.Spec.NameServerAddresses = []string{"x:9876"}
		}, "set exactly one of nameServerRef or nameServerAddresses"),
		Entry("no name-server source", func(b *v1alpha1.Broker) { b.Spec.NameServerRef = nil },
			"set exactly one of nameServerRef or nameServerAddresses"),
		Entry("SYNC_MASTER without a slave", func(b *v1alpha1.Broker) {
			b.Spec.BrokerRole, b.Spec.ReplicasPerGroup = v1alpha1.SyncMaster, 1
		}, "brokerRole SYNC_MASTER needs replicasPerGroup >= 2"),
		Entry("an operator-owned config key", func(b *v1alpha1.Broker) { b.Spec.Config["brokerId"] = "3" },
			"config must not set keys the operator owns"),
		Entry("a bad flushDiskType", func(b *v1alpha1.Broker) { b.Spec.FlushDiskType = "SOMETIMES" },
			"spec.flushDiskType"),
		Entry("too many groups", func(b *v1alpha1.Broker) { b.Spec.Groups = 27 }, "spec.groups"),
	)

	It("refuses changing the cluster name or the storage size", func() {
		ns := newNamespace()
		br := newBroker(ns, "rmq")
		Expect(k8s.Create(ctx, br)).To(Succeed())
		Eventually(update(br, func() { br.Spec.ClusterName = "Other" })).
			Should(MatchError(ContainSubstring("clusterName is immutable")))
		Eventually(update(br, func() { br.Spec.Storage.Size = ptr.To(resource.MustParse("1Ti")) })).
			Should(MatchError(ContainSubstring("storage.size is immutable")))
	})
})
