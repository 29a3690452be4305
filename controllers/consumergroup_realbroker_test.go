package controllers

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	brokerconfig "github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/internal/testcluster"
	"github.com/openrmq/rocketmq-operator/pkg/acl"
	rmqadmin "github.com/openrmq/rocketmq-operator/pkg/admin"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// loopbackEdge is the ConsumerGroup controller's BrokerAdmin and BrokerResolver in the
// suite. Broker resources a spec registers resolve through that spec's resolver (say, a
// name server on loopback) and calls to the addresses it registers go to that spec's
// admin (the remoting client); everything else goes to the recording fake and the
// StatusResolver, so the fake-based specs see no difference.
type loopbackEdge struct {
	routedAdmin // through pick
	fake        BrokerAdmin

	mu        sync.Mutex
	admins    map[string]BrokerAdmin              // broker addr -> admin
	resolvers map[client.ObjectKey]BrokerResolver // Broker resource -> resolver
}

var (
	_ CredentialedAdmin = (*loopbackEdge)(nil)
	_ BrokerResolver    = (*loopbackEdge)(nil)
	_ MemberResolver    = (*loopbackEdge)(nil)
	_ AccountProber     = (*loopbackEdge)(nil)
)

func newLoopbackEdge(fake BrokerAdmin) *loopbackEdge {
	e := &loopbackEdge{fake: fake, admins: map[string]BrokerAdmin{},
		resolvers: map[client.ObjectKey]BrokerResolver{}}
	e.routedAdmin = e.pick
	return e
}

// route sends calls to addrs through a, and resolves the Broker resource key through r,
// until the returned undo runs.
func (e *loopbackEdge) route(key client.ObjectKey, r BrokerResolver, a BrokerAdmin, addrs ...string) (undo func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.resolvers[key] = r
	for _, addr := range addrs {
		e.admins[addr] = a
	}
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		delete(e.resolvers, key)
		for _, addr := range addrs {
			delete(e.admins, addr)
		}
	}
}

func (e *loopbackEdge) pick(addr string) BrokerAdmin {
	e.mu.Lock()
	defer e.mu.Unlock()
	if a, ok := e.admins[addr]; ok {
		return a
	}
	return e.fake
}

func (e *loopbackEdge) Masters(ctx context.Context, b *v1alpha1.Broker) (map[string]string, error) {
	e.mu.Lock()
	r, ok := e.resolvers[client.ObjectKeyFromObject(b)]
	e.mu.Unlock()
	if !ok {
		r = StatusResolver{}
	}
	return r.Masters(ctx, b)
}

// Members resolves a routed Broker resource to its resolver's masters (the loopback
// clusters have no slaves), and any other through the StatusResolver.
func (e *loopbackEdge) Members(ctx context.Context, b *v1alpha1.Broker) ([]string, error) {
	e.mu.Lock()
	r, ok := e.resolvers[client.ObjectKeyFromObject(b)]
	e.mu.Unlock()
	if !ok {
		return StatusResolver{}.Members(ctx, b)
	}
	m, err := r.Masters(ctx, b)
	return slices.Sorted(maps.Values(m)), err
}

// ProbeAccount goes to the admin routed for addr when it can probe, else to the fake.
func (e *loopbackEdge) ProbeAccount(ctx context.Context, addr string, creds acl.Credentials) error {
	if p, ok := e.pick(addr).(AccountProber); ok {
		return p.ProbeAccount(ctx, addr, creds)
	}
	return e.fake.(AccountProber).ProbeAccount(ctx, addr, creds)
}

// WithCredentials signs as the admins it routes to do: a call to a routed address goes
// through that admin's signing copy (RemotingAdmin: a signing remoting client), made once.
func (e *loopbackEdge) WithCredentials(creds acl.Credentials) (BrokerAdmin, io.Closer) {
	s := &signingEdge{e: e, creds: creds, signed: map[BrokerAdmin]BrokerAdmin{}}
	s.routedAdmin = s.pick
	return s, s
}

type signingEdge struct {
	routedAdmin // through pick
	e           *loopbackEdge
	creds       acl.Credentials

	mu      sync.Mutex
	signed  map[BrokerAdmin]BrokerAdmin // routed admin -> its signing copy
	closers []io.Closer
}

func (s *signingEdge) pick(addr string) BrokerAdmin {
	a := s.e.pick(addr)
	ca, ok := a.(CredentialedAdmin)
	if !ok {
		return a
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if signed, ok := s.signed[a]; ok {
		return signed
	}
	signed, closer := ca.WithCredentials(s.creds)
	s.signed[a] = signed
	s.closers = append(s.closers, closer)
	return signed
}

func (s *signingEdge) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.closers {
		_ = c.Close()
	}
	s.closers, s.signed = nil, map[BrokerAdmin]BrokerAdmin{}
	return nil
}

// routedAdmin sends each call to the admin it returns for the call's address.
type routedAdmin func(addr string) BrokerAdmin

func (r routedAdmin) UpdateBrokerConfig(ctx context.Context, addr string, props map[string]string) error {
	return r(addr).UpdateBrokerConfig(ctx, addr, props)
}

func (r routedAdmin) CreateOrUpdateSubscriptionGroup(ctx context.Context, addr string, cfg SubscriptionGroup) error {
	return r(addr).CreateOrUpdateSubscriptionGroup(ctx, addr, cfg)
}

func (r routedAdmin) DeleteSubscriptionGroup(ctx context.Context, addr, group string) error {
	return r(addr).DeleteSubscriptionGroup(ctx, addr, group)
}

func (r routedAdmin) ResetOffset(ctx context.Context, addr, topic, group string, ts int64) ([]QueueOffset, error) {
	return r(addr).ResetOffset(ctx, addr, topic, group, ts)
}

func (r routedAdmin) CloneGroupOffset(ctx context.Context, addr, src, dst, topic string) error {
	return r(addr).CloneGroupOffset(ctx, addr, src, dst, topic)
}

func (r routedAdmin) ConsumeStats(ctx context.Context, addr, group, topic string) ([]QueueOffset, error) {
	return r(addr).ConsumeStats(ctx, addr, group, topic)
}

func (r routedAdmin) SubscriptionGroups(ctx context.Context, addr string) ([]string, error) {
	return r(addr).SubscriptionGroups(ctx, addr)
}

func (r routedAdmin) CommitLogMaxOffset(ctx context.Context, addr string) (int64, error) {
	return r(addr).CommitLogMaxOffset(ctx, addr)
}

func (r routedAdmin) RuntimeInfo(ctx context.Context, addr string) (map[string]string, error) {
	return r(addr).RuntimeInfo(ctx, addr)
}

func (r routedAdmin) RegisteredMembers(ctx context.Context, namesrvAddr, brokerName string) (map[int64]string, error) {
	return r(namesrvAddr).RegisteredMembers(ctx, namesrvAddr, brokerName)
}

func (r routedAdmin) CreateOrUpdateTopic(ctx context.Context, addr string, t TopicConfig) error {
	return r(addr).CreateOrUpdateTopic(ctx, addr, t)
}

func (r routedAdmin) DeleteTopic(ctx context.Context, addr, topic string) error {
	return r(addr).DeleteTopic(ctx, addr, topic)
}

func (r routedAdmin) TopicConfigs(ctx context.Context, addr string) (map[string]TopicConfig, error) {
	return r(addr).TopicConfigs(ctx, addr)
}

func (r routedAdmin) TopicStats(ctx context.Context, addr, topic string) ([]QueueOffset, error) {
	return r(addr).TopicStats(ctx, addr, topic)
}

// The name-server calls are routed by the name server's address, as broker calls are.

func (r routedAdmin) TopicRoute(ctx context.Context, ns, topic string) (map[string]v1alpha1.TopicQueues, error) {
	return r(ns).TopicRoute(ctx, ns, topic)
}

func (r routedAdmin) DeleteTopicRoute(ctx context.Context, ns, topic, cluster string) error {
	return r(ns).DeleteTopicRoute(ctx, ns, topic, cluster)
}

func (r routedAdmin) KV(ctx context.Context, ns, namespace, key string) (string, bool, error) {
	return r(ns).KV(ctx, ns, namespace, key)
}

func (r routedAdmin) PutKV(ctx context.Context, ns, namespace, key, value string) error {
	return r(ns).PutKV(ctx, ns, namespace, key, value)
}

func (r routedAdmin) DeleteKV(ctx context.Context, ns, namespace, key string) error {
	return r(ns).DeleteKV(ctx, ns, namespace, key)
}

func (r routedAdmin) WipeWritePerm(ctx context.Context, ns, brokerName string) (int, error) {
	return r(ns).WipeWritePerm(ctx, ns, brokerName)
}

func (r routedAdmin) AddWritePerm(ctx context.Context, ns, brokerName string) (int, error) {
	return r(ns).AddWritePerm(ctx, ns, brokerName)
}

// loopbackCluster is a name server and one master broker of our own, in-process on
// loopback, with a remoting client and pkg/admin over it.
type loopbackCluster struct {
	c                   *testcluster.Cluster
	cluster, brokerName string
	nsAddr, brokerAddr  string
	rc                  *remoting.Client
	admin               *rmqadmin.Client
}

// startLoopbackCluster starts the pair; edits adjust the broker's configuration further.
func startLoopbackCluster(edits ...func(*brokerconfig.Config)) *loopbackCluster {
	c := testcluster.Start(GinkgoT(), func(bc *brokerconfig.Config) {
		bc.BrokerClusterName = "loopback"
		bc.AutoCreateTopicEnable = false
		for _, edit := range edits {
			edit(bc)
		}
	})
	lc := &loopbackCluster{c: c, cluster: c.ClusterName, brokerName: c.BrokerName, nsAddr: c.NamesrvAddr, brokerAddr: c.BrokerAddr}
	lc.rc = remoting.NewClient(remoting.ClientConfig{})
	DeferCleanup(lc.rc.Close)
	lc.admin = rmqadmin.New(lc.rc)
	return lc
}

// invoke sends one request to the broker and expects SUCCESS.
func (lc *loopbackCluster) invoke(code int16, fields map[string]string, body []byte) *remoting.Command {
	GinkgoHelper()
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := lc.rc.Invoke(c, lc.brokerAddr, remoting.NewRequest(code, fields, body))
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Code).To(Equal(remoting.Success), "request %d %v answered %d %q", code, fields, resp.Code, resp.Remark)
	return resp
}

// createTopic sends UPDATE_AND_CREATE_TOPIC (17), as mqadmin updateTopic does.
func (lc *loopbackCluster) createTopic(topic string, queues int) {
	GinkgoHelper()
	n := strconv.Itoa(queues)
	lc.invoke(remoting.UpdateAndCreateTopic, map[string]string{"topic": topic, "defaultTopic": "TBW102",
		"readQueueNums": n, "writeQueueNums": n, "perm": "6", "topicFilterType": "SINGLE_TAG",
		"topicSysFlag": "0", "order": "false"}, nil)
}

// send stores n messages in one queue with SEND_MESSAGE_V2 (310), as the Java producer
// sends them, waiting for the store.
func (lc *loopbackCluster) send(topic string, qid, n int) {
	GinkgoHelper()
	for i := range n {
		props, err := message.EncodeProperties(map[string]string{message.PropertyTags: "t", "WAIT": "true"})
		Expect(err).NotTo(HaveOccurred())
		lc.invoke(remoting.SendMessageV2, map[string]string{
			"a": "realbroker-producer", "b": topic, "c": "TBW102", "d": "4", "e": strconv.Itoa(qid), "f": "0",
			"g": strconv.FormatInt(time.Now().UnixMilli(), 10), "h": "0", "i": props, "j": "0", "k": "false", "m": "false",
		}, fmt.Appendf(nil, "q%d-m%d", qid, i))
	}
}

// resolver resolves any Broker resource to the loopback broker through the name server
// it registered with, once that registration shows.
func (lc *loopbackCluster) resolver() ResolverFunc {
	GinkgoHelper()
	resolve := ResolverFunc(func(c context.Context, _ *v1alpha1.Broker) (map[string]string, error) {
		return lc.admin.MasterAddrs(c, lc.nsAddr, lc.cluster)
	})
	Eventually(func(g Gomega) {
		m, err := resolve(ctx, nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(m).To(Equal(map[string]string{lc.brokerName: lc.brokerAddr}))
	}, "10s").Should(Succeed())
	return resolve
}

// offsets reads the group's offsets of one topic from the broker (GET_CONSUME_STATS):
// queue id -> consumer offset, and queue id -> broker (max) offset.
func (lc *loopbackCluster) offsets(group, topic string) (consumer, end map[int32]int64) {
	GinkgoHelper()
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := lc.admin.ConsumeStats(c, lc.brokerAddr, group, topic)
	Expect(err).NotTo(HaveOccurred())
	consumer, end = map[int32]int64{}, map[int32]int64{}
	for mq, w := range st.OffsetTable {
		Expect(mq.Topic).To(Equal(topic))
		Expect(mq.BrokerName).To(Equal(lc.brokerName))
		consumer[mq.QueueID], end[mq.QueueID] = w.ConsumerOffset, w.BrokerOffset
	}
	return consumer, end
}

// queried reads the group's committed offsets with QUERY_CONSUMER_OFFSET (14), the call a
// consumer makes when it starts on a queue: queue id -> offset.
func (lc *loopbackCluster) queried(group, topic string, queues int) map[int32]int64 {
	GinkgoHelper()
	out := map[int32]int64{}
	for q := range queues {
		resp := lc.invoke(remoting.QueryConsumerOffset, map[string]string{
			"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(q)}, nil)
		off, err := strconv.ParseInt(resp.Field("offset"), 10, 64)
		Expect(err).NotTo(HaveOccurred(), "offset field %q", resp.Field("offset"))
		out[int32(q)] = off
	}
	return out
}

// commit sets the group's committed offsets with UPDATE_CONSUMER_OFFSET (15).
func (lc *loopbackCluster) commit(group, topic string, offsets map[int32]int64) {
	GinkgoHelper()
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for q, off := range offsets {
		Expect(lc.admin.CommitOffset(c, lc.brokerAddr, group,
			protocol.MessageQueue{Topic: topic, BrokerName: lc.brokerName, QueueID: q}, off)).To(Succeed())
	}
}

// changes builds the status record of a reset of every queue from before to after.
func changes(topic, brokerName string, before, after map[int32]int64) []v1alpha1.QueueOffsetChange {
	var out []v1alpha1.QueueOffsetChange
	for q := range int32(len(after)) {
		out = append(out, v1alpha1.QueueOffsetChange{Topic: topic, BrokerName: brokerName, QueueID: q,
			Before: before[q], After: after[q]})
	}
	return out
}

func sum(m map[int32]int64) (s int64) {
	for _, v := range m {
		s += v
	}
	return s
}

var _ = Describe("ConsumerGroup against a loopback name server and broker", func() {
	It("moves the group's offsets on the broker once per reset id and reports its lag", func() {
		lc := startLoopbackCluster()
		const topic, queues = "RealOrders", 4
		lc.createTopic(topic, queues)
		// Queue q holds q+2 messages: every queue has a different end.
		ends := map[int32]int64{}
		for q := range queues {
			lc.send(topic, q, q+2)
			ends[int32(q)] = int64(q + 2)
		}
		ns := newNamespace()
		group := "real-" + ns
		Eventually(func(g Gomega) {
			_, end := lc.offsets(group, topic)
			g.Expect(end).To(Equal(ends))
		}, "5s").Should(Succeed())

		// The controller resolves the Broker resource through the name server the broker
		// registered with, and talks to the broker with the production remoting admin.
		resolve := lc.resolver()
		DeferCleanup(edge.route(client.ObjectKey{Namespace: ns, Name: "rmq"}, resolve,
			RemotingAdmin{C: lc.admin}, lc.brokerAddr))
		br := newBroker(ns, "rmq")
		br.Spec.NameServerRef, br.Spec.NameServerAddresses = nil, []string{lc.nsAddr}
		br.Spec.Groups, br.Spec.ReplicasPerGroup = 1, 1
		Expect(k8s.Create(ctx, br)).To(Succeed())

		// The group has consumed everything.
		lc.commit(group, topic, ends)
		consumer, _ := lc.offsets(group, topic)
		Expect(consumer).To(Equal(ends))

		By("r1: earliest moves every queue back to 0 on the broker")
		zero := map[int32]int64{0: 0, 1: 0, 2: 0, 3: 0}
		cg := newGroup(ns, group)
		cg.Spec.OffsetReset = &v1alpha1.OffsetReset{ID: "r1", Topic: topic, Earliest: true}
		Expect(k8s.Create(ctx, cg)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, group)()).To(Succeed())
			g.Expect(cg.Status.LastOffsetReset).NotTo(BeNil())
			g.Expect(cg.Status.LastOffsetReset.ID).To(Equal("r1"))
		}, "10s").Should(Succeed())
		Expect(cg.Status.LastOffsetReset.Queues).To(Equal(changes(topic, lc.brokerName, ends, zero)))
		Expect(cg.Status.Brokers).To(Equal([]string{lc.brokerName}))
		consumer, _ = lc.offsets(group, topic)
		Expect(consumer).To(Equal(zero), "offsets on the broker after r1")
		Expect(lc.queried(group, topic, queues)).To(Equal(zero), "QUERY_CONSUMER_OFFSET after r1")
		// The subscription group was created on the broker, too.
		groups, err := lc.admin.SubscriptionGroups(ctx, lc.brokerAddr)
		Expect(err).NotTo(HaveOccurred())
		Expect(groups).To(HaveKey(group))
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, group)()).To(Succeed())
			g.Expect(cg.Status.Lag).To(Equal([]v1alpha1.TopicLag{{Topic: topic, Lag: sum(ends)}}))
			g.Expect(cg.Status.TotalLag).To(Equal(sum(ends)))
		}, "5s").Should(Succeed())

		By("r1 again: a spec change reconciles, but the applied id does not move the offsets")
		moved := map[int32]int64{0: 1, 1: 2, 2: 3, 3: 4} // one message left per queue
		lc.commit(group, topic, moved)
		Eventually(update(cg, func() { cg.Spec.RetryMaxTimes = ptr.To[int32](3) })).Should(Succeed())
		gen := cg.Generation
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, group)()).To(Succeed())
			g.Expect(cg.Status.ObservedGeneration).To(Equal(gen))
			g.Expect(cg.Status.Lag).To(Equal([]v1alpha1.TopicLag{{Topic: topic, Lag: queues}}), "lag = max - committed")
			g.Expect(cg.Status.TotalLag).To(Equal(int64(queues)))
		}, "5s").Should(Succeed())
		groups, err = lc.admin.SubscriptionGroups(ctx, lc.brokerAddr)
		Expect(err).NotTo(HaveOccurred())
		Expect(groups[group].RetryMaxTimes).To(Equal(3), "the spec change reached the broker")
		// Periodic lag refreshes reconcile every second meanwhile.
		Consistently(func(g Gomega) {
			consumer, _ := lc.offsets(group, topic)
			g.Expect(consumer).To(Equal(moved))
		}, "2500ms", "250ms").Should(Succeed())
		Expect(lc.queried(group, topic, queues)).To(Equal(moved), "QUERY_CONSUMER_OFFSET after r1 again")
		Expect(get(cg, ns, group)()).To(Succeed())
		Expect(cg.Status.LastOffsetReset.ID).To(Equal("r1"))
		Expect(cg.Status.LastOffsetReset.Queues).To(Equal(changes(topic, lc.brokerName, ends, zero)))

		By("r2: latest moves every queue to its end")
		Eventually(update(cg, func() {
			cg.Spec.OffsetReset = &v1alpha1.OffsetReset{ID: "r2", Topic: topic, Latest: true}
		})).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, group)()).To(Succeed())
			g.Expect(cg.Status.LastOffsetReset.ID).To(Equal("r2"))
		}, "10s").Should(Succeed())
		Expect(cg.Status.LastOffsetReset.Queues).To(Equal(changes(topic, lc.brokerName, moved, ends)))
		consumer, _ = lc.offsets(group, topic)
		Expect(consumer).To(Equal(ends), "offsets on the broker after r2")
		Expect(lc.queried(group, topic, queues)).To(Equal(ends), "QUERY_CONSUMER_OFFSET after r2")
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, group)()).To(Succeed())
			g.Expect(cg.Status.Lag).To(Equal([]v1alpha1.TopicLag{{Topic: topic, Lag: 0}}))
			g.Expect(cg.Status.TotalLag).To(BeZero())
		}, "5s").Should(Succeed())

		By("r3: a timestamp lands on the first message stored at or after it")
		// spec.offsetReset.timestamp has whole seconds: start the second batch in a new second.
		at := time.Now().Truncate(time.Second).Add(time.Second)
		time.Sleep(time.Until(at) + 20*time.Millisecond)
		for q := range queues {
			lc.send(topic, q, 3)
		}
		total := map[int32]int64{}
		for q, e := range ends {
			total[q] = e + 3
		}
		Eventually(func(g Gomega) {
			_, end := lc.offsets(group, topic)
			g.Expect(end).To(Equal(total))
		}, "5s").Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, group)()).To(Succeed())
			g.Expect(cg.Status.TotalLag).To(Equal(int64(3*queues)), "new messages show as lag")
		}, "5s").Should(Succeed())
		lc.commit(group, topic, total)
		mt := metav1.NewTime(at)
		Eventually(update(cg, func() {
			cg.Spec.OffsetReset = &v1alpha1.OffsetReset{ID: "r3", Topic: topic, Timestamp: &mt}
		})).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, group)()).To(Succeed())
			g.Expect(cg.Status.LastOffsetReset.ID).To(Equal("r3"))
		}, "10s").Should(Succeed())
		Expect(cg.Status.LastOffsetReset.Queues).To(Equal(changes(topic, lc.brokerName, total, ends)))
		consumer, _ = lc.offsets(group, topic)
		Expect(consumer).To(Equal(ends), "offsets on the broker after r3")
		Expect(lc.queried(group, topic, queues)).To(Equal(ends), "QUERY_CONSUMER_OFFSET after r3")
		Eventually(func(g Gomega) {
			g.Expect(get(cg, ns, group)()).To(Succeed())
			g.Expect(cg.Status.Lag).To(Equal([]v1alpha1.TopicLag{{Topic: topic, Lag: 3 * queues}}))
			g.Expect(cg.Status.TotalLag).To(Equal(int64(3 * queues)))
		}, "5s").Should(Succeed())
		Expect(eventReasons(ns, group)).To(ContainElements("OffsetsReset", "SubscriptionGroupUpdated"))
	})
})
