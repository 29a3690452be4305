//go:build k8s

package e2ek8s

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/version"
	"github.com/openrmq/rocketmq-operator/pkg/admin"
	rmqclient "github.com/openrmq/rocketmq-operator/pkg/client"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

const (
	messages = 10000
	topic    = "E2EOrders"
)

// The steps share one installation and one set of samples, in this order.
var _ = Describe("the operator on a real cluster", Ordered, func() {
	var nsAddr string // the NameServer's status.address

	It("installs with helm (an upgrade from the previous chart) and leads", func() {
		t0 := time.Now()
		out, err := exec.Command("ctr", "--address", containerd, "-n", "k8s.io", "images", "import", imageTar).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "ctr images import %s: %s", imageTar, out)
		report("image %s imported into containerd in %s", version.DefaultImage, since(t0))

		current := filepath.Join(repo, "charts", "rocketmq-operator")
		t0 = time.Now()
		if prev := previousChart(previousRef); prev != "" {
			helmInstall(prev)
			waitOperatorReady()
			report("previous chart (%s) installed and Ready in %s", previousRef, since(t0))
			t0 = time.Now()
			helmUpgrade(current)
			report("upgraded to this chart (CRDs applied first) in %s", since(t0))
		} else {
			report("WARNING: no commit %s in this clone (shallow?): installing this chart without the upgrade check", previousRef)
			helmInstall(current)
		}
		crd := &metav1.PartialObjectMetadata{}
		crd.SetGroupVersionKind(apiextGVK)
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "nameservers.rocketmq.openrmq.io"}, crd)).To(Succeed())
		t0 = time.Now()
		pod := waitOperatorReady()
		report("operator pod %s Ready in %s", pod, since(t0))
		holder := leaseHolder()
		Expect(holder).To(HavePrefix(pod), "lease holder")
		report("lease held by %s", holder)
		// A restart of the operator: the old leader releases the lease on SIGTERM.
		t0 = time.Now()
		Expect(k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: operatorNS}})).To(Succeed())
		Eventually(func() string {
			h := leaseHolder()
			if h == "" || strings.HasPrefix(h, pod) {
				return ""
			}
			return h
		}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).ShouldNot(BeEmpty())
		took := time.Since(t0)
		report("new leader %s %s after the old pod's deletion", leaseHolder(), took.Round(100*time.Millisecond))
		Expect(took).To(BeNumerically("<", 14*time.Second), "the lease was not released (it runs out after 15 s)")
		// The new leader's election is recorded as a core Event, which the Role allows.
		newHolder := leaseHolder()
		Eventually(func() bool {
			var evs corev1.EventList
			_ = k8s.List(ctx, &evs, client.InNamespace(operatorNS))
			for _, e := range evs.Items {
				if e.Reason == "LeaderElection" && strings.Contains(e.Message, newHolder) {
					return true
				}
			}
			return false
		}).WithTimeout(30*time.Second).Should(BeTrue(), "no LeaderElection Event for %s in %s (RBAC refused it?)", newHolder, operatorNS)
		report("LeaderElection Event recorded for %s", newHolder)
		waitOperatorReady()
	})

	It("runs config/samples to Ready on the 2-CPU node under Pod Security restricted", func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: samplesNS, Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}}}
		Expect(k8s.Create(ctx, ns)).To(Succeed())
		t0 := time.Now()
		out, err := kubectl("apply", "-k", "config/samples", "-n", samplesNS)
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func(g Gomega) {
			nsrv := &v1alpha1.NameServer{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "ns"}, nsrv)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(nsrv.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "NameServer: %v", nsrv.Status.Conditions)
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		report("NameServer ns Ready in %s", since(t0))
		Eventually(func(g Gomega) {
			br := &v1alpha1.Broker{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "rmq"}, br)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(br.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "Broker: %v", br.Status.Conditions)
		}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
		report("Broker rmq Ready (2 groups x 2 pods) in %s", since(t0))
		Eventually(func(g Gomega) {
			cg := &v1alpha1.ConsumerGroup{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "billing"}, cg)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(cg.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "ConsumerGroup: %v", cg.Status.Conditions)
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		report("ConsumerGroup billing Ready in %s", since(t0))
		Eventually(func(g Gomega) {
			tp := &v1alpha1.Topic{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "orders"}, tp)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(tp.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "Topic: %v", tp.Status.Conditions)
			g.Expect(tp.Status.Groups).To(HaveLen(2), "the topic on both groups")
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		report("Topic orders Ready on both groups in %s (autoCreateTopicEnable=false)", since(t0))

		nsrv := &v1alpha1.NameServer{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "ns"}, nsrv)).To(Succeed())
		nsAddr = nsrv.Status.Address
		Expect(strings.Split(nsAddr, ";")).To(HaveLen(2))
		report("NameServer status.address %s, addressURL %s", nsAddr, nsrv.Status.AddressURL)

		// The topic, on both masters, as mqadmin updateTopic would make it.
		createTopic(nsAddr, topic, 4)

		// Every broker announces its own Service's ClusterIP, not its pod IP.
		route := routeFrom(strings.Split(nsAddr, ";")[0], topic)
		Expect(route).NotTo(BeNil())
		announced := map[string]string{}
		for _, bd := range route.BrokerDatas {
			for id, addr := range bd.BrokerAddrs {
				pod := fmt.Sprintf("rmq-%s-%d", bd.BrokerName, id)
				Expect(addr).To(Equal(podServiceAddr(pod)), "%s announces %s", pod, addr)
				announced[pod] = addr
			}
		}
		Expect(announced).To(HaveLen(4))
		report("brokers announce their pod Services' ClusterIPs: %v", announced)
	})

	It("moves 10,000 messages with the official Go client and 10,000 with the Java client", func() {
		// Go: the NameServer's status.address (pod IPs).
		keys := produceGo(strings.Split(nsAddr, ";"), topic, "go", messages)
		got := consumeGo(strings.Split(nsAddr, ";"), "e2e-go-"+runID, topic, keys, consumer.ConsumeFromFirstOffset, 3*time.Minute)
		Expect(got).To(Equal(len(keys)))

		// Java: the address server behind the NameServer's Service, through
		// -Drocketmq.namesrv.domain, as an in-cluster application would.
		svc := &corev1.Service{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "ns"}, svc)).To(Succeed())
		domain := svc.Spec.ClusterIP + ":8080"
		t0 := time.Now()
		jctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
		defer cancel()
		out, err := java.WithJVMArgs("-Drocketmq.namesrv.domain="+domain).RunMain(jctx, filepath.Join(workDir, "java"),
			"produce-consume", "org.openrmq.e2ek8s.ProduceConsume", topic, fmt.Sprint(messages), "180")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("E2E OK"))
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "PRODUCED") || strings.HasPrefix(l, "CONSUMED") {
				report("java (namesrv from http://%s/rocketmq/nsaddr): %s", domain, l)
			}
		}
		report("java round trip in %s", since(t0))

		// The Go client through the same address server (primitive.NewHttpResolver).
		url := "http://" + domain + "/rocketmq/nsaddr"
		p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewHttpResolver("e2e", url)),
			producer.WithGroupName("e2e-http-producer"), producer.WithInstanceName("http-"+runID))
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Start()).To(Succeed())
		defer p.Shutdown()
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("through the address server")))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Status).To(Equal(primitive.SendOK))
		report("go client with primitive.NewHttpResolver(%s): sent to %s", url, res.MessageQueue.BrokerName)
	})

	It("resets a live group's offsets by editing its ConsumerGroup", func() {
		group := "e2e-reset-" + runID
		addrs := strings.Split(nsAddr, ";")
		rtopic := "E2EReset"
		createTopic(nsAddr, rtopic, 4)
		before := produceGo(addrs, rtopic, "before", 500)
		time.Sleep(1500 * time.Millisecond) // store timestamps have ms precision; keep them apart
		ts := time.Now()
		time.Sleep(1500 * time.Millisecond)
		after := produceGo(addrs, rtopic, "after", 700)

		cg := &v1alpha1.ConsumerGroup{ObjectMeta: metav1.ObjectMeta{Name: group, Namespace: samplesNS},
			Spec: v1alpha1.ConsumerGroupSpec{BrokerRef: v1alpha1.LocalObjectReference{Name: "rmq"}}}
		Expect(k8s.Create(ctx, cg)).To(Succeed())
		// The group is live: a consumer reads everything and stays online.
		live, liveSeen := startGo(addrs, group, rtopic, consumer.ConsumeFromFirstOffset)
		Eventually(func() int { return liveSeen.count(nil) }).WithTimeout(2 * time.Minute).Should(Equal(len(before) + len(after)))
		liveSeen.reset()

		t0 := time.Now()
		edit(cg, func() {
			cg.Spec.OffsetReset = &v1alpha1.OffsetReset{ID: "e2e-" + runID, Topic: rtopic,
				Timestamp: &metav1.Time{Time: ts}}
		})
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cg), cg)).To(Succeed())
			g.Expect(cg.Status.LastOffsetReset).NotTo(BeNil())
			g.Expect(cg.Status.LastOffsetReset.ID).To(Equal("e2e-" + runID))
		}).WithTimeout(time.Minute).Should(Succeed())
		report("offset reset to %s applied in %s", ts.Format(time.RFC3339Nano), since(t0))
		// The live consumer is told to jump: it receives exactly the later messages again.
		Eventually(func() int { return liveSeen.count(after) }).WithTimeout(90 * time.Second).Should(Equal(len(after)))
		Consistently(func() int { return liveSeen.count(before) }).WithTimeout(3 * time.Second).Should(BeZero())
		live.Shutdown()
		report("the live consumer received the %d messages after the timestamp again, none of the %d before", len(after), len(before))

		// A second reset while the group is offline; a consumer started afterwards gets
		// exactly the same messages.
		edit(cg, func() { cg.Spec.OffsetReset.ID = "e2e-again-" + runID })
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cg), cg)).To(Succeed())
			g.Expect(cg.Status.LastOffsetReset).NotTo(BeNil())
			g.Expect(cg.Status.LastOffsetReset.ID).To(Equal("e2e-again-" + runID))
		}).WithTimeout(time.Minute).Should(Succeed())
		late, lateSeen := startGo(addrs, group, rtopic, consumer.ConsumeFromLastOffset)
		defer late.Shutdown()
		Eventually(func() int { return lateSeen.count(after) }).WithTimeout(90 * time.Second).Should(Equal(len(after)))
		Consistently(func() int { return lateSeen.count(nil) }).WithTimeout(3 * time.Second).Should(Equal(len(after)))
		report("a consumer started after the reset received exactly the %d messages stored after the timestamp", len(after))
	})

	It("scales the NameServer 2 -> 3 -> 2 without restarting a broker", func() {
		pods := brokerPods()
		t0 := time.Now()
		scaleNameServer(3)
		report("NameServer 2 -> 3 Ready in %s", since(t0))
		nsrv := &v1alpha1.NameServer{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "ns"}, nsrv)).To(Succeed())
		addrs := strings.Split(nsrv.Status.Address, ";")
		Expect(addrs).To(HaveLen(3))
		Eventually(func(g Gomega) {
			for _, a := range addrs {
				route := routeFrom(a, topic)
				g.Expect(route).NotTo(BeNil(), "name server %s has no route for %s", a, topic)
				g.Expect(route.BrokerDatas).To(HaveLen(2), "name server %s", a)
			}
		}).WithTimeout(time.Minute).Should(Succeed())
		report("every name server (%s) routes %s to both groups, %s after the scale", nsrv.Status.Address, topic, since(t0))
		t0 = time.Now()
		scaleNameServer(2)
		report("NameServer 3 -> 2 Ready in %s", since(t0))
		Expect(brokerPods()).To(Equal(pods), "broker pods (uid/restarts) changed")
		report("broker pods unchanged: %v", pods)
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "ns"}, nsrv)).To(Succeed())
		nsAddr = nsrv.Status.Address
	})

	It("keeps a group readable from its slave while its master pod is replaced, and loses no acknowledged message", func() {
		addrs := strings.Split(nsAddr, ";")
		htopic := "E2EFailover"
		createTopic(nsAddr, htopic, 4)
		// A push consumer of the group reads a first batch, then pauses while a second is
		// stored and replicated.
		first := produceGo(addrs, htopic, "ha", 1000)
		pushGroup := "e2e-ha-" + runID
		push, pushed := startGo(addrs, pushGroup, htopic, consumer.ConsumeFromFirstOffset)
		defer push.Shutdown()
		Eventually(func() int { return pushed.count(first) }).WithTimeout(2 * time.Minute).Should(Equal(len(first)))
		push.Suspend()
		time.Sleep(2 * time.Second) // pulls in flight come back
		second, secondQueues := produceGoQueues(addrs, htopic, "ha2", 1000)
		// Slaves copy topic configs from their master every 10 s: a slave that never got
		// the topic's config refuses to serve it.
		Eventually(func() bool { return slavesCaughtUp(htopic) && slavesKnow(htopic) }).WithTimeout(time.Minute).Should(BeTrue())
		acked := storedOn(htopic, "broker-a")
		Expect(acked).To(BeNumerically(">", 0))
		perQueue := queueOffsets(htopic, "broker-a")

		// The master's node goes away (cordoned: its replacement stays Pending), so the
		// group has to do with the slave.
		out, err := kubectl("cordon", "node1")
		Expect(err).NotTo(HaveOccurred(), out)
		uncordon := func() { _, _ = kubectl("uncordon", "node1") }
		DeferCleanup(uncordon)
		t0 := time.Now()
		master := &corev1.Pod{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "rmq-broker-a-0"}, master)).To(Succeed())
		oldUID, oldPodIP := master.UID, master.Status.PodIP
		masterAddr := podServiceAddr("rmq-broker-a-0")
		Expect(k8s.Delete(ctx, master)).To(Succeed())
		Eventually(func() bool { // the master has left the route; the slave is still in it
			r := routeFrom(addrs[0], htopic)
			if r == nil {
				return false
			}
			for _, bd := range r.BrokerDatas {
				if bd.BrokerName == "broker-a" {
					_, hasMaster := bd.BrokerAddrs[0]
					_, hasSlave := bd.BrokerAddrs[1]
					return !hasMaster && hasSlave
				}
			}
			return false
		}).WithTimeout(time.Minute).Should(BeTrue())
		report("broker-a's master left the route %s after its pod's deletion", since(t0))
		push.Resume()
		// The official Go client (rocketmq-client-go v2) holds on to the queues it already
		// pulls and reads broker-a's from the slave (FindBrokerAddressInSubscribe falls back
		// to any address). But a queue it has to take again while the master is away stays
		// unread until the master is back: every rebalance whose GET_CONSUMER_LIST_BY_GROUP
		// fails with a response ("no consumer for this group" from a broker that has not had
		// this client's heartbeat yet) gives up every queue, since findConsumerList ignores
		// the response code and allocates over an empty list (consumer/consumer.go
		// doBalance, findConsumerList); taking a queue again reads its offset from the
		// master only (consumer/offset_store.go fetchConsumeOffsetFromBroker,
		// FindBrokerAddrByName -> BrokerAddresses[MasterId]: "broker: broker-a address not
		// found"), so updateProcessQueueTable logs "add a new mq failed" and leaves it out.
		// The Java 4.9.7 client would skip that rebalance (findConsumerIdList returns null
		// on an error) and read the offset from the slave (findBrokerAddressInAdmin), and
		// our brokers answer as 4.9.7's do. So, with the master away: every new message
		// arrives except those of broker-a queues the client itself said it could not take;
		// those arrive once the master is back (below), and every acknowledged message is
		// read from the slave by the pull consumer.
		var notTaken map[int]bool
		Eventually(func() []string {
			notTaken = map[int]bool{}
			var missing []string
			for _, k := range second {
				if pushed.count([]string{k}) > 0 {
					continue
				}
				mq := secondQueues[k]
				if mq.BrokerName == "broker-a" && clientLogger.failedToTake(pushGroup, mq) {
					notTaken[mq.QueueId] = true
					continue
				}
				missing = append(missing, k)
			}
			return missing
		}).WithTimeout(2*time.Minute).WithPolling(200*time.Millisecond).Should(BeEmpty(),
			"new messages the resumed push consumer did not receive with broker-a's master away, besides those of queues it could not take")
		if len(notTaken) == 0 {
			report("the paused push consumer, resumed, received all %d new messages (broker-a's from its slave) %s after the deletion", len(second), since(t0))
		} else {
			report("the paused push consumer, resumed, received %d of %d new messages %s after the deletion; the client could not take broker-a queues %v again without the master (their messages arrive once it is back)",
				pushed.count(second), len(second), since(t0), slices.Sorted(maps.Keys(notTaken)))
		}

		// The group reads broker-a's queues with the official Go client's pull consumer,
		// which takes any broker of the route, here the slave.
		pc, err := rocketmq.NewPullConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver(addrs)),
			consumer.WithGroupName("e2e-ha-pull-"+runID), consumer.WithInstance("ha-"+runID))
		Expect(err).NotTo(HaveOccurred())
		Expect(pc.Subscribe(htopic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"})).To(Succeed())
		Expect(pc.Start()).To(Succeed())
		defer pc.Shutdown()
		var fromSlave int64
		failures, lastFailure := 0, ""
		for q := range 4 {
			mq := &primitive.MessageQueue{Topic: htopic, BrokerName: "broker-a", QueueId: q}
			var off int64
			// Up to the offset the master had acknowledged, never past it: a pull at
			// the end would be held by the broker (long polling).
			Eventually(func() bool {
				if off >= perQueue[q] {
					return true
				}
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				res, err := pc.PullFrom(cctx, mq, off, 32)
				if err != nil {
					failures, lastFailure = failures+1, err.Error()
					return false
				}
				if res.Status != primitive.PullFound {
					failures, lastFailure = failures+1, fmt.Sprintf("status %v", res.Status)
					return false
				}
				fromSlave += int64(len(res.GetMessageExts()))
				off = res.NextBeginOffset
				return off >= perQueue[q]
			}).WithTimeout(2*time.Minute).WithPolling(10*time.Millisecond).Should(BeTrue(), "queue %d read up to %d of %d", q, off, perQueue[q])
		}
		Expect(fromSlave).To(Equal(acked))
		p := &corev1.Pod{}
		masterBack := k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "rmq-broker-a-0"}, p) == nil && p.UID != oldUID && podIsReady(p)
		Expect(masterBack).To(BeFalse(), "the master came back: the slave was not put to the test")
		report("with broker-a's master gone, the group read all %d of broker-a's messages from its slave, %s after the deletion (%d failed pulls, the last: %s)",
			fromSlave, since(t0), failures, lastFailure)

		uncordon()
		Eventually(func(g Gomega) {
			p := &corev1.Pod{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "rmq-broker-a-0"}, p)).To(Succeed())
			g.Expect(p.UID).NotTo(Equal(oldUID))
			g.Expect(podIsReady(p)).To(BeTrue())
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		report("broker-a's master back and Ready %s after its deletion", since(t0))
		// Back at the address it had: the route, and so clients and its slave, need no news.
		Eventually(func() string {
			r := routeFrom(addrs[0], htopic)
			if r == nil {
				return ""
			}
			for _, bd := range r.BrokerDatas {
				if bd.BrokerName == "broker-a" {
					return bd.BrokerAddrs[0]
				}
			}
			return ""
		}).WithTimeout(time.Minute).Should(Equal(masterAddr))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "rmq-broker-a-0"}, master)).To(Succeed())
		report("broker-a's master announces %s again (pod IP %s before, %s now)", masterAddr, oldPodIP, master.Status.PodIP)
		Eventually(func() int64 { return storedOn(htopic, "broker-a") }).WithTimeout(time.Minute).Should(Equal(acked))
		report("broker-a's master holds all %d acknowledged messages of %s on its volume", acked, htopic)
		// The push consumer takes the queues it could not take before at its next
		// rebalance (20 s) now that the master answers, and receives what they hold.
		Eventually(func() int { return pushed.count(second) }).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).Should(Equal(len(second)))
		report("the push consumer received all %d new messages %s after the deletion", len(second), since(t0))
	})

	It("is scraped by Prometheus through the chart's ServiceMonitors, and the dashboard's queries return data", func() {
		checkPrometheus(strings.Split(nsAddr, ";"))
	})

	It("rolls an image change under a steady 200 msg/s Go producer and loses no acknowledged message", func() {
		measureImageRoll(strings.Split(nsAddr, ";"), "-roll")
	})

	It("rolls an image change under SYNC_MASTER with no send answered SLAVE_NOT_AVAILABLE or FLUSH_SLAVE_TIMEOUT", func() {
		br := &v1alpha1.Broker{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "rmq"}, br)).To(Succeed())
		t0 := time.Now()
		edit(br, func() { br.Spec.BrokerRole = v1alpha1.SyncMaster }) // itself a roll
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(br), br)).To(Succeed())
			g.Expect(br.Status.ObservedGeneration).To(Equal(br.Generation))
			g.Expect(meta.IsStatusConditionTrue(br.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
			g.Expect(meta.IsStatusConditionFalse(br.Status.Conditions, v1alpha1.ConditionProgressing)).To(BeTrue())
		}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
		report("brokerRole ASYNC_MASTER -> SYNC_MASTER rolled in %s", since(t0))
		measureImageRoll(strings.Split(nsAddr, ";"), "-roll-sync")
	})

	It("fails a SYNC_MASTER group over automatically when its master cannot restart, and loses no acknowledged message", func() {
		measureAutomaticFailover(strings.Split(nsAddr, ";"), "broker-a", false)
	})

	It("fails a healthy group over by the annotation under load, with sends stalling at most 5 s", func() {
		measureManualFailover(strings.Split(nsAddr, ";"), "broker-b")
	})

	It("rolls a change after failovers: each master moves back to ordinal 0, then slaves first, master last", func() {
		br := &v1alpha1.Broker{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "rmq"}, br)).To(Succeed())
		t0 := time.Now()
		edit(br, func() { br.Spec.BrokerRole = v1alpha1.AsyncMaster })
		lastState := ""
		Eventually(func(g Gomega) {
			if s := rollState(br); s != lastState {
				report("roll +%s: %s", since(t0), s)
				lastState = s
			}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(br), br)).To(Succeed())
			g.Expect(br.Status.ObservedGeneration).To(Equal(br.Generation))
			g.Expect(meta.IsStatusConditionTrue(br.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
			g.Expect(meta.IsStatusConditionFalse(br.Status.Conditions, v1alpha1.ConditionProgressing)).To(BeTrue())
			for _, gs := range br.Status.Groups {
				g.Expect(gs.MasterOrdinal).To(BeZero(), "group %s", gs.BrokerName)
			}
		}).WithTimeout(8 * time.Minute).WithPolling(time.Second).Should(Succeed())
		for _, gs := range br.Status.Groups {
			report("%s: master %s, epoch %d, last failover: %s", gs.BrokerName, gs.Master.Pod, gs.Epoch, gs.Failover.Reason)
		}
		report("brokerRole SYNC_MASTER -> ASYNC_MASTER rolled in %s, masters moved back first", since(t0))
	})

	It("fails an ASYNC_MASTER group over automatically when its master is killed and cannot restart", func() {
		measureAutomaticFailover(strings.Split(nsAddr, ";"), "broker-a", true)
	})

	It("scales a group in only after its messages are consumed, and out again", func() {
		scaleInAfterConsumed(strings.Split(nsAddr, ";"))
	})

	It("refuses an invalid Broker and says why a Broker with a missing image does not start", func() {
		bad := &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: samplesNS},
			Spec: v1alpha1.BrokerSpec{NameServerRef: &v1alpha1.LocalObjectReference{Name: "ns"}, Groups: 30}}
		err := k8s.Create(ctx, bad)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.groups"))
		report("invalid Broker refused: %s", firstLine(err.Error()))

		// An image that is not on the node, with pull policy Never: no pull leaves the machine.
		t0 := time.Now()
		noimg := &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Name: "noimage", Namespace: samplesNS},
			Spec: v1alpha1.BrokerSpec{
				ContainerSpec: v1alpha1.ContainerSpec{Image: "openrmq/rocketmq-operator:does-not-exist", ImagePullPolicy: corev1.PullNever,
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}},
				NameServerRef: &v1alpha1.LocalObjectReference{Name: "ns"},
				Storage:       v1alpha1.BrokerStorage{Size: ptr.To(resource.MustParse("1Gi")), WhenDeleted: v1alpha1.ReclaimDelete},
			}}
		Expect(k8s.Create(ctx, noimg)).To(Succeed())
		var ready *metav1.Condition
		Eventually(func() string {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(noimg), noimg)
			ready = meta.FindStatusCondition(noimg.Status.Conditions, v1alpha1.ConditionReady)
			if ready == nil {
				return ""
			}
			return ready.Reason
		}).WithTimeout(2 * time.Minute).Should(Equal("ErrImageNeverPull"))
		report("Broker noimage: Ready=%s %s: %s (after %s)", ready.Status, ready.Reason, ready.Message, since(t0))
	})

	It("deletes a Broker's children by garbage collection and keeps or removes claims as whenDeleted says", func() {
		claims := func(instance string) int {
			var list corev1.PersistentVolumeClaimList
			Expect(k8s.List(ctx, &list, client.InNamespace(samplesNS), client.MatchingLabels{"app.kubernetes.io/instance": instance})).To(Succeed())
			return len(list.Items)
		}
		Expect(claims("rmq")).To(Equal(4))
		Eventually(func() int { return claims("noimage") }).WithTimeout(30 * time.Second).Should(Equal(1))
		t0 := time.Now()
		for _, name := range []string{"rmq", "noimage"} {
			Expect(k8s.Delete(ctx, &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: samplesNS}})).To(Succeed())
		}
		Eventually(func() int {
			var sets appsv1.StatefulSetList
			Expect(k8s.List(ctx, &sets, client.InNamespace(samplesNS), client.MatchingLabels{"app.kubernetes.io/component": "broker"})).To(Succeed())
			var pods corev1.PodList
			Expect(k8s.List(ctx, &pods, client.InNamespace(samplesNS), client.MatchingLabels{"app.kubernetes.io/component": "broker"})).To(Succeed())
			var cms corev1.ConfigMapList
			Expect(k8s.List(ctx, &cms, client.InNamespace(samplesNS), client.MatchingLabels{"app.kubernetes.io/component": "broker"})).To(Succeed())
			return len(sets.Items) + len(pods.Items) + len(cms.Items)
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(BeZero())
		report("Brokers deleted: StatefulSets, pods and ConfigMaps collected in %s", since(t0))
		Eventually(func() int { return claims("noimage") }).WithTimeout(time.Minute).Should(BeZero())
		Expect(claims("rmq")).To(Equal(4))
		report("claims: rmq's 4 kept (whenDeleted: Retain), noimage's removed (whenDeleted: Delete)")
	})

	// Last, once the samples' brokers are gone: the node has room for two more pods.
	It("serves a client outside the cluster through NodePort", func() {
		checkNodePort()
	})
})

var runID = fmt.Sprint(time.Now().UnixNano() % 1_000_000_000)

var apiextGVK = metav1.SchemeGroupVersion.WithKind("CustomResourceDefinition")

func init() {
	apiextGVK.Group, apiextGVK.Version = "apiextensions.k8s.io", "v1"
}

// edit reads obj, applies change and updates it, again on a conflict with the operator's
// own writes (a finalizer, the status).
func edit(obj client.Object, change func()) {
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change()
		return k8s.Update(ctx, obj)
	})).To(Succeed())
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

// waitOperatorReady waits for the release's Deployment to be available and returns its
// one ready, not terminating pod.
func waitOperatorReady() string {
	var name string
	Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(k8s.List(ctx, &pods, client.InNamespace(operatorNS),
			client.MatchingLabels{"app.kubernetes.io/instance": releaseName})).To(Succeed())
		name = ""
		for i := range pods.Items {
			if pods.Items[i].DeletionTimestamp == nil && podIsReady(&pods.Items[i]) {
				name = pods.Items[i].Name
			}
		}
		g.Expect(name).NotTo(BeEmpty(), "no ready operator pod")
	}).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	return name
}

func leaseHolder() string {
	l := &coordinationv1.Lease{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: "rocketmq-operator.openrmq.io"}, l); err != nil {
		return ""
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// brokerPods maps broker pod names to "uid/restarts".
func brokerPods() map[string]string {
	var pods corev1.PodList
	Expect(k8s.List(ctx, &pods, client.InNamespace(samplesNS), client.MatchingLabels{
		"app.kubernetes.io/instance": "rmq", "app.kubernetes.io/component": "broker"})).To(Succeed())
	out := map[string]string{}
	for _, p := range pods.Items {
		restarts := int32(0)
		for _, c := range p.Status.ContainerStatuses {
			restarts += c.RestartCount
		}
		out[p.Name] = fmt.Sprintf("%s/%d", p.UID, restarts)
	}
	Expect(out).To(HaveLen(4))
	return out
}

func scaleNameServer(n int32) {
	nsrv := &v1alpha1.NameServer{ObjectMeta: metav1.ObjectMeta{Namespace: samplesNS, Name: "ns"}}
	edit(nsrv, func() { nsrv.Spec.Replicas = n })
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(nsrv), nsrv)).To(Succeed())
		g.Expect(nsrv.Status.ObservedGeneration).To(Equal(nsrv.Generation))
		g.Expect(nsrv.Status.ReadyReplicas).To(Equal(n))
		g.Expect(strings.Split(nsrv.Status.Address, ";")).To(HaveLen(int(n)))
		g.Expect(meta.IsStatusConditionTrue(nsrv.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
		br := &v1alpha1.Broker{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "rmq"}, br)).To(Succeed())
		g.Expect(strings.Split(br.Status.NameServerAddress, ";")).To(HaveLen(int(n)), "brokers told of every name server")
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// --- RocketMQ helpers -------------------------------------------------------------------

func remotingClient() *remoting.Client {
	rc := remoting.NewClient(remoting.ClientConfig{})
	DeferCleanup(rc.Close)
	return rc
}

// createTopic creates topic on every master, as mqadmin updateTopic -c does.
func createTopic(namesrv, name string, queues int) {
	rc := remotingClient()
	adm := admin.New(rc)
	var masters map[string]string
	Eventually(func(g Gomega) {
		var err error
		masters, err = adm.MasterAddrs(ctx, strings.Split(namesrv, ";")[0], "DefaultCluster")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(masters).To(HaveLen(2))
	}).WithTimeout(time.Minute).Should(Succeed())
	for _, addr := range masters {
		hdr := map[string]string{"topic": name, "defaultTopic": protocol.DefaultTopic, "readQueueNums": fmt.Sprint(queues),
			"writeQueueNums": fmt.Sprint(queues), "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}
		// A master's Service routes to it about a second after it turned Ready (the
		// EndpointSlice, then kube-proxy): right after a roll a dial may be refused.
		Eventually(func(g Gomega) {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			resp, err := rc.Invoke(cctx, addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, hdr, nil))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resp.Code).To(Equal(int16(remoting.Success)), resp.Remark)
		}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	}
	Eventually(func() *protocol.TopicRouteData { return routeFrom(strings.Split(namesrv, ";")[0], name) }).
		WithTimeout(time.Minute).ShouldNot(BeNil())
}

func routeFrom(nameServer, t string) *protocol.TopicRouteData {
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	route, err := rmqclient.New(rc, nameServer).Route(cctx, t)
	if err != nil || len(route.BrokerDatas) == 0 {
		return nil
	}
	return route
}

// storedOn is the number of messages group brokerName's master holds in t.
func storedOn(t, brokerName string) int64 {
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	cl := rmqclient.New(rc, nsAddr())
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	route, err := cl.Route(cctx, t)
	if err != nil {
		return -1
	}
	var n int64
	for _, mq := range rmqclient.ReadQueues(route, t) {
		if mq.BrokerName != brokerName {
			continue
		}
		off, err := cl.MaxOffset(cctx, mq)
		if err != nil {
			return -1
		}
		n += off
	}
	return n
}

// queueOffsets maps the queue ids of brokerName's part of t to their max offsets.
func queueOffsets(t, brokerName string) map[int]int64 {
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	cl := rmqclient.New(rc, nsAddr())
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	route, err := cl.Route(cctx, t)
	Expect(err).NotTo(HaveOccurred())
	out := map[int]int64{}
	for _, mq := range rmqclient.ReadQueues(route, t) {
		if mq.BrokerName == brokerName {
			off, err := cl.MaxOffset(cctx, mq)
			Expect(err).NotTo(HaveOccurred())
			out[mq.QueueID] = off
		}
	}
	return out
}

// slavesCaughtUp: every slave's max offset of t equals its master's.
func slavesCaughtUp(t string) bool {
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	cl := rmqclient.New(rc, nsAddr())
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	route, err := cl.Route(cctx, t)
	if err != nil {
		return false
	}
	for _, mq := range rmqclient.ReadQueues(route, t) {
		want, err := cl.MaxOffset(cctx, mq)
		if err != nil {
			return false
		}
		for _, bd := range route.BrokerDatas {
			if bd.BrokerName != mq.BrokerName {
				continue
			}
			for id, addr := range bd.BrokerAddrs {
				if id == 0 {
					continue
				}
				s := mq
				s.Addr = addr
				if got, err := cl.MaxOffset(cctx, s); err != nil || got != want {
					return false
				}
			}
		}
	}
	return true
}

// slavesKnow: every slave of the route has t's topic config (GET_ALL_TOPIC_CONFIG).
func slavesKnow(t string) bool {
	route := routeFrom(nsAddr(), t)
	if route == nil {
		return false
	}
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	for _, bd := range route.BrokerDatas {
		for id, addr := range bd.BrokerAddrs {
			if id == 0 {
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			resp, err := rc.Invoke(cctx, addr, remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
			cancel()
			if err != nil || resp.Code != remoting.Success || !strings.Contains(string(resp.Body), `"`+t+`"`) {
				return false
			}
		}
	}
	return true
}

// podServiceAddr is ClusterIP:listenPort of a broker pod's own Service.
func podServiceAddr(pod string) string {
	svc := &corev1.Service{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: pod}, svc)).To(Succeed())
	Expect(svc.Spec.ClusterIP).NotTo(BeEmpty())
	return svc.Spec.ClusterIP + ":10911"
}

// nsAddr reads the NameServer's status.address now.
func nsAddr() string {
	nsrv := &v1alpha1.NameServer{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "ns"}, nsrv)).To(Succeed())
	return strings.Split(nsrv.Status.Address, ";")[0]
}

// produceGo sends n messages with keys and tags in batches of 100 and returns the keys.
func produceGo(nameServers []string, t, prefix string, n int) []string {
	keys, _ := produceGoQueues(nameServers, t, prefix, n)
	return keys
}

// produceGoQueues is produceGo that also returns the queue each key was stored in.
func produceGoQueues(nameServers []string, t, prefix string, n int) ([]string, map[string]primitive.MessageQueue) {
	t0 := time.Now()
	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver(nameServers)),
		producer.WithGroupName("e2e-producer"), producer.WithInstanceName(prefix+"-"+runID), producer.WithRetry(2),
		producer.WithSendMsgTimeout(10*time.Second))
	Expect(err).NotTo(HaveOccurred())
	Expect(p.Start()).To(Succeed())
	defer p.Shutdown()
	keys := make([]string, 0, n)
	queues := make(map[string]primitive.MessageQueue, n)
	for i := 0; i < n; i += 100 {
		var batch []*primitive.Message
		for j := i; j < min(i+100, n); j++ {
			k := fmt.Sprintf("%s-%s-%d", prefix, runID, j)
			m := primitive.NewMessage(t, []byte("message "+k))
			m.WithKeys([]string{k})
			m.WithTag([]string{"TagA", "TagB"}[j%2])
			batch = append(batch, m)
			keys = append(keys, k)
		}
		Eventually(func() error {
			res, err := p.SendSync(ctx, batch...)
			if err == nil && res.Status != primitive.SendOK {
				err = fmt.Errorf("status %v", res.Status)
			}
			if err == nil {
				for _, m := range batch {
					queues[m.GetKeys()] = *res.MessageQueue
				}
			}
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}
	report("go producer: %d messages to %s in %s (batches of 100)", n, t, since(t0))
	return keys, queues
}

// seen collects the keys a consumer received.
type seen struct {
	mu   sync.Mutex
	keys map[string]int
}

func (s *seen) reset() {
	s.mu.Lock()
	s.keys = map[string]int{}
	s.mu.Unlock()
}

// count is how many of keys were received, or of all received keys when keys is nil.
func (s *seen) count(keys []string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if keys == nil {
		return len(s.keys)
	}
	n := 0
	for _, k := range keys {
		if s.keys[k] > 0 {
			n++
		}
	}
	return n
}

func startGo(nameServers []string, group, t string, from consumer.ConsumeFromWhere) (rocketmq.PushConsumer, *seen) {
	s := &seen{keys: map[string]int{}}
	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver(nameServers)),
		consumer.WithGroupName(group), consumer.WithInstance(group+"-"+fmt.Sprint(time.Now().UnixNano())),
		consumer.WithConsumeFromWhere(from), consumer.WithConsumeMessageBatchMaxSize(32), consumer.WithPullBatchSize(64))
	Expect(err).NotTo(HaveOccurred())
	Expect(c.Subscribe(t, consumer.MessageSelector{Type: consumer.TAG, Expression: "TagA || TagB"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			s.mu.Lock()
			for _, m := range msgs {
				s.keys[m.GetKeys()]++
			}
			s.mu.Unlock()
			return consumer.ConsumeSuccess, nil
		})).To(Succeed())
	Expect(c.Start()).To(Succeed())
	return c, s
}

// consumeGo reads t with a new group until every key arrived and returns how many did.
func consumeGo(nameServers []string, group, t string, keys []string, from consumer.ConsumeFromWhere, within time.Duration) int {
	t0 := time.Now()
	c, s := startGo(nameServers, group, t, from)
	defer c.Shutdown()
	Eventually(func() int { return s.count(keys) }).WithTimeout(within).WithPolling(200 * time.Millisecond).Should(Equal(len(keys)))
	report("go consumer %s: %d of %d messages of %s in %s", group, s.count(keys), len(keys), t, since(t0))
	return s.count(keys)
}
