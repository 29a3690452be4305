package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	res "github.com/openrmq/rocketmq-operator/internal/resource"
)

func newNameServer(ns, name string) *v1alpha1.NameServer {
	return &v1alpha1.NameServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.NameServerSpec{
			ContainerSpec: v1alpha1.ContainerSpec{Image: "openrmq/rocketmq:1"},
			Replicas:      2,
		},
	}
}

// markReady plays the StatefulSet controller and kubelet: every replica updated and ready.
func markReady(sts *appsv1.StatefulSet) {
	base := sts.DeepCopy()
	n := *sts.Spec.Replicas
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: n,
		ReadyReplicas: n, UpdatedReplicas: n, AvailableReplicas: n, CurrentReplicas: n,
		CurrentRevision: "r1", UpdateRevision: "r1"}
	Expect(k8s.Status().Patch(ctx, sts, client.MergeFrom(base))).To(Succeed())
}

var _ = Describe("NameServer", func() {
	It("creates a StatefulSet, Services, ConfigMap and PDB and reports readiness", func() {
		ns := newNamespace()
		nsrv := newNameServer(ns, "ns")
		Expect(k8s.Create(ctx, nsrv)).To(Succeed())
		Expect(nsrv.Spec.Ports.ListenPort).To(Equal(int32(9876)), "defaulted by the API server")

		sts := &appsv1.StatefulSet{}
		Eventually(get(sts, ns, "ns")).Should(Succeed())
		Expect(*sts.Spec.Replicas).To(Equal(int32(2)))
		Expect(sts.Spec.ServiceName).To(Equal("ns-headless"))
		Expect(sts.Spec.UpdateStrategy.Type).To(Equal(appsv1.RollingUpdateStatefulSetStrategyType))
		c := sts.Spec.Template.Spec.Containers[0]
		Expect(c.Command).To(Equal([]string{"/namesrv", "-c", "/etc/rocketmq/namesrv.conf",
			"-http", ":8080", "-peers", "ns-headless." + ns + ".svc:9876"}))
		Expect(c.Ports[0].ContainerPort).To(Equal(int32(9876)))
		Expect(sts.Spec.Template.Annotations).To(HaveKey(res.ConfigHashAnnotation))
		Expect(metav1.IsControlledBy(sts, nsrv)).To(BeTrue())

		headless := &corev1.Service{}
		Expect(get(headless, ns, "ns-headless")()).To(Succeed())
		Expect(headless.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
		Expect(get(&corev1.Service{}, ns, "ns")()).To(Succeed())
		Expect(get(&policyv1.PodDisruptionBudget{}, ns, "ns")()).To(Succeed())
		cm := &corev1.ConfigMap{}
		Expect(get(cm, ns, "ns-config")()).To(Succeed())
		Expect(cm.Data["namesrv.conf"]).To(ContainSubstring("listenPort=9876"))
		Expect(cm.Data["namesrv.conf"]).To(ContainSubstring("kvConfigPath="))

		Eventually(func(g Gomega) {
			g.Expect(get(nsrv, ns, "ns")()).To(Succeed())
			g.Expect(nsrv.Status.ObservedGeneration).To(Equal(nsrv.Generation))
			g.Expect(nsrv.Status.Address).To(BeEmpty(), "no pod is ready")
			g.Expect(nsrv.Status.AddressURL).To(Equal("http://ns." + ns + ".svc:8080/rocketmq/nsaddr"))
			g.Expect(meta.IsStatusConditionFalse(nsrv.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
			g.Expect(meta.IsStatusConditionTrue(nsrv.Status.Conditions, v1alpha1.ConditionProgressing)).To(BeTrue())
		}).Should(Succeed())

		markReady(sts)
		// Playing the kubelet: a ready pod with an IP. status.address follows the pods.
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ns-0", Namespace: ns, Labels: sts.Spec.Template.Labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "namesrv", Image: "x"}}}}
		Expect(k8s.Create(ctx, pod)).To(Succeed())
		base := pod.DeepCopy()
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.2.3", PodIPs: []corev1.PodIP{{IP: "10.1.2.3"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		Expect(k8s.Status().Patch(ctx, pod, client.MergeFrom(base))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(nsrv, ns, "ns")()).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(nsrv.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
			g.Expect(nsrv.Status.ReadyReplicas).To(Equal(int32(2)))
			g.Expect(nsrv.Status.Address).To(Equal("10.1.2.3:9876"))
		}).Should(Succeed())
	})

	It("rolls out an image change and a port change", func() {
		ns := newNamespace()
		nsrv := newNameServer(ns, "ns")
		Expect(k8s.Create(ctx, nsrv)).To(Succeed())
		sts := &appsv1.StatefulSet{}
		Eventually(get(sts, ns, "ns")).Should(Succeed())
		oldHash := sts.Spec.Template.Annotations[res.ConfigHashAnnotation]

		Eventually(update(nsrv, func() {
			nsrv.Spec.Image = "openrmq/rocketmq:2"
			nsrv.Spec.Ports.ListenPort = 9877
		})).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(sts, ns, "ns")()).To(Succeed())
			g.Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal("openrmq/rocketmq:2"))
			g.Expect(sts.Spec.Template.Annotations[res.ConfigHashAnnotation]).NotTo(Equal(oldHash))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(nsrv, ns, "ns")()).To(Succeed())
			g.Expect(nsrv.Status.ObservedGeneration).To(Equal(nsrv.Generation))
		}).Should(Succeed())
	})

	It("leaves the children alone when nothing changed", func() {
		ns := newNamespace()
		nsrv := newNameServer(ns, "ns")
		Expect(k8s.Create(ctx, nsrv)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(nsrv, ns, "ns")()).To(Succeed())
			g.Expect(nsrv.Status.ObservedGeneration).To(Equal(nsrv.Generation))
		}).Should(Succeed())
		sts := &appsv1.StatefulSet{}
		Expect(get(sts, ns, "ns")()).To(Succeed())
		rv := sts.ResourceVersion
		// A label change triggers a reconcile without a spec change.
		Eventually(update(nsrv, func() { nsrv.Labels = map[string]string{"poke": "1"} })).Should(Succeed())
		Consistently(func() string {
			Expect(get(sts, ns, "ns")()).To(Succeed())
			return sts.ResourceVersion
		}, "2s").Should(Equal(rv))
	})

	It("keeps the KV config on a claim when persistence is set, and refuses to drop it", func() {
		ns := newNamespace()
		nsrv := newNameServer(ns, "ns")
		nsrv.Spec.Persistence = &v1alpha1.NameServerPersistence{Size: ptr.To(resource.MustParse("2Gi"))}
		Expect(k8s.Create(ctx, nsrv)).To(Succeed())
		sts := &appsv1.StatefulSet{}
		Eventually(get(sts, ns, "ns")).Should(Succeed())
		Expect(sts.Spec.VolumeClaimTemplates).To(HaveLen(1))

		Eventually(update(nsrv, func() { nsrv.Spec.Persistence = nil })).
			Should(MatchError(ContainSubstring("persistence cannot be added or removed")))
	})

	It("refuses out-of-range replicas and ports", func() {
		ns := newNamespace()
		nsrv := newNameServer(ns, "bad")
		nsrv.Spec.Replicas = 12
		nsrv.Spec.Ports.ListenPort = 80
		err := k8s.Create(ctx, nsrv)
		Expect(err).To(MatchError(ContainSubstring("spec.replicas")))
		Expect(err).To(MatchError(ContainSubstring("spec.ports.listenPort")))

		// Leaving image out runs the operator's own version; an empty string is refused.
		raw := map[string]any{"apiVersion": "rocketmq.openrmq.io/v1alpha1", "kind": "NameServer",
			"metadata": map[string]any{"name": "emptyimage", "namespace": ns},
			"spec":     map[string]any{"image": ""}}
		Expect(k8s.Create(ctx, &unstructured.Unstructured{Object: raw})).To(MatchError(ContainSubstring("spec.image")))
	})
})
