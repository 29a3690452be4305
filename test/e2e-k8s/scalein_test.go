//go:build k8s

package e2ek8s

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/pkg/admin"
)

// The safe scale-in of issue 11: the samples' Broker goes from 2 groups to 1 while
// broker-b holds messages a consumer group has not consumed. The operator makes broker-b
// read-only and keeps it, saying in the ScaleIn condition what it waits for, until the
// consumer (suspended meanwhile) has read them; then the group goes. Raised to 2 again,
// broker-b comes back with the Topic resources' topics before the Broker is Ready.
func scaleInAfterConsumed(nsAddrs []string) {
	dtopic, group := "E2EDrain", "e2e-drain-"+runID
	createTopic(strings.Join(nsAddrs, ";"), dtopic, 4)
	c, got := startGo(nsAddrs, group, dtopic, consumer.ConsumeFromFirstOffset)
	defer func() { _ = c.Shutdown() }()

	// The group's offsets on broker-b exist once a first batch is consumed and committed
	// (the Go client commits every 5 s).
	warm := produceGo(nsAddrs, dtopic, "drain-warm", 100)
	Eventually(func() int { return got.count(warm) }).WithTimeout(time.Minute).Should(Equal(len(warm)))
	masterB := podServiceAddr("rmq-broker-b-0")
	adm := admin.New(remotingClient())
	lagOnB := func() int64 {
		stats, err := adm.ConsumeStats(ctx, masterB, group, dtopic)
		if err != nil || len(stats.OffsetTable) == 0 {
			return -1
		}
		var n int64
		for _, o := range stats.OffsetTable {
			n += o.BrokerOffset - o.ConsumerOffset
		}
		return n
	}
	Eventually(lagOnB).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeZero())

	// Suspended, the consumer stays in its group but pulls nothing more; a pull the broker
	// already holds still answers, with any message that arrives meanwhile. The Go client
	// asks for 20 s of long polling (the Java client 15 s), so the messages come after that.
	c.Suspend()
	time.Sleep(goClientPullSuspend + 2*time.Second)
	keys, queues := produceGoQueues(nsAddrs, dtopic, "drain", 400)
	onB := 0
	for _, q := range queues {
		if q.BrokerName == "broker-b" {
			onB++
		}
	}
	Expect(onB).To(BeNumerically(">", 0), "no message landed on broker-b")
	// Consume queues are written after the commitlog, as Java's ReputMessageService does.
	Eventually(lagOnB).WithTimeout(10*time.Second).WithPolling(100*time.Millisecond).
		Should(BeEquivalentTo(onB), "the group's lag on broker-b, with %d of the keys stored there", onB)

	skipLeftovers(adm, masterB, group)

	br := &v1alpha1.Broker{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "rmq"}, br)).To(Succeed())
	t0 := time.Now()
	edit(br, func() { br.Spec.Groups = 1 })
	var waiting *v1alpha1.DrainingGroup
	var cond string
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(br), br)).To(Succeed())
		c := meta.FindStatusCondition(br.Status.Conditions, v1alpha1.ConditionScaleIn)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("Draining"))
		g.Expect(c.Message).To(ContainSubstring(fmt.Sprintf("%d of topic %s by consumer group %s", onB, dtopic, group)))
		g.Expect(br.Status.Draining).To(HaveLen(1))
		waiting, cond = &br.Status.Draining[0], c.Message
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	Expect(waiting.Unconsumed).To(BeNumerically(">=", onB))
	// What it waits for is real: broker-b is there, read-only, with the messages unread.
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "rmq-broker-b"}, &appsv1.StatefulSet{})).To(Succeed())
	Expect(got.count(keys)).To(BeNumerically("<", len(keys)))
	report("scale-in 2 -> 1: ScaleIn Draining %q", cond)

	c.Resume()
	Eventually(func() int { return got.count(keys) }).WithTimeout(2 * time.Minute).Should(Equal(len(keys)))
	consumedIn := since(t0)
	Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "rmq-broker-b"}, &appsv1.StatefulSet{})
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(MatchError(ContainSubstring("not found")))
	report("scale-in 2 -> 1: %d of %d messages consumed (%d on broker-b) %s after the change; broker-b removed after %s",
		got.count(keys), len(keys), onB, consumedIn, since(t0))

	t1 := time.Now()
	edit(br, func() { br.Spec.Groups = 2 })
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(br), br)).To(Succeed())
		g.Expect(br.Status.ObservedGeneration).To(Equal(br.Generation))
		g.Expect(meta.IsStatusConditionTrue(br.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
		g.Expect(br.Status.ReadyReplicas).To(Equal(br.Spec.Groups * br.Spec.ReplicasPerGroup))
	}).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
	report("scale-out 1 -> 2: broker-b back and Ready with the Topic resources' topics in %s", since(t1))
}

// goClientPullSuspend is how long rocketmq-client-go asks the broker to hold a pull
// (suspendTimeoutMillis in its PullMessageRequestHeader).
const goClientPullSuspend = 20 * time.Second

// skipLeftovers moves every other consumer group's offsets on the broker at addr to the
// queues' ends: earlier specs leave groups with messages they never read, which the
// drain would rightly wait for; a user retiring such groups resets them so too.
func skipLeftovers(adm *admin.Client, addr, keep string) {
	groups, err := adm.SubscriptionGroups(ctx, addr)
	Expect(err).NotTo(HaveOccurred())
	for g := range groups {
		if g == keep {
			continue
		}
		stats, err := adm.ConsumeStats(ctx, addr, g, "")
		if err != nil {
			continue // a group without offsets here
		}
		topics := map[string]bool{}
		for mq, o := range stats.OffsetTable {
			if o.BrokerOffset > o.ConsumerOffset {
				topics[mq.Topic] = true
			}
		}
		for t := range topics {
			_, err := adm.ResetOffset(ctx, addr, t, g, admin.Latest, true)
			Expect(err).NotTo(HaveOccurred(), "reset %s of %s to its end", g, t)
		}
	}
}
