package controllers

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// brokerWithMasters creates a NameServer and a two-group Broker and waits until its status
// lists both masters (the ConsumerGroup controller's StatusResolver reads them there).
func brokerWithMasters(ns string) (masterA, masterB string) {
	Expect(k8s.Create(ctx, newNameServer(ns, "ns"))).To(Succeed())
	br := newBroker(ns, "rmq")
	br.Spec.ReplicasPerGroup = 1
	Expect(k8s.Create(ctx, br)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(get(br, ns, "rmq")()).To(Succeed())
		g.Expect(br.Status.Groups).To(HaveLen(2))
	}).Should(Succeed())
	return br.Status.Groups[0].Master.Address, br.Status.Groups[1].Master.Address
}

func newGroup(ns, name string) *v1alpha1.ConsumerGroup {
	return &v1alpha1.ConsumerGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ConsumerGroupSpec{BrokerRef: v1alpha1.LocalObjectReference{Name: "rmq"}},
	}
}

var _ = Describe("ConsumerGroup", func() {
	It("creates the group on every master and reports lag per topic", func() {
		ns := newNamespace()
		a, b := brokerWithMasters(ns)
		admin.setStats(a, []QueueOffset{
			{Topic: "orders", BrokerName: "broker-a", QueueID: 0, BrokerOffset: 100, ConsumerOffset: 40},
			{Topic: "orders", BrokerName: "broker-a", QueueID: 1, BrokerOffset: 10, ConsumerOffset: 10}})
		admin.setStats(b, []QueueOffset{
			{Topic: "orders", BrokerName: "broker-b", QueueID: 0, BrokerOffset: 7, ConsumerOffset: 2},
			{Topic: "audit", BrokerName: "broker-b", QueueID: 0, BrokerOffset: 3, ConsumerOffset: 0}})
		cg := newGroup(ns, "billing-"+ns)
		Expect(k8s.Create(ctx, cg)).To(Succeed())
		Expect(*cg.Spec.RetryMaxTimes).To(Equal(int32(16)), "defaulted")
		Expect(*cg.Spec.ConsumeFromMinEnable).To(BeTrue(), "defaulted")

		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, cg.Name)()).To(Succeed())
			g.Expect(cg.Status.ObservedGeneration).To(Equal(cg.Generation))
			g.Expect(meta.IsStatusConditionTrue(cg.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
			g.Expect(cg.Status.GroupName).To(Equal("billing-" + ns))
			g.Expect(cg.Status.Brokers).To(Equal([]string{"broker-a", "broker-b"}))
			g.Expect(cg.Status.Lag).To(Equal([]v1alpha1.TopicLag{{Topic: "audit", Lag: 3}, {Topic: "orders", Lag: 65}}))
			g.Expect(cg.Status.TotalLag).To(Equal(int64(68)))
			g.Expect(meta.IsStatusConditionFalse(cg.Status.Conditions, v1alpha1.ConditionProgressing)).To(BeTrue())
		}).Should(Succeed())
		// Each master got the group. A Broker status event may reconcile once more from a
		// cache that has not seen this reconcile's status yet, and repeat the (idempotent)
		// call: the count is checked against quiet periodic reconciles below instead.
		calls := admin.callsFor("CreateOrUpdateSubscriptionGroup", "GroupName:billing-"+ns)
		Expect(calls).NotTo(BeEmpty())
		Expect(callAddrs(calls)).To(ConsistOf(a, b))
		for _, c := range calls {
			Expect(c.Args).To(ContainSubstring("RetryMaxTimes:16"))
		}
		Expect(cg.Finalizers).To(BeEmpty(), "deletionPolicy Retain needs no finalizer")

		// Lag is refreshed periodically without a spec change, and a periodic reconcile
		// does not send the group again.
		admin.setStats(b, nil)
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, cg.Name)()).To(Succeed())
			g.Expect(cg.Status.TotalLag).To(Equal(int64(60)))
		}).Should(Succeed())
		sent := len(admin.callsFor("CreateOrUpdateSubscriptionGroup", "GroupName:billing-"+ns))
		admin.setStats(b, []QueueOffset{{Topic: "audit", BrokerName: "broker-b", QueueID: 0, BrokerOffset: 5, ConsumerOffset: 0}})
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, cg.Name)()).To(Succeed())
			g.Expect(cg.Status.TotalLag).To(Equal(int64(65)))
		}).Should(Succeed())
		Expect(admin.callsFor("CreateOrUpdateSubscriptionGroup", "GroupName:billing-"+ns)).To(HaveLen(sent))
	})

	It("applies an offset reset exactly once per id", func() {
		ns := newNamespace()
		a, _ := brokerWithMasters(ns)
		admin.setStats(a, []QueueOffset{
			{Topic: "orders", BrokerName: "broker-a", QueueID: 0, BrokerOffset: 500, ConsumerOffset: 400}})
		group := "reset-" + ns
		cg := newGroup(ns, group)
		cg.Spec.OffsetReset = &v1alpha1.OffsetReset{ID: "r1", Earliest: true}
		Expect(k8s.Create(ctx, cg)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, group)()).To(Succeed())
			g.Expect(cg.Status.LastOffsetReset).NotTo(BeNil())
			g.Expect(cg.Status.LastOffsetReset.ID).To(Equal("r1"))
			g.Expect(cg.Status.LastOffsetReset.Queues).To(Equal([]v1alpha1.QueueOffsetChange{
				{Topic: "orders", BrokerName: "broker-a", QueueID: 0, Before: 400, After: 0}}))
		}).Should(Succeed())
		Expect(admin.callsFor("ResetOffset", "group="+group)).To(HaveLen(1))
		Expect(admin.callsFor("ResetOffset", "group="+group)[0].Args).To(Equal("group=" + group + " topic=orders ts=0"))

		// A re-sync or an unrelated change must not reset again.
		Eventually(update(cg, func() { cg.Spec.RetryMaxTimes = ptr.To[int32](0) })).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, group)()).To(Succeed())
			g.Expect(cg.Status.ObservedGeneration).To(Equal(cg.Generation))
		}).Should(Succeed())
		updates := admin.callsFor("CreateOrUpdateSubscriptionGroup", "GroupName:"+group+" ")
		Expect(updates[len(updates)-1].Args).To(ContainSubstring("RetryMaxTimes:0 "), "an explicit 0 survives")
		Consistently(func() []adminCall { return admin.callsFor("ResetOffset", "group="+group) }, "2s").Should(HaveLen(1))

		// A new id applies again: latest is timestamp -1, for the one topic named, on
		// every master (broker-b has no offsets, but the topic is named).
		Eventually(update(cg, func() {
			cg.Spec.OffsetReset = &v1alpha1.OffsetReset{ID: "r2", Latest: true, Topic: "orders"}
		})).Should(Succeed())
		Eventually(func() []adminCall { return admin.callsFor("ResetOffset", "group="+group+" topic=orders ts=-1") }).Should(HaveLen(2))
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, group)()).To(Succeed())
			g.Expect(cg.Status.LastOffsetReset.ID).To(Equal("r2"))
		}).Should(Succeed())

		// A timestamp target is sent in milliseconds.
		at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		Eventually(update(cg, func() {
			cg.Spec.OffsetReset = &v1alpha1.OffsetReset{ID: "r3", Timestamp: &at}
		})).Should(Succeed())
		Eventually(func() []adminCall {
			return admin.callsFor("ResetOffset", fmt.Sprintf("ts=%d", at.UnixMilli()))
		}).Should(HaveLen(1)) // all topics: only broker-a has one
	})

	It("migrates offsets from another group once per id and records events", func() {
		ns := newNamespace()
		brokerWithMasters(ns)
		group := "mig-" + ns
		cg := newGroup(ns, group)
		cg.Spec.OffsetMigration = &v1alpha1.OffsetMigration{ID: "m1", FromGroup: "legacy"}
		Expect(k8s.Create(ctx, cg)).To(Succeed())
		Eventually(func() []adminCall { return admin.callsFor("CloneGroupOffset", "dst="+group) }).Should(HaveLen(2))
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, group)()).To(Succeed())
			g.Expect(cg.Status.LastOffsetMigration).NotTo(BeNil())
			g.Expect(cg.Status.LastOffsetMigration.ID).To(Equal("m1"))
		}).Should(Succeed())
		Consistently(func() []adminCall { return admin.callsFor("CloneGroupOffset", "dst="+group) }, "2s").Should(HaveLen(2))
		Eventually(func() []string { return eventReasons(ns, group) }).Should(ContainElements("OffsetsMigrated", "SubscriptionGroupUpdated"))
	})

	It("deletes the group from the brokers through its finalizer when deletionPolicy is Delete", func() {
		ns := newNamespace()
		brokerWithMasters(ns)
		group := "del-" + ns
		cg := newGroup(ns, group)
		cg.Spec.DeletionPolicy = v1alpha1.DeletionDelete
		Expect(k8s.Create(ctx, cg)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, group)()).To(Succeed())
			g.Expect(cg.Finalizers).To(ContainElement(ConsumerGroupFinalizer))
			g.Expect(meta.IsStatusConditionTrue(cg.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
		}).Should(Succeed())
		Expect(k8s.Delete(ctx, cg)).To(Succeed())
		Eventually(get(cg, ns, group)).Should(MatchError(ContainSubstring("not found")))
		Expect(admin.callsFor("DeleteSubscriptionGroup", "group="+group)).To(HaveLen(2))
	})

	It("waits for a missing Broker", func() {
		ns := newNamespace()
		cg := newGroup(ns, "orphan")
		Expect(k8s.Create(ctx, cg)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, "orphan")()).To(Succeed())
			c := meta.FindStatusCondition(cg.Status.Conditions, v1alpha1.ConditionReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal("BrokerUnavailable"))
			g.Expect(c.Message).To(ContainSubstring(`Broker "rmq" not found`))
		}).Should(Succeed())
	})

	DescribeTable("refuses invalid specs",
		func(mutate func(*v1alpha1.ConsumerGroup), msg string) {
			cg := newGroup(newNamespace(), "bad")
			mutate(cg)
			Expect(k8s.Create(ctx, cg)).To(MatchError(ContainSubstring(msg)))
		},
		Entry("two reset targets", func(c *v1alpha1.ConsumerGroup) {
			c.Spec.OffsetReset = &v1alpha1.OffsetReset{ID: "x", Earliest: true, Latest: true}
		}, "offsetReset needs exactly one target"),
		Entry("no reset target", func(c *v1alpha1.ConsumerGroup) {
			c.Spec.OffsetReset = &v1alpha1.OffsetReset{ID: "x"}
		}, "offsetReset needs exactly one target"),
		Entry("a reset without id", func(c *v1alpha1.ConsumerGroup) {
			c.Spec.OffsetReset = &v1alpha1.OffsetReset{Earliest: true}
		}, "spec.offsetReset.id"),
		Entry("a bad deletion policy", func(c *v1alpha1.ConsumerGroup) { c.Spec.DeletionPolicy = "Maybe" },
			"spec.deletionPolicy"),
		Entry("a name that is no group name", func(c *v1alpha1.ConsumerGroup) { c.Name = "a.b" },
			"metadata.name is not a valid RocketMQ group name"),
		Entry("too many retries", func(c *v1alpha1.ConsumerGroup) { c.Spec.RetryMaxTimes = ptr.To[int32](65) },
			"spec.retryMaxTimes"),
	)

	It("refuses changing groupName or brokerRef", func() {
		ns := newNamespace()
		cg := newGroup(ns, "g")
		cg.Spec.GroupName = "g1"
		Expect(k8s.Create(ctx, cg)).To(Succeed())
		Eventually(update(cg, func() { cg.Spec.GroupName = "g2" })).Should(MatchError(ContainSubstring("groupName is immutable")))
		Eventually(update(cg, func() { cg.Spec.GroupName = "" })).Should(MatchError(ContainSubstring("groupName is immutable")))
		Eventually(update(cg, func() { cg.Spec.BrokerRef.Name = "other" })).Should(MatchError(ContainSubstring("brokerRef is immutable")))
	})
})
