package controllers

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/pkg/names"
)

func newTopic(ns, name string) *v1alpha1.Topic {
	return &v1alpha1.Topic{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.TopicSpec{BrokerRef: v1alpha1.LocalObjectReference{Name: "rmq"}},
	}
}

// topicReady waits until the Topic is Ready for its current generation and returns it.
func topicReady(t *v1alpha1.Topic) *v1alpha1.Topic {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(get(t, t.Namespace, t.Name)()).To(Succeed())
		c := condition(t.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
		g.Expect(t.Status.ObservedGeneration).To(Equal(t.Generation))
	}).Should(Succeed())
	return t
}

// topicCondition waits until the Topic's condition of type has reason, and returns its message.
func topicCondition(t *v1alpha1.Topic, typ, reason string) string {
	GinkgoHelper()
	var msg string
	Eventually(func(g Gomega) {
		g.Expect(get(t, t.Namespace, t.Name)()).To(Succeed())
		c := condition(t.Status.Conditions, typ)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(reason), c.Message)
		msg = c.Message
	}).Should(Succeed())
	return msg
}

var _ = Describe("Topic", func() {
	It("creates the topic on every master, publishes its route and reports each group", func() {
		ns := newNamespace()
		a, b := brokerWithMasters(ns)
		name := "orders-" + ns
		t := newTopic(ns, name)
		Expect(k8s.Create(ctx, t)).To(Succeed())
		Expect(*t.Spec.Perm).To(Equal(int32(6)), "defaulted")
		Expect(t.Spec.DeletionPolicy).To(Equal(v1alpha1.DeletionRetain), "defaulted")
		topicReady(t)
		Expect(t.Status.TopicName).To(Equal(name))
		Expect(t.Status.Queues).To(Equal("8/8"))
		want := v1alpha1.TopicQueues{ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6}
		Expect(t.Status.Groups).To(Equal([]v1alpha1.TopicGroupStatus{
			{BrokerName: "broker-a", TopicQueues: want, Route: &want, Messages: 80},
			{BrokerName: "broker-b", TopicQueues: want, Route: &want, Messages: 80},
		}))
		Expect(t.Status.Messages).To(Equal(int64(160)), "the fake brokers hold 10 messages in each queue")
		Expect(t.Finalizers).To(BeEmpty(), "deletionPolicy Retain needs no finalizer")
		for _, addr := range []string{a, b} {
			Expect(admin.callsFor("CreateOrUpdateTopic", "Name:"+name+" ")).To(ContainElement(HaveField("Addr", addr)))
		}
		Expect(eventReasons(ns, name)).To(ContainElement("TopicCreated"))
		Expect(admin.callsFor("PutKV", name)).To(BeEmpty(), "not ordered")

		By("queues grow; the route follows")
		Eventually(update(t, func() { t.Spec.Queues = ptr.To[int32](16) })).Should(Succeed())
		topicReady(t)
		Expect(t.Status.Queues).To(Equal("16/16"))
		Expect(t.Status.Groups[1].Route.WriteQueueNums).To(Equal(int32(16)))
		Expect(eventReasons(ns, name)).To(ContainElement("TopicUpdated"))

		By("shrinking is refused, with the reason")
		// A read gone stale (the controller writes status) is a conflict, not the refusal:
		// Eventually retries until the API server refuses the spec itself.
		Eventually(update(t, func() { t.Spec.Queues = ptr.To[int32](4) })).Should(MatchError(And(
			ContainSubstring("readQueueNums cannot shrink"), ContainSubstring("stranded"), ContainSubstring("allowQueueShrink"))))
		Eventually(update(t, func() {
			t.Spec.Queues, t.Spec.ReadQueueNums, t.Spec.WriteQueueNums = nil, ptr.To[int32](16), ptr.To[int32](8)
		})).Should(MatchError(ContainSubstring("writeQueueNums cannot shrink")))

		By("drift: the topic deleted behind the operator's back comes back on the next resync")
		Expect(admin.DeleteTopic(ctx, b, name)).To(Succeed())
		Eventually(func() bool { return admin.hasTopic(b, name) }).Should(BeTrue())
		Eventually(func() []string { return eventReasons(ns, name) }).Should(ContainElement("TopicRecreated"))

		By("drift: a changed topic is put back")
		Expect(admin.CreateOrUpdateTopic(ctx, a, TopicConfig{Name: name, ReadQueueNums: 16, WriteQueueNums: 16, Perm: 4})).To(Succeed())
		Eventually(func() []string { return eventReasons(ns, name) }).Should(ContainElement("TopicRepaired"))
		Eventually(func(g Gomega) {
			tables, err := admin.TopicConfigs(ctx, a)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tables[name].Perm).To(Equal(int32(6)))
		}).Should(Succeed())

		By("drift: queues added behind the operator's back are kept, and the topic says so")
		Expect(admin.CreateOrUpdateTopic(ctx, a, TopicConfig{Name: name, ReadQueueNums: 32, WriteQueueNums: 32, Perm: 6})).To(Succeed())
		Expect(topicCondition(t, v1alpha1.ConditionReady, "QueuesAboveSpec")).To(ContainSubstring("broker-a has 32/32 queues"))
		tables, err := admin.TopicConfigs(ctx, a)
		Expect(err).NotTo(HaveOccurred())
		Expect(tables[name].WriteQueueNums).To(Equal(int32(32)))
		Eventually(update(t, func() { t.Spec.Queues = ptr.To[int32](32) })).Should(Succeed())
		topicReady(t)
	})

	It("keeps an ordered topic's queues in the name servers' KV store", func() {
		ns := newNamespace()
		brokerWithMasters(ns)
		name := "ordered-" + ns
		t := newTopic(ns, name)
		t.Spec.Order, t.Spec.Queues = true, ptr.To[int32](4)
		Expect(k8s.Create(ctx, t)).To(Succeed())
		topicReady(t)
		puts := admin.callsFor("PutKV", "ORDER_TOPIC_CONFIG/"+name+"=broker-a:4;broker-b:4")
		Expect(puts).To(HaveLen(2), "one per name server")
		Expect(admin.callsFor("CreateOrUpdateTopic", "Name:"+name+" ")[0].Args).To(ContainSubstring("Order:true"))

		Eventually(update(t, func() { t.Spec.Order = false })).Should(Succeed())
		topicReady(t)
		Expect(admin.callsFor("DeleteKV", "ORDER_TOPIC_CONFIG/"+name)).To(HaveLen(2))
	})

	It("goes on the selected groups only, and waits for a selected group the Broker lacks", func() {
		ns := newNamespace()
		a, b := brokerWithMasters(ns)
		name := "selected-" + ns
		t := newTopic(ns, name)
		t.Spec.Groups = &v1alpha1.TopicGroupSelector{Names: []string{"broker-b", "broker-c"}}
		Expect(k8s.Create(ctx, t)).To(Succeed())
		Expect(topicCondition(t, v1alpha1.ConditionReady, "GroupsNotFound")).To(ContainSubstring(`Broker "rmq" has no group broker-c`))
		Eventually(func() bool { return admin.hasTopic(b, name) }).Should(BeTrue())
		Expect(admin.hasTopic(a, name)).To(BeFalse())
		Expect(t.Status.Groups).To(HaveLen(1))

		Eventually(update(t, func() { t.Spec.Groups.Names = []string{"broker-b"} })).Should(Succeed())
		topicReady(t)
		Expect(admin.hasTopic(a, name)).To(BeFalse())
	})

	It("deletes the topic from the brokers and the name servers under deletionPolicy Delete", func() {
		ns := newNamespace()
		a, b := brokerWithMasters(ns)
		name := "gone-" + ns
		t := newTopic(ns, name)
		t.Spec.DeletionPolicy, t.Spec.Order = v1alpha1.DeletionDelete, true
		Expect(k8s.Create(ctx, t)).To(Succeed())
		topicReady(t)
		Expect(t.Finalizers).To(ContainElement(TopicFinalizer))
		Expect(k8s.Delete(ctx, t)).To(Succeed())
		Eventually(get(t, ns, name)).Should(MatchError(ContainSubstring("not found")))
		Expect(admin.hasTopic(a, name) || admin.hasTopic(b, name)).To(BeFalse())
		Expect(admin.callsFor("DeleteTopicRoute", "topic="+name+" cluster=DefaultCluster")).To(HaveLen(2))
		Expect(admin.callsFor("DeleteKV", "ORDER_TOPIC_CONFIG/"+name)).To(HaveLen(2))
	})

	It("leaves a topic on the brokers when a Retain Topic is deleted", func() {
		ns := newNamespace()
		a, _ := brokerWithMasters(ns)
		name := "kept-" + ns
		t := newTopic(ns, name)
		Expect(k8s.Create(ctx, t)).To(Succeed())
		topicReady(t)
		Expect(k8s.Delete(ctx, t)).To(Succeed())
		Eventually(get(t, ns, name)).Should(MatchError(ContainSubstring("not found")))
		Expect(admin.hasTopic(a, name)).To(BeTrue())
		Expect(admin.callsFor("DeleteTopic", "topic="+name)).To(BeEmpty())
	})

	It("lets the oldest of two Topics with one name manage it; deleting the other removes nothing", func() {
		ns := newNamespace()
		a, _ := brokerWithMasters(ns)
		name := "dup-" + ns
		first := newTopic(ns, "first")
		first.Spec.TopicName = name
		Expect(k8s.Create(ctx, first)).To(Succeed())
		topicReady(first)
		second := newTopic(ns, "second")
		second.Spec.TopicName, second.Spec.DeletionPolicy, second.Spec.Queues = name, v1alpha1.DeletionDelete, ptr.To[int32](2)
		Expect(k8s.Create(ctx, second)).To(Succeed())
		Expect(topicCondition(second, v1alpha1.ConditionReady, "DuplicateTopic")).To(ContainSubstring(`Topic "first", older, already manages topic ` + name))
		Expect(admin.callsFor("CreateOrUpdateTopic", "Name:"+name+" ReadQueueNums:2 ")).To(BeEmpty())

		Expect(k8s.Delete(ctx, second)).To(Succeed())
		Eventually(get(second, ns, "second")).Should(MatchError(ContainSubstring("not found")))
		Expect(admin.hasTopic(a, name)).To(BeTrue())
		Expect(admin.callsFor("DeleteTopic", "topic="+name)).To(BeEmpty())
		Expect(eventReasons(ns, "second")).To(ContainElement("TopicKept"))
	})

	It("says why while its Broker is missing, and carries on once it exists", func() {
		ns := newNamespace()
		t := newTopic(ns, "early")
		Expect(k8s.Create(ctx, t)).To(Succeed())
		Expect(topicCondition(t, v1alpha1.ConditionReady, "BrokerUnavailable")).To(ContainSubstring(`Broker "rmq" not found`))
		brokerWithMasters(ns)
		topicReady(t)
	})

	It("shows the broker's refusal", func() {
		ns := newNamespace()
		brokerWithMasters(ns)
		admin.setFail("CreateOrUpdateTopic", errString("The topic[broker-a] is conflict with system topic."))
		DeferCleanup(func() { admin.setFail("CreateOrUpdateTopic", nil) })
		t := newTopic(ns, "broker-a")
		Expect(k8s.Create(ctx, t)).To(Succeed())
		Expect(topicCondition(t, v1alpha1.ConditionDegraded, "TopicFailed")).To(ContainSubstring("conflict with system topic"))
		Expect(meta.IsStatusConditionFalse(t.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
	})

	DescribeTable("refuses invalid specs",
		func(mutate func(*v1alpha1.Topic), msg string) {
			t := newTopic(newNamespace(), "bad")
			mutate(t)
			Expect(k8s.Create(ctx, t)).To(MatchError(ContainSubstring(msg)))
		},
		Entry("a name with a dot", func(t *v1alpha1.Topic) { t.Name = "a.b" }, "metadata.name is not a valid RocketMQ topic name"),
		Entry("illegal characters", func(t *v1alpha1.Topic) { t.Spec.TopicName = "a/b" }, "spec.topicName"),
		Entry("too long", func(t *v1alpha1.Topic) { t.Spec.TopicName = strings.Repeat("t", 128) }, "spec.topicName"),
		Entry("RMQ_SYS_", func(t *v1alpha1.Topic) { t.Spec.TopicName = "RMQ_SYS_MINE" }, "topicName must not start with RMQ_SYS_"),
		Entry("rmq_sys_", func(t *v1alpha1.Topic) { t.Spec.TopicName = "rmq_sys_mine" }, "topicName must not start with RMQ_SYS_"),
		Entry("a retry topic", func(t *v1alpha1.Topic) { t.Spec.TopicName = "%RETRY%billing" }, "consumer groups' retry and dead-letter topics"),
		Entry("a DLQ topic", func(t *v1alpha1.Topic) { t.Spec.TopicName = "%DLQ%billing" }, "consumer groups' retry and dead-letter topics"),
		Entry("queues with readQueueNums", func(t *v1alpha1.Topic) {
			t.Spec.Queues, t.Spec.ReadQueueNums = ptr.To[int32](4), ptr.To[int32](4)
		}, "set queues, or readQueueNums and writeQueueNums, not both"),
		Entry("no queues", func(t *v1alpha1.Topic) { t.Spec.Queues = ptr.To[int32](0) }, "spec.queues"),
		Entry("too many queues", func(t *v1alpha1.Topic) { t.Spec.WriteQueueNums = ptr.To[int32](1025) }, "spec.writeQueueNums"),
		Entry("the priority bit", func(t *v1alpha1.Topic) { t.Spec.Perm = ptr.To[int32](8) }, "perm is RocketMQ's bits"),
		Entry("inherit only", func(t *v1alpha1.Topic) { t.Spec.Perm = ptr.To[int32](1) }, "perm is RocketMQ's bits"),
		Entry("a group that is none", func(t *v1alpha1.Topic) {
			t.Spec.Groups = &v1alpha1.TopicGroupSelector{Names: []string{"broker-1"}}
		}, "spec.groups.names[0]"),
		Entry("a bad deletion policy", func(t *v1alpha1.Topic) { t.Spec.DeletionPolicy = "Maybe" }, "spec.deletionPolicy"),
	)

	It("refuses every system topic by name, as pkg/names does", func() {
		ns := newNamespace()
		for i, s := range names.SystemTopics {
			Expect(names.UserTopic(s)).To(MatchError(names.ErrReservedTopic))
			t := newTopic(ns, "sys")
			t.Name = strings.ToLower(strings.ReplaceAll(s, "_", "-")) + "-" + string(rune('a'+i))
			t.Spec.TopicName = s
			Expect(k8s.Create(ctx, t)).To(MatchError(ContainSubstring("topicName "+s+" is a RocketMQ system topic")), s)
		}
	})

	It("refuses changing topicName, brokerRef, and shrinking without allowQueueShrink", func() {
		ns := newNamespace()
		t := newTopic(ns, "t")
		t.Spec.TopicName, t.Spec.ReadQueueNums, t.Spec.WriteQueueNums = "t1", ptr.To[int32](8), ptr.To[int32](8)
		Expect(k8s.Create(ctx, t)).To(Succeed())
		Eventually(update(t, func() { t.Spec.TopicName = "t2" })).Should(MatchError(ContainSubstring("topicName is immutable")))
		Eventually(update(t, func() { t.Spec.TopicName = "" })).Should(MatchError(ContainSubstring("topicName is immutable")))
		Eventually(update(t, func() { t.Spec.BrokerRef.Name = "other" })).Should(MatchError(ContainSubstring("brokerRef is immutable")))
		// queues: 8 is the same count spelled another way.
		Eventually(update(t, func() { t.Spec.ReadQueueNums, t.Spec.WriteQueueNums, t.Spec.Queues = nil, nil, ptr.To[int32](8) })).Should(Succeed())
		Eventually(update(t, func() { t.Spec.Queues = nil })).Should(Succeed(), "unset is 8")
		Eventually(update(t, func() { t.Spec.WriteQueueNums = ptr.To[int32](4) })).Should(MatchError(ContainSubstring("writeQueueNums cannot shrink")))
		Eventually(update(t, func() { t.Spec.WriteQueueNums, t.Spec.AllowQueueShrink = ptr.To[int32](4), true })).Should(Succeed())
	})
})
