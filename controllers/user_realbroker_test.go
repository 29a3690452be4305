package controllers

import (
	"bytes"
	"errors"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	brokerconfig "github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/internal/testcluster"
	rmqadmin "github.com/openrmq/rocketmq-operator/pkg/admin"
	rmqclient "github.com/openrmq/rocketmq-operator/pkg/client"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// playKubelet copies key of Secret ns/name into file whenever it changes, as the kubelet
// refreshes a mounted Secret, until the spec ends. The broker re-reads the file every 5 s.
func playKubelet(ns, name, key, file string) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer GinkgoRecover()
		defer wg.Done()
		var last []byte
		for {
			s := &corev1.Secret{}
			if err := get(s, ns, name)(); err == nil && !bytes.Equal(s.Data[key], last) {
				last = s.Data[key]
				testcluster.WriteACL(GinkgoT(), file, string(last))
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	DeferCleanup(func() { close(done); wg.Wait() })
}

// signedSend sends one message to queue 0 of topic on the broker, signed as creds, and
// returns the broker's refusal remark ("" when it stored the message).
func signedSend(lc *loopbackCluster, creds rmqadmin.Credentials, topic string) string {
	GinkgoHelper()
	rc := remoting.NewClient(remoting.ClientConfig{BeforeSend: rmqadmin.Signer(creds)})
	defer rc.Close()
	cl := rmqclient.New(rc, lc.nsAddr)
	_, err := cl.Send(call(), rmqclient.MessageQueue{Topic: topic, BrokerName: lc.brokerName, QueueID: 0, Addr: lc.brokerAddr},
		"user-producer", &rmqclient.Message{Topic: topic, Body: []byte("signed")})
	var refused *rmqclient.ResponseError
	if errors.As(err, &refused) {
		return refused.Remark
	}
	Expect(err).NotTo(HaveOccurred())
	return ""
}

var _ = Describe("User against a loopback broker with ACL", func() {
	It("reaches the broker's plain_acl.yml: a signed send is allowed, uses the new key after a change, and is refused after removal", func() {
		var file string
		lc := startLoopbackCluster(func(bc *brokerconfig.Config) {
			file = testcluster.EnableACL(GinkgoT(), bc, "accounts: []\n")
		})
		ns := newNamespace()
		br := loopbackBroker(lc, ns, lc.resolver(), func(br *v1alpha1.Broker) { br.Spec.ACL = &v1alpha1.BrokerACL{} })
		playKubelet(ns, "rmq-users-acl", "plain_acl.yml", file)

		By("the operator signs with the account it made and rendered: a Topic gets created")
		const topic = "RealUserTopic"
		t := newTopic(ns, "user-topic")
		t.Spec.TopicName, t.Spec.Queues = topic, ptr.To[int32](2)
		Expect(k8s.Create(ctx, t)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(t, ns, t.Name)()).To(Succeed())
			g.Expect(condition(t.Status.Conditions, v1alpha1.ConditionReady)).To(HaveField("Reason", "Synced"))
		}, "60s").Should(Succeed())
		adminAccessOf(br, "True", ReasonSigned, "accessKey rocketmq-operator")

		By("a User: the broker accepts sends signed as it once it has loaded the file")
		creds := rmqadmin.Credentials{AccessKey: "billing-app", SecretKey: "billing-secret-1"}
		Expect(k8s.Create(ctx, secret(ns, "billing", map[string]string{"secretKey": creds.SecretKey}))).To(Succeed())
		Expect(signedSend(lc, creds, topic)).To(ContainSubstring("No acl config for billing-app"))
		u := newUser(ns, "billing", creds.AccessKey, "billing")
		u.Spec.DefaultTopicPerm, u.Spec.TopicPerms = "DENY", []string{topic + "=PUB"}
		Expect(k8s.Create(ctx, u)).To(Succeed())
		Eventually(func() string { return signedSend(lc, creds, topic) }, "60s", "500ms").Should(BeEmpty())
		Expect(userReason(u, v1alpha1.UserReasonLoaded)).To(ContainSubstring("every broker (1) accepts"))
		Expect(u.Status.Loaded).To(Equal("1/1"))

		By("its permissions hold: another topic is denied")
		other := "RealUserOther"
		Expect(signedSend(lc, creds, other)).To(ContainSubstring("No default permission for topic:" + other))

		By("a new secret key in the Secret: the old one is refused, the new one accepted")
		s := &corev1.Secret{}
		Expect(get(s, ns, "billing")()).To(Succeed())
		Eventually(update(s, func() { s.StringData = map[string]string{"secretKey": "billing-secret-2"} })).Should(Succeed())
		newCreds := rmqadmin.Credentials{AccessKey: creds.AccessKey, SecretKey: "billing-secret-2"}
		Eventually(func() string { return signedSend(lc, newCreds, topic) }, "60s", "500ms").Should(BeEmpty())
		Expect(signedSend(lc, creds, topic)).To(ContainSubstring("Check signature failed for accessKey=billing-app"))
		userReason(u, v1alpha1.UserReasonLoaded)

		By("the User is deleted: the broker refuses its sends, with its remark")
		Expect(k8s.Delete(ctx, u)).To(Succeed())
		Eventually(func() string { return signedSend(lc, newCreds, topic) }, "60s", "500ms").
			Should(ContainSubstring("org.apache.rocketmq.acl.common.AclException: No acl config for billing-app"))
	})
})
