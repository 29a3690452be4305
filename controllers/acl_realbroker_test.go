package controllers

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	brokerconfig "github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/internal/testcluster"
	rmqadmin "github.com/openrmq/rocketmq-operator/pkg/admin"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// loopbackACL is the loopback broker's plain_acl.yml: the operator's admin account, and an
// application account that may not administer.
const loopbackACL = `
accounts:
- accessKey: rmq-operator
  secretKey: operator-secret-key
  admin: true
- accessKey: application
  secretKey: application-secret
  defaultGroupPerm: SUB
`

func secret(ns, name string, data map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
}

// condition returns a condition of the object's current status, or nil.
func condition(conds []metav1.Condition, t string) *metav1.Condition {
	return meta.FindStatusCondition(conds, t)
}

var _ = Describe("ConsumerGroup against a loopback broker with ACL", func() {
	It("signs the operator's calls with spec.acl's credentials, re-read when the Secret changes; unsigned calls are refused", func() {
		lc := startLoopbackCluster(func(bc *brokerconfig.Config) {
			testcluster.EnableACL(GinkgoT(), bc, loopbackACL)
		})
		creds := rmqadmin.Credentials{AccessKey: "rmq-operator", SecretKey: "operator-secret-key"}
		signed := lc.admin.WithCredentials(creds)
		DeferCleanup(signed.Close)
		call := func() context.Context {
			c, cancel := context.WithTimeout(ctx, 10*time.Second)
			DeferCleanup(cancel)
			return c
		}
		// The production admin, unsigned, is refused by the broker; signed it is not.
		Expect(lc.admin.CreateOrUpdateSubscriptionGroup(call(), lc.brokerAddr, protocol.NewSubscriptionGroupConfig("probe"))).
			To(MatchError(ContainSubstring("No accessKey is configured")))
		Expect(signed.CreateOrUpdateSubscriptionGroup(call(), lc.brokerAddr, protocol.NewSubscriptionGroupConfig("probe"))).
			To(Succeed())

		ns := newNamespace()
		resolve := lc.resolver()
		// Two Broker resources for the same loopback broker: one names operator
		// credentials, the other does not. Calls start from the unsigned RemotingAdmin.
		for _, name := range []string{"with-creds", "no-creds"} {
			DeferCleanup(edge.route(client.ObjectKey{Namespace: ns, Name: name}, resolve,
				RemotingAdmin{C: lc.admin}, lc.brokerAddr))
		}
		Expect(k8s.Create(ctx, secret(ns, "rmq-acl", map[string]string{"plain_acl.yml": loopbackACL}))).To(Succeed())
		opSecret := secret(ns, "rmq-operator", map[string]string{"accessKey": creds.AccessKey, "secretKey": creds.SecretKey})
		Expect(k8s.Create(ctx, opSecret)).To(Succeed())
		for name, credsSecret := range map[string]string{"with-creds": "rmq-operator", "no-creds": ""} {
			br := newBroker(ns, name)
			br.Spec.NameServerRef, br.Spec.NameServerAddresses = nil, []string{lc.nsAddr}
			br.Spec.Groups, br.Spec.ReplicasPerGroup = 1, 1
			br.Spec.ACL = &v1alpha1.BrokerACL{SecretName: "rmq-acl", OperatorCredentialsSecretName: credsSecret}
			Expect(k8s.Create(ctx, br)).To(Succeed())
		}

		By("signed: the group is created on the broker")
		good := "acl-signed-" + ns
		cg := newGroup(ns, good)
		cg.Spec.BrokerRef.Name = "with-creds"
		Expect(k8s.Create(ctx, cg)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, good)()).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(cg.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "%v", cg.Status.Conditions)
			g.Expect(cg.Status.Brokers).To(Equal([]string{lc.brokerName}))
		}, "30s").Should(Succeed())
		groups, err := signed.SubscriptionGroups(call(), lc.brokerAddr)
		Expect(err).NotTo(HaveOccurred())
		Expect(groups).To(HaveKey(good))

		By("unsigned: the broker refuses, and the group says why")
		bad := "acl-unsigned-" + ns
		ucg := newGroup(ns, bad)
		ucg.Spec.BrokerRef.Name = "no-creds"
		Expect(k8s.Create(ctx, ucg)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(ucg, ns, bad)()).To(Succeed())
			d := condition(ucg.Status.Conditions, v1alpha1.ConditionDegraded)
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(d.Reason).To(Equal("SubscriptionGroupFailed"))
			g.Expect(d.Message).To(And(ContainSubstring("No accessKey is configured"),
				ContainSubstring("the call was unsigned"), ContainSubstring("operatorCredentialsSecretName is not set")))
		}, "30s").Should(Succeed())
		groups, err = signed.SubscriptionGroups(call(), lc.brokerAddr)
		Expect(err).NotTo(HaveOccurred())
		Expect(groups).NotTo(HaveKey(bad))
		Eventually(func(g Gomega) {
			br := &v1alpha1.Broker{}
			g.Expect(get(br, ns, "no-creds")()).To(Succeed())
			c := condition(br.Status.Conditions, v1alpha1.ConditionAdminAccess)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(ReasonCredentialsNotSet))
			g.Expect(get(br, ns, "with-creds")()).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(br.Status.Conditions, v1alpha1.ConditionAdminAccess)).To(BeTrue())
		}).Should(Succeed())

		By("a wrong secret key in the Secret is used at once, and refused")
		Eventually(update(opSecret, func() { opSecret.StringData = map[string]string{"secretKey": "not-the-secret"} })).Should(Succeed())
		// The group refreshes its lag every second through the Broker's signing admin.
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, good)()).To(Succeed())
			d := condition(cg.Status.Conditions, v1alpha1.ConditionDegraded)
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(d.Message).To(ContainSubstring("Check signature failed for accessKey=rmq-operator"))
		}, "30s").Should(Succeed())

		By("the fixed Secret applies without touching the Broker, and a spec change reaches the broker")
		Eventually(update(cg, func() { cg.Spec.RetryMaxTimes = ptr.To[int32](5) })).Should(Succeed())
		gen := cg.Generation
		Eventually(update(opSecret, func() { opSecret.StringData = map[string]string{"secretKey": creds.SecretKey} })).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, good)()).To(Succeed())
			g.Expect(cg.Status.ObservedGeneration).To(Equal(gen))
			g.Expect(meta.IsStatusConditionTrue(cg.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "%v", cg.Status.Conditions)
		}, "30s").Should(Succeed())
		groups, err = signed.SubscriptionGroups(call(), lc.brokerAddr)
		Expect(err).NotTo(HaveOccurred())
		Expect(groups[good].RetryMaxTimes).To(Equal(5))
	})
})
