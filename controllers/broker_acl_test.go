package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	res "github.com/openrmq/rocketmq-operator/internal/resource"
)

// aclVolumeOf returns the pod template's acl volume and the broker container's mount of it.
func aclVolumeOf(sts *appsv1.StatefulSet) (*corev1.Volume, *corev1.VolumeMount) {
	var v *corev1.Volume
	var m *corev1.VolumeMount
	for i := range sts.Spec.Template.Spec.Volumes {
		if sts.Spec.Template.Spec.Volumes[i].Name == "acl" {
			v = &sts.Spec.Template.Spec.Volumes[i]
		}
	}
	mounts := sts.Spec.Template.Spec.Containers[0].VolumeMounts
	for i := range mounts {
		if mounts[i].Name == "acl" {
			m = &mounts[i]
		}
	}
	return v, m
}

// adminAccessOf waits for the Broker's AdminAccess condition to have reason.
func adminAccessOf(br *v1alpha1.Broker, status metav1.ConditionStatus, reason string, msg ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(get(br, br.Namespace, br.Name)()).To(Succeed())
		c := condition(br.Status.Conditions, v1alpha1.ConditionAdminAccess)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(reason), c.Message)
		g.Expect(c.Status).To(Equal(status))
		for _, m := range msg {
			g.Expect(c.Message).To(ContainSubstring(m))
		}
	}).Should(Succeed())
}

var _ = Describe("Broker with spec.acl", func() {
	It("mounts the ACL Secret, sets the ACL keys and reports how the operator's calls are signed", func() {
		ns := newNamespace()
		br := newBroker(ns, "rmq")
		// Name servers of its own: the recording fake is shared by every spec.
		nsA, nsB := ns+"-a.example:9876", ns+"-b.example:9876"
		br.Spec.NameServerRef, br.Spec.NameServerAddresses = nil, []string{nsA}
		br.Spec.Groups = 1
		br.Spec.ACL = &v1alpha1.BrokerACL{SecretName: "rmq-acl"}
		Expect(k8s.Create(ctx, br)).To(Succeed())
		Expect(br.Spec.ACL.Key).To(Equal("plain_acl.yml"), "defaulted")

		sts := &appsv1.StatefulSet{}
		Eventually(get(sts, ns, "rmq-broker-a")).Should(Succeed())
		v, m := aclVolumeOf(sts)
		Expect(v).NotTo(BeNil())
		Expect(v.Secret).To(Equal(&corev1.SecretVolumeSource{SecretName: "rmq-acl",
			Items:       []corev1.KeyToPath{{Key: "plain_acl.yml", Path: "plain_acl.yml"}},
			DefaultMode: ptr.To[int32](0o444), Optional: ptr.To(false)}))
		Expect(m).To(Equal(&corev1.VolumeMount{Name: "acl", MountPath: "/etc/rocketmq/acl", ReadOnly: true}))
		cm := &corev1.ConfigMap{}
		Expect(get(cm, ns, "rmq-broker-a-config")()).To(Succeed())
		for _, pod := range []string{"rmq-broker-a-0.conf", "rmq-broker-a-1.conf"} {
			Expect(cm.Data[pod]).To(And(ContainSubstring("aclEnable=true\n"),
				ContainSubstring("aclPlainFile=/etc/rocketmq/acl/plain_acl.yml\n")), pod)
		}
		hash := sts.Spec.Template.Annotations[res.ConfigHashAnnotation]
		adminAccessOf(br, metav1.ConditionFalse, ReasonCredentialsNotSet, "white-lists the operator's address")

		By("credentials named but missing: no admin call, and a name-server change waits")
		runPods(br)
		Eventually(func(g Gomega) {
			g.Expect(get(br, ns, "rmq")()).To(Succeed())
			g.Expect(br.Status.NameServerAddress).To(Equal(nsA))
		}).Should(Succeed())
		Eventually(update(br, func() {
			br.Spec.ACL.OperatorCredentialsSecretName = "rmq-operator"
			br.Spec.NameServerAddresses = []string{nsB}
		})).Should(Succeed())
		adminAccessOf(br, metav1.ConditionFalse, ReasonCredentialsSecretNotFound, `Secret "rmq-operator"`)
		Eventually(func(g Gomega) {
			g.Expect(get(br, ns, "rmq")()).To(Succeed())
			d := condition(br.Status.Conditions, v1alpha1.ConditionDegraded)
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.Reason).To(Equal("NameServerPushFailed"))
			g.Expect(d.Message).To(ContainSubstring(`Secret "rmq-operator" (spec.acl.operatorCredentialsSecretName) not found`))
		}).Should(Succeed())
		Expect(admin.callsFor("UpdateBrokerConfig", nsB)).To(BeEmpty())

		By("the Secret appears: the push goes out signed, and the pods do not change")
		op := secret(ns, "rmq-operator", map[string]string{"accessKey": "rmq-operator", "secretKey": "operator-secret"})
		Expect(k8s.Create(ctx, op)).To(Succeed())
		adminAccessOf(br, metav1.ConditionTrue, ReasonSigned, "accessKey rmq-operator")
		Eventually(func(g Gomega) {
			g.Expect(get(br, ns, "rmq")()).To(Succeed())
			g.Expect(br.Status.NameServerAddress).To(Equal(nsB))
		}, "40s").Should(Succeed())
		pushes := admin.callsFor("UpdateBrokerConfig", nsB)
		Expect(pushes).NotTo(BeEmpty())
		for _, c := range pushes {
			Expect(c.As).To(Equal("rmq-operator"), "%+v", c)
		}
		Expect(get(sts, ns, "rmq-broker-a")()).To(Succeed())
		Expect(sts.Spec.Template.Annotations[res.ConfigHashAnnotation]).To(Equal(hash))

		By("a Secret without secretKey")
		Eventually(update(op, func() {
			delete(op.Data, "secretKey")
			op.StringData = nil // left over from Create: decoding a read does not clear it
		})).Should(Succeed())
		adminAccessOf(br, metav1.ConditionFalse, ReasonCredentialsInvalid, "needs non-empty keys accessKey and secretKey")

		By("ACL off: the pods roll without the volume, and the condition goes")
		Eventually(update(br, func() { br.Spec.ACL = nil })).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(sts, ns, "rmq-broker-a")()).To(Succeed())
			g.Expect(sts.Spec.Template.Annotations[res.ConfigHashAnnotation]).NotTo(Equal(hash))
			v, m := aclVolumeOf(sts)
			g.Expect(v).To(BeNil())
			g.Expect(m).To(BeNil())
			g.Expect(get(cm, ns, "rmq-broker-a-config")()).To(Succeed())
			g.Expect(cm.Data["rmq-broker-a-0.conf"]).NotTo(ContainSubstring("acl"))
			g.Expect(get(br, ns, "rmq")()).To(Succeed())
			g.Expect(condition(br.Status.Conditions, v1alpha1.ConditionAdminAccess)).To(BeNil())
		}).Should(Succeed())
	})

	DescribeTable("refuses invalid ACL specs",
		func(mutate func(*v1alpha1.Broker), msg string) {
			br := newBroker(newNamespace(), "bad")
			mutate(br)
			Expect(k8s.Create(ctx, br)).To(MatchError(ContainSubstring(msg)))
		},
		Entry("aclEnable in spec.config", func(b *v1alpha1.Broker) { b.Spec.Config["aclEnable"] = "true" },
			"config must not set aclEnable or aclPlainFile: turn ACL on with spec.acl"),
		Entry("aclPlainFile in spec.config, even with spec.acl", func(b *v1alpha1.Broker) {
			b.Spec.ACL = &v1alpha1.BrokerACL{SecretName: "rmq-acl"}
			b.Spec.Config["aclPlainFile"] = "/tmp/acl.yml"
		}, "config must not set aclEnable or aclPlainFile: turn ACL on with spec.acl"),
		Entry("globalWhiteRemoteAddresses with secretName", func(b *v1alpha1.Broker) {
			b.Spec.ACL = &v1alpha1.BrokerACL{SecretName: "rmq-acl", GlobalWhiteRemoteAddresses: []string{"10.0.0.*"}}
		}, "globalWhiteRemoteAddresses is for the file the operator renders from User resources"),
		Entry("a global white address that is none", func(b *v1alpha1.Broker) {
			b.Spec.ACL = &v1alpha1.BrokerACL{GlobalWhiteRemoteAddresses: []string{"10.0.0.0/8"}}
		}, "spec.acl.globalWhiteRemoteAddresses[0]"),
		Entry("a secretName that is no Secret name", func(b *v1alpha1.Broker) {
			b.Spec.ACL = &v1alpha1.BrokerACL{SecretName: "Rmq_ACL"}
		}, "acl.secretName must be the name of a Secret"),
		Entry("a key climbing out of the mount", func(b *v1alpha1.Broker) {
			b.Spec.ACL = &v1alpha1.BrokerACL{SecretName: "rmq-acl", Key: "../plain_acl.yml"}
		}, "acl.key must be a Secret data key"),
		Entry("an operatorCredentialsSecretName that is no Secret name", func(b *v1alpha1.Broker) {
			b.Spec.ACL = &v1alpha1.BrokerACL{SecretName: "rmq-acl", OperatorCredentialsSecretName: "op/creds"}
		}, "acl.operatorCredentialsSecretName must be the name of a Secret"),
	)
})
