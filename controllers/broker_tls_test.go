package controllers

import (
	"crypto/tls"
	"io"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	res "github.com/openrmq/rocketmq-operator/internal/resource"
	"github.com/openrmq/rocketmq-operator/pkg/tlsconfig/tlstest"
)

var _ TLSAdmin = (*fakeAdmin)(nil)

// WithTLS: the recording fake answers over "TLS" as it does without.
func (f *fakeAdmin) WithTLS(*tls.Config) (BrokerAdmin, io.Closer) { return f, nopCloser{} }

// volumeOf returns the pod template's volume name and the first container's mount of it.
func volumeOf(sts *appsv1.StatefulSet, name string) (*corev1.Volume, *corev1.VolumeMount) {
	var v *corev1.Volume
	var m *corev1.VolumeMount
	for i := range sts.Spec.Template.Spec.Volumes {
		if sts.Spec.Template.Spec.Volumes[i].Name == name {
			v = &sts.Spec.Template.Spec.Volumes[i]
		}
	}
	mounts := sts.Spec.Template.Spec.Containers[0].VolumeMounts
	for i := range mounts {
		if mounts[i].Name == name {
			m = &mounts[i]
		}
	}
	return v, m
}

// tlsConditionOf waits for the Broker's TLS condition to have status and reason.
func tlsConditionOf(br *v1alpha1.Broker, status metav1.ConditionStatus, reason string, msg ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(get(br, br.Namespace, br.Name)()).To(Succeed())
		c := condition(br.Status.Conditions, v1alpha1.ConditionTLS)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(reason), c.Message)
		g.Expect(c.Status).To(Equal(status))
		for _, m := range msg {
			g.Expect(c.Message).To(ContainSubstring(m))
		}
	}).Should(Succeed())
}

var _ = Describe("Broker and NameServer with spec.tls", func() {
	It("mounts the Secret, renders the tls.* keys, rolls on a mode change but not on a renewed certificate, and reports the TLS condition", func() {
		ns := newNamespace()
		br := newBroker(ns, "rmq")
		br.Spec.NameServerRef, br.Spec.NameServerAddresses = nil, []string{ns + "-tls.example:9876"}
		br.Spec.Groups = 1
		br.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "rmq-tls"}
		Expect(k8s.Create(ctx, br)).To(Succeed())
		Expect(br.Spec.TLS.Mode).To(Equal(v1alpha1.TLSEnforcing), "defaulted")
		Expect(br.Spec.TLS.ClientAuth).To(Equal(v1alpha1.TLSClientAuthNone), "defaulted")

		sts := &appsv1.StatefulSet{}
		Eventually(get(sts, ns, "rmq-broker-a")).Should(Succeed())
		v, m := volumeOf(sts, "tls")
		Expect(v).NotTo(BeNil())
		Expect(v.Secret.SecretName).To(Equal("rmq-tls"))
		Expect(m).To(Equal(&corev1.VolumeMount{Name: "tls", MountPath: res.TLSDir, ReadOnly: true}))
		cm := &corev1.ConfigMap{}
		Expect(get(cm, ns, "rmq-broker-a-config")()).To(Succeed())
		Expect(cm.Data["rmq-broker-a-0.conf"]).To(And(ContainSubstring("tls.server.mode=enforcing\n"),
			ContainSubstring("tls.enable=true\n"), ContainSubstring("tls.client.trustCertPath="+res.TLSDir+"/ca.crt\n")))
		tlsConditionOf(br, metav1.ConditionFalse, ReasonTLSSecretNotFound, `Secret "rmq-tls"`)
		hash := sts.Spec.Template.Annotations[res.ConfigHashAnnotation]

		By("the Secret appears; no pod is ready, so no handshake yet")
		ca := tlstest.NewCA(GinkgoT(), "rmq CA")
		leaf := ca.Issue(GinkgoT(), "rmq", tlstest.Options{})
		sec := secret(ns, "rmq-tls", map[string]string{"tls.crt": string(leaf.CertPEM), "tls.key": string(leaf.KeyPEM), "ca.crt": string(ca.CertPEM)})
		Expect(k8s.Create(ctx, sec)).To(Succeed())
		tlsConditionOf(br, metav1.ConditionUnknown, ReasonTLSNotChecked)

		By("a renewed certificate rolls nothing; a mode change rolls the pods")
		renewed := ca.Issue(GinkgoT(), "rmq", tlstest.Options{})
		Eventually(update(sec, func() {
			sec.StringData = map[string]string{"tls.crt": string(renewed.CertPEM), "tls.key": string(renewed.KeyPEM)}
		})).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(get(sts, ns, "rmq-broker-a")()).To(Succeed())
			g.Expect(sts.Spec.Template.Annotations[res.ConfigHashAnnotation]).To(Equal(hash))
		}, "2s").Should(Succeed())
		Eventually(update(br, func() { br.Spec.TLS.Mode = v1alpha1.TLSPermissive })).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(sts, ns, "rmq-broker-a")()).To(Succeed())
			g.Expect(sts.Spec.Template.Annotations[res.ConfigHashAnnotation]).NotTo(Equal(hash))
			g.Expect(get(cm, ns, "rmq-broker-a-config")()).To(Succeed())
			g.Expect(cm.Data["rmq-broker-a-0.conf"]).To(ContainSubstring("tls.server.mode=permissive\n"))
		}).Should(Succeed())

		By("TLS off: the volume, the keys and the condition go")
		Eventually(update(br, func() { br.Spec.TLS = nil })).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(sts, ns, "rmq-broker-a")()).To(Succeed())
			v, m := volumeOf(sts, "tls")
			g.Expect(v).To(BeNil())
			g.Expect(m).To(BeNil())
			g.Expect(get(cm, ns, "rmq-broker-a-config")()).To(Succeed())
			g.Expect(cm.Data["rmq-broker-a-0.conf"]).NotTo(ContainSubstring("tls."))
			g.Expect(get(br, ns, "rmq")()).To(Succeed())
			g.Expect(condition(br.Status.Conditions, v1alpha1.ConditionTLS)).To(BeNil())
		}).Should(Succeed())
	})

	It("mounts a NameServer's Secret and renders its tls.server.* keys", func() {
		ns := newNamespace()
		n := newNameServer(ns, "names")
		n.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "names-tls", ClientAuth: v1alpha1.TLSClientAuthOptional}
		Expect(k8s.Create(ctx, n)).To(Succeed())
		sts := &appsv1.StatefulSet{}
		Eventually(get(sts, ns, "names")).Should(Succeed())
		v, m := volumeOf(sts, "tls")
		Expect(v).NotTo(BeNil())
		Expect(v.Secret.SecretName).To(Equal("names-tls"))
		Expect(m.MountPath).To(Equal(res.TLSDir))
		cm := &corev1.ConfigMap{}
		Expect(get(cm, ns, res.NameServerConfigMapName(n))()).To(Succeed())
		Expect(cm.Data["namesrv.conf"]).To(And(ContainSubstring("tls.server.mode=enforcing\n"),
			ContainSubstring("tls.server.need.client.auth=optional\n"), Not(ContainSubstring("tls.enable"))))
	})

	DescribeTable("refuses invalid TLS specs",
		func(mutate func(*v1alpha1.Broker), msg string) {
			br := newBroker(newNamespace(), "bad")
			mutate(br)
			Expect(k8s.Create(ctx, br)).To(MatchError(ContainSubstring(msg)))
		},
		Entry("tls.* in spec.config with spec.tls", func(b *v1alpha1.Broker) {
			b.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "rmq-tls"}
			b.Spec.Config["tls.server.mode"] = "disabled"
		}, "with spec.tls, config must not set tls.* keys or useTLS"),
		Entry("a secretName that is no Secret name", func(b *v1alpha1.Broker) {
			b.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "Rmq_TLS"}
		}, "tls.secretName must be the name of a Secret"),
		Entry("an unknown mode", func(b *v1alpha1.Broker) {
			b.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "rmq-tls", Mode: "Strict"}
		}, "spec.tls.mode"),
	)
})
