package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	res "github.com/openrmq/rocketmq-operator/internal/resource"
)

func newUser(ns, name, accessKey, secretName string) *v1alpha1.User {
	return &v1alpha1.User{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.UserSpec{BrokerRef: v1alpha1.LocalObjectReference{Name: "rmq"}, AccessKey: accessKey,
			SecretKeyRef: v1alpha1.SecretKeyReference{Name: secretName}},
	}
}

// renderedACL reads the plain_acl.yml the operator rendered for Broker rmq.
func renderedACL(g Gomega, ns string) res.PlainACL {
	s := &corev1.Secret{}
	g.Expect(get(s, ns, "rmq-users-acl")()).To(Succeed())
	f, err := res.ParsePlainACL(s.Data["plain_acl.yml"])
	g.Expect(err).NotTo(HaveOccurred())
	return f
}

// accessKeys lists the accounts of a file in its order.
func accessKeys(f res.PlainACL) []string {
	var out []string
	for _, a := range f.Accounts {
		out = append(out, a.AccessKey)
	}
	return out
}

// userReason waits until the User's Ready condition has reason and returns its message.
func userReason(u *v1alpha1.User, reason string) string {
	GinkgoHelper()
	var msg string
	Eventually(func(g Gomega) {
		g.Expect(get(u, u.Namespace, u.Name)()).To(Succeed())
		c := condition(u.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(reason), c.Message)
		msg = c.Message
	}).Should(Succeed())
	return msg
}

// usersBroker creates Broker rmq in ns with spec.acl: {} (the operator renders Users).
func usersBroker(ns string) *v1alpha1.Broker {
	GinkgoHelper()
	br := newBroker(ns, "rmq")
	br.Spec.NameServerRef, br.Spec.NameServerAddresses = nil, []string{ns + "-ns.example:9876"}
	br.Spec.Groups = 1
	br.Spec.ACL = &v1alpha1.BrokerACL{}
	Expect(k8s.Create(ctx, br)).To(Succeed())
	return br
}

var _ = Describe("User", func() {
	It("renders a Broker's Users into the plain_acl.yml it mounts, and reports each as the brokers take it", func() {
		ns := newNamespace()
		usersBroker(ns)
		sts := &appsv1.StatefulSet{}
		Eventually(get(sts, ns, "rmq-broker-a")).Should(Succeed())
		v, _ := aclVolumeOf(sts)
		Expect(v).NotTo(BeNil())
		Expect(v.Secret.SecretName).To(Equal("rmq-users-acl"))

		By("the operator's own admin account, made once, is the file's first account")
		op := &corev1.Secret{}
		Eventually(get(op, ns, "rmq-operator-credentials")).Should(Succeed())
		Expect(string(op.Data["accessKey"])).To(Equal("rocketmq-operator"))
		Expect(len(op.Data["secretKey"])).To(BeNumerically(">=", 16))
		Eventually(func(g Gomega) {
			f := renderedACL(g, ns)
			g.Expect(f.Accounts).To(Equal([]res.ACLAccount{{AccessKey: "rocketmq-operator", SecretKey: string(op.Data["secretKey"]), Admin: true}}))
		}).Should(Succeed())

		By("a User with its Secret: in the file, and Ready once every broker accepts it")
		Expect(k8s.Create(ctx, secret(ns, "billing", map[string]string{"secretKey": "billing-secret-1"}))).To(Succeed())
		u := newUser(ns, "billing", "billing-app-"+ns, "billing")
		u.Spec.DefaultTopicPerm, u.Spec.TopicPerms, u.Spec.GroupPerms = "DENY", []string{"orders=PUB|SUB"}, []string{"billing=SUB"}
		Expect(k8s.Create(ctx, u)).To(Succeed())
		Expect(u.Spec.SecretKeyRef.Key).To(Equal("secretKey"), "defaulted")
		Eventually(func(g Gomega) {
			f := renderedACL(g, ns)
			g.Expect(f.Accounts).To(HaveLen(2))
			g.Expect(f.Accounts[1]).To(Equal(res.ACLAccount{AccessKey: u.Spec.AccessKey, SecretKey: "billing-secret-1",
				DefaultTopicPerm: "DENY", TopicPerms: []string{"orders=PUB|SUB"}, GroupPerms: []string{"billing=SUB"}}))
		}).Should(Succeed())
		Expect(userReason(u, v1alpha1.UserReasonNotLoaded)).To(ContainSubstring("No acl config for " + u.Spec.AccessKey))
		Expect(u.Status.Loaded).To(Equal("0/2"))
		admin.accept(u.Spec.AccessKey, "billing-secret-1")
		Expect(userReason(u, v1alpha1.UserReasonLoaded)).To(ContainSubstring("every broker (2) accepts"))
		Expect(u.Status.Loaded).To(Equal("2/2"))
		Expect(u.Status.AccessKey).To(Equal(u.Spec.AccessKey))
		Expect(eventReasons(ns, "rmq")).To(ContainElements("OperatorAccountCreated", "ACLRendered"))

		By("a new secret key reaches the file; the User waits for the brokers")
		s := &corev1.Secret{}
		Expect(get(s, ns, "billing")()).To(Succeed())
		Eventually(update(s, func() { s.StringData = map[string]string{"secretKey": "billing-secret-2"} })).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(renderedACL(g, ns).Accounts[1].SecretKey).To(Equal("billing-secret-2"))
		}).Should(Succeed())
		Expect(userReason(u, v1alpha1.UserReasonNotLoaded)).To(ContainSubstring("Check signature failed"))
		admin.accept(u.Spec.AccessKey, "billing-secret-2")
		userReason(u, v1alpha1.UserReasonLoaded)

		By("a duplicate accessKey, the operator's accessKey and an account the brokers cannot parse stay out")
		dup := newUser(ns, "copycat", u.Spec.AccessKey, "billing")
		Expect(k8s.Create(ctx, dup)).To(Succeed())
		Expect(userReason(dup, v1alpha1.UserReasonDuplicate)).To(ContainSubstring(`User "billing", older, has accessKey`))
		reserved := newUser(ns, "sneaky", "rocketmq-operator", "billing")
		Expect(k8s.Create(ctx, reserved)).To(Succeed())
		Expect(userReason(reserved, v1alpha1.UserReasonReserved)).To(ContainSubstring("the operator's own admin account"))
		bad := newUser(ns, "bad-address", "bad-address-app", "billing")
		bad.Spec.WhiteRemoteAddress = "10.0.0"
		Expect(k8s.Create(ctx, bad)).To(Succeed())
		Expect(userReason(bad, v1alpha1.UserReasonInvalid)).To(ContainSubstring(`"10.0.0" is not an IP address`))
		short := newUser(ns, "short-key", "short-key-app", "short")
		Expect(k8s.Create(ctx, secret(ns, "short", map[string]string{"secretKey": "123456"}))).To(Succeed())
		Expect(k8s.Create(ctx, short)).To(Succeed())
		Expect(userReason(short, v1alpha1.UserReasonSecretKeyBad)).To(ContainSubstring("fewer than 7"))
		nokey := newUser(ns, "no-key", "no-key-app", "billing")
		nokey.Spec.SecretKeyRef.Key = "other"
		Expect(k8s.Create(ctx, nokey)).To(Succeed())
		Expect(userReason(nokey, v1alpha1.UserReasonSecretKeyBad)).To(ContainSubstring(`has no key "other"`))
		// A valid User created after them is rendered in a pass that saw them all (the
		// cache receives Users in order): once it is in the file, theirs are known absent.
		last := newUser(ns, "last", "last-app-"+ns, "billing")
		Expect(k8s.Create(ctx, last)).To(Succeed())
		var keys []string
		Eventually(func(g Gomega) {
			keys = accessKeys(renderedACL(g, ns))
			g.Expect(keys).To(ContainElement(last.Spec.AccessKey))
		}).Should(Succeed())
		Expect(keys).To(Equal([]string{"rocketmq-operator", u.Spec.AccessKey, last.Spec.AccessKey}))
		Expect(k8s.Delete(ctx, last)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(accessKeys(renderedACL(g, ns))).To(Equal([]string{"rocketmq-operator", u.Spec.AccessKey}))
		}).Should(Succeed())

		By("the Secret goes: the User says so, and its account stays in the file")
		Expect(k8s.Delete(ctx, s)).To(Succeed())
		Expect(userReason(u, v1alpha1.UserReasonSecretNotFound)).To(And(ContainSubstring(`Secret "billing" (spec.secretKeyRef) not found`),
			ContainSubstring("stays in plain_acl.yml")))
		Eventually(func(g Gomega) {
			f := renderedACL(g, ns)
			g.Expect(accessKeys(f)).To(Equal([]string{"rocketmq-operator", u.Spec.AccessKey}))
			g.Expect(f.Accounts[1].SecretKey).To(Equal("billing-secret-2"))
		}).Should(Succeed())

		By("the User goes: so does its account; the duplicate takes over once it has a Secret")
		Expect(k8s.Delete(ctx, u)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(accessKeys(renderedACL(g, ns))).To(Equal([]string{"rocketmq-operator"}))
		}).Should(Succeed())
		Expect(userReason(dup, v1alpha1.UserReasonSecretNotFound)).To(ContainSubstring(`Secret "billing"`))
		Expect(k8s.Create(ctx, secret(ns, "billing", map[string]string{"secretKey": "copycat-secret"}))).To(Succeed())
		Eventually(func(g Gomega) {
			f := renderedACL(g, ns)
			g.Expect(accessKeys(f)).To(Equal([]string{"rocketmq-operator", dup.Spec.AccessKey}))
			g.Expect(f.Accounts[1].SecretKey).To(Equal("copycat-secret"))
		}).Should(Succeed())

		By("a file edited by hand is rendered again")
		acl := &corev1.Secret{}
		Expect(get(acl, ns, "rmq-users-acl")()).To(Succeed())
		Eventually(update(acl, func() { acl.Data = map[string][]byte{"plain_acl.yml": []byte("accounts: []\n")} })).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(accessKeys(renderedACL(g, ns))).To(Equal([]string{"rocketmq-operator", dup.Spec.AccessKey}))
		}).Should(Succeed())
	})

	It("says why a User is not applied: no Broker, no ACL, or an ACL file from a Secret", func() {
		ns := newNamespace()
		Expect(k8s.Create(ctx, secret(ns, "app", map[string]string{"secretKey": "app-secret-key"}))).To(Succeed())
		u := newUser(ns, "app", "app-account", "app")
		Expect(k8s.Create(ctx, u)).To(Succeed())
		Expect(userReason(u, v1alpha1.UserReasonBrokerNotFound)).To(ContainSubstring(`Broker "rmq" not found`))
		br := newBroker(ns, "rmq")
		br.Spec.NameServerRef, br.Spec.NameServerAddresses = nil, []string{ns + "-ns.example:9876"}
		Expect(k8s.Create(ctx, br)).To(Succeed())
		Expect(userReason(u, v1alpha1.UserReasonACLNotEnabled)).To(ContainSubstring("set spec.acl: {}"))
		Eventually(update(br, func() { br.Spec.ACL = &v1alpha1.BrokerACL{SecretName: "mine"} })).Should(Succeed())
		Expect(userReason(u, v1alpha1.UserReasonACLFromSecret)).To(ContainSubstring(`Secret "mine" (spec.acl.secretName)`))
		Expect(get(&corev1.Secret{}, ns, "rmq-users-acl")()).To(MatchError(ContainSubstring("not found")),
			"nothing is rendered while the file is the user's")
	})

	It("leaves a Secret of the rendered file's name alone when it is not the operator's", func() {
		ns := newNamespace()
		Expect(k8s.Create(ctx, secret(ns, "rmq-users-acl", map[string]string{"plain_acl.yml": "accounts: []"}))).To(Succeed())
		br := usersBroker(ns)
		Eventually(func(g Gomega) {
			g.Expect(get(br, ns, "rmq")()).To(Succeed())
			d := condition(br.Status.Conditions, v1alpha1.ConditionDegraded)
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.Reason).To(Equal("ACLFileFailed"))
			g.Expect(d.Message).To(ContainSubstring(`Secret "rmq-users-acl" exists and is not the operator's`))
		}).Should(Succeed())
		s := &corev1.Secret{}
		Expect(get(s, ns, "rmq-users-acl")()).To(Succeed())
		Expect(string(s.Data["plain_acl.yml"])).To(Equal("accounts: []"))
	})

	DescribeTable("refuses invalid specs",
		func(mutate func(*v1alpha1.User), msg string) {
			u := newUser(newNamespace(), "bad", "valid-key", "s")
			mutate(u)
			Expect(k8s.Create(ctx, u)).To(MatchError(ContainSubstring(msg)))
		},
		Entry("a short accessKey", func(u *v1alpha1.User) { u.Spec.AccessKey = "short" }, "spec.accessKey"),
		Entry("an accessKey with a space", func(u *v1alpha1.User) { u.Spec.AccessKey = "has space" }, "spec.accessKey"),
		Entry("a permission that is none", func(u *v1alpha1.User) { u.Spec.DefaultTopicPerm = "ALL" }, "spec.defaultTopicPerm"),
		Entry("a topic permission without =", func(u *v1alpha1.User) { u.Spec.TopicPerms = []string{"orders"} }, "spec.topicPerms[0]"),
		Entry("a group permission with spaces", func(u *v1alpha1.User) { u.Spec.GroupPerms = []string{"g=PUB | SUB"} }, "spec.groupPerms[0]"),
		Entry("a Secret name that is none", func(u *v1alpha1.User) { u.Spec.SecretKeyRef.Name = "Bad_Name" }, "secretKeyRef.name must be the name of a Secret"),
		Entry("a white address with a CIDR", func(u *v1alpha1.User) { u.Spec.WhiteRemoteAddress = "10.0.0.0/8" }, "spec.whiteRemoteAddress"),
	)
})
