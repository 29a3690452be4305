package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	brokerconfig "github.com/openrmq/rocketmq-operator/broker/config"
	rmqadmin "github.com/openrmq/rocketmq-operator/pkg/admin"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// call is a context for one admin call of a test.
func call() context.Context {
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	DeferCleanup(cancel)
	return c
}

// topicOn reads a topic's config from a loopback broker; ok is false when it has none.
func topicOn(a *rmqadmin.Client, addr, topic string) (protocol.TopicConfig, bool) {
	GinkgoHelper()
	table, err := a.TopicConfigs(call(), addr)
	Expect(err).NotTo(HaveOccurred())
	tc := table.TopicConfigTable[topic]
	if tc == nil {
		return protocol.TopicConfig{}, false
	}
	return *tc, true
}

// routeQueues reads brokerName's share of a topic's route from a name server; nil when
// it routes none.
func routeQueues(a *rmqadmin.Client, nsAddr, topic, brokerName string) *protocol.QueueData {
	GinkgoHelper()
	rd, err := a.TopicRoute(call(), nsAddr, topic)
	if errors.Is(err, rmqadmin.ErrNoRoute) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	return routeOf(rd, brokerName)
}

func routeOf(rd *protocol.TopicRouteData, brokerName string) *protocol.QueueData {
	for _, q := range rd.QueueDatas {
		if q.BrokerName == brokerName {
			return q
		}
	}
	return nil
}

// loopbackBroker creates a one-group Broker resource whose name servers are the loopback
// one (mutate, when not nil, changes it further), and routes the controllers' calls for it
// (to the broker, the name server and the extra addresses) to lc.
func loopbackBroker(lc *loopbackCluster, ns string, resolve BrokerResolver, mutate func(*v1alpha1.Broker), extra ...string) *v1alpha1.Broker {
	GinkgoHelper()
	DeferCleanup(edge.route(client.ObjectKey{Namespace: ns, Name: "rmq"}, resolve,
		RemotingAdmin{C: lc.admin}, append([]string{lc.brokerAddr, lc.nsAddr}, extra...)...))
	br := newBroker(ns, "rmq")
	br.Spec.NameServerRef, br.Spec.NameServerAddresses = nil, []string{lc.nsAddr}
	br.Spec.Groups, br.Spec.ReplicasPerGroup = 1, 1
	br.Spec.ClusterName = lc.cluster
	if mutate != nil {
		mutate(br)
	}
	Expect(k8s.Create(ctx, br)).To(Succeed())
	return br
}

// goProducer starts the official Go client's producer on the loopback name server.
func goProducer(nsAddr string, opts ...producer.Option) rocketmq.Producer {
	GinkgoHelper()
	rlog.SetLogLevel("error")
	p, err := rocketmq.NewProducer(append([]producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{nsAddr})),
		producer.WithGroupName(fmt.Sprintf("topic-producer-%d", time.Now().UnixNano())),
		producer.WithInstanceName(fmt.Sprintf("topic-producer-%d", time.Now().UnixNano())),
		producer.WithRetry(0),
		producer.WithSendMsgTimeout(10 * time.Second),
	}, opts...)...)
	Expect(err).NotTo(HaveOccurred())
	Expect(p.Start()).To(Succeed())
	DeferCleanup(p.Shutdown)
	return p
}

var _ = Describe("Topic against a loopback name server and broker", func() {
	It("creates, grows, repairs and deletes the topic, and the official Go client sends to it with auto-creation off", func() {
		lc := startLoopbackCluster()
		ns := newNamespace()
		loopbackBroker(lc, ns, lc.resolver(), nil)
		const topic = "RealTopicOrders"
		t := newTopic(ns, "orders")
		t.Spec.TopicName, t.Spec.Queues, t.Spec.DeletionPolicy = topic, ptr.To[int32](4), v1alpha1.DeletionDelete
		Expect(k8s.Create(ctx, t)).To(Succeed())
		topicReady(t)
		Expect(t.Status.Groups).To(HaveLen(1))
		Expect(t.Status.Groups[0].BrokerName).To(Equal(lc.brokerName))
		Expect(t.Status.Groups[0].Route).To(Equal(&v1alpha1.TopicQueues{ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}))
		tc, ok := topicOn(lc.admin, lc.brokerAddr, topic)
		Expect(ok).To(BeTrue())
		Expect(tc).To(Equal(protocol.TopicConfig{TopicName: topic, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"}))

		By("the official Go client sends to it; a topic no resource made is refused (auto-creation is off)")
		p := goProducer(lc.nsAddr)
		for i := range 5 {
			res, err := p.SendSync(call(), primitive.NewMessage(topic, fmt.Appendf(nil, "m%d", i)))
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Status).To(Equal(primitive.SendOK))
		}
		_, err := p.SendSync(call(), primitive.NewMessage("RealTopicNobodyMade", []byte("x")))
		Expect(err).To(HaveOccurred())
		Eventually(func(g Gomega) {
			g.Expect(get(t, ns, "orders")()).To(Succeed())
			g.Expect(t.Status.Messages).To(Equal(int64(5)))
		}).Should(Succeed())

		By("grow: the broker and the route get the new queues")
		Eventually(update(t, func() { t.Spec.Queues = ptr.To[int32](8) })).Should(Succeed())
		topicReady(t)
		tc, _ = topicOn(lc.admin, lc.brokerAddr, topic)
		Expect(tc.ReadQueueNums).To(Equal(8))
		Expect(routeQueues(lc.admin, lc.nsAddr, topic, lc.brokerName).WriteQueueNums).To(Equal(8))

		By("drift: deleted from the broker with the admin API, the topic comes back")
		Expect(lc.admin.DeleteTopicInBroker(call(), lc.brokerAddr, topic)).To(Succeed())
		Eventually(func() bool { _, ok := topicOn(lc.admin, lc.brokerAddr, topic); return ok }).Should(BeTrue())
		Eventually(func() []string { return eventReasons(ns, "orders") }).Should(ContainElement("TopicRecreated"))

		By("drift: the route deleted from the name server comes back")
		Expect(lc.admin.DeleteTopicInNameServer(call(), lc.nsAddr, topic, "")).To(Succeed())
		Eventually(func() *protocol.QueueData { return routeQueues(lc.admin, lc.nsAddr, topic, lc.brokerName) }).
			Should(HaveField("WriteQueueNums", 8))
		Eventually(func() []string { return eventReasons(ns, "orders") }).Should(ContainElement("RouteRepaired"))

		By("drift: changed with mqadmin's call, the topic is put back")
		Expect(lc.admin.CreateOrUpdateTopic(call(), lc.brokerAddr, protocol.TopicConfig{TopicName: topic,
			ReadQueueNums: 8, WriteQueueNums: 8, Perm: 4})).To(Succeed())
		Eventually(func() int { tc, _ := topicOn(lc.admin, lc.brokerAddr, topic); return tc.Perm }).Should(Equal(6))
		Eventually(func() []string { return eventReasons(ns, "orders") }).Should(ContainElement("TopicRepaired"))
		res, err := p.SendSync(call(), primitive.NewMessage(topic, []byte("after repair")))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Status).To(Equal(primitive.SendOK))

		By("ordered: the name server keeps the queues, and gets them back when they are deleted")
		Eventually(update(t, func() { t.Spec.Order = true })).Should(Succeed())
		topicReady(t)
		kv := func() string {
			v, _, err := lc.admin.KVConfig(call(), lc.nsAddr, NamespaceOrderTopicConfig, topic)
			Expect(err).NotTo(HaveOccurred())
			return v
		}
		Expect(kv()).To(Equal(lc.brokerName + ":8"))
		Expect(lc.admin.DeleteKVConfig(call(), lc.nsAddr, NamespaceOrderTopicConfig, topic)).To(Succeed())
		Eventually(kv).Should(Equal(lc.brokerName + ":8"))

		By("deletionPolicy Delete: gone from the broker, the route and the KV store")
		Expect(k8s.Delete(ctx, t)).To(Succeed())
		Eventually(get(t, ns, "orders")).Should(MatchError(ContainSubstring("not found")))
		_, ok = topicOn(lc.admin, lc.brokerAddr, topic)
		Expect(ok).To(BeFalse())
		Expect(routeQueues(lc.admin, lc.nsAddr, topic, lc.brokerName)).To(BeNil())
		Expect(kv()).To(BeEmpty())
		Expect(eventReasons(ns, "orders")).To(ContainElements("TopicDeleted", "RouteDeleted"))
	})

	It("puts the topic on a group added later before the Broker reports Ready", func() {
		lc := startLoopbackCluster()
		ns := newNamespace()
		// Masters as the name server knows them, for the groups the Broker's status lists;
		// a group whose broker has not registered yet gets an address nothing listens on,
		// as a pod's address before its broker starts.
		resolve := ResolverFunc(func(c context.Context, b *v1alpha1.Broker) (map[string]string, error) {
			registered, err := lc.admin.MasterAddrs(c, lc.nsAddr, lc.cluster)
			if err != nil {
				return nil, err
			}
			out := map[string]string{}
			for _, g := range b.Status.Groups {
				out[g.BrokerName] = "127.0.0.1:1"
				if addr, ok := registered[g.BrokerName]; ok {
					out[g.BrokerName] = addr
				}
			}
			return out, nil
		})
		// broker-b's port is only known once it runs: route every call not to the fake.
		br := loopbackBroker(lc, ns, resolve, nil, "127.0.0.1:1")
		runPods(br)
		Eventually(func(g Gomega) {
			g.Expect(get(br, ns, "rmq")()).To(Succeed())
			g.Expect(condition(br.Status.Conditions, v1alpha1.ConditionReady)).To(HaveField("Status", metav1.ConditionTrue))
		}).Should(Succeed())
		const topic = "RealScaledTopic"
		t := newTopic(ns, "scaled")
		t.Spec.TopicName = topic
		Expect(k8s.Create(ctx, t)).To(Succeed())
		topicReady(t)

		By("scale out: broker-b's pods are ready, its broker not yet running: the Broker waits for the topic")
		Eventually(update(br, func() { br.Spec.Groups = 2 })).Should(Succeed())
		runGroupPods(br, 1)
		Eventually(func(g Gomega) {
			g.Expect(get(br, ns, "rmq")()).To(Succeed())
			g.Expect(br.Status.ReadySummary).To(Equal("2/2"))
			c := condition(br.Status.Conditions, v1alpha1.ConditionReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(ReasonTopicsPending))
			g.Expect(c.Message).To(ContainSubstring("broker-b lacks topic(s) " + topic))
		}).Should(Succeed())
		Expect(topicCondition(t, v1alpha1.ConditionDegraded, "TopicFailed")).To(ContainSubstring("broker-b"))

		By("broker-b starts: the Topic puts the topic there, then the Broker is Ready")
		b := lc.c.AddBroker(GinkgoT(), "broker-b", func(bc *brokerconfig.Config) { bc.AutoCreateTopicEnable = false })
		DeferCleanup(edge.route(client.ObjectKey{Namespace: ns, Name: "rmq"}, resolve, RemotingAdmin{C: lc.admin}, b.Addr))
		Eventually(func(g Gomega) {
			g.Expect(get(br, ns, "rmq")()).To(Succeed())
			g.Expect(condition(br.Status.Conditions, v1alpha1.ConditionReady)).To(HaveField("Status", metav1.ConditionTrue))
		}, "30s").Should(Succeed())
		// Ready waited for the Topic to list broker-b, which it does once broker-b holds it.
		tc, ok := topicOn(lc.admin, b.Addr, topic)
		Expect(ok).To(BeTrue(), "the Broker was Ready before broker-b held the topic")
		Expect(tc.WriteQueueNums).To(Equal(8))
		topicReady(t)
		Expect(groupNames(t.Status.Groups)).To(Equal([]string{"broker-a", "broker-b"}))
		Eventually(func() *protocol.QueueData { return routeQueues(lc.admin, lc.nsAddr, topic, "broker-b") }).ShouldNot(BeNil())
	})
})
