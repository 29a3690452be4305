package controllers

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/pkg/acl"
)

// fakeAdmin records every broker call; stats are served from a per-address table.
type fakeAdmin struct {
	mu    sync.Mutex
	calls []adminCall
	// stats: addr -> queues GET_CONSUME_STATS returns (filtered by group and topic).
	stats map[string][]QueueOffset
	// fail makes calls to the named method fail.
	fail map[string]error

	// topics: addr -> the broker's topic table; kv: name server, namespace and key -> value.
	topics map[string]map[string]TopicConfig
	kv     map[string]string
	// groups: addr -> the subscription groups the broker knows; offsets: addr -> its
	// commitLogMaxOffset (0 when not set).
	groups  map[string][]string
	offsets map[string]int64
	// runtime: addr -> GET_BROKER_RUNTIME_INFO keys beyond commitLogMaxOffset; a role
	// change (UpdateBrokerConfig with brokerRole) updates brokerRole and masterEpoch as
	// the broker would once it reopened.
	runtime map[string]map[string]string
	// unregistered: "namesrv brokerName id" entries the fake name servers do not hold;
	// they hold every other member (ids 0-4) of every group.
	unregistered map[string]bool
	// accounts the fake brokers accept (ProbeAccount): accessKey -> secretKey.
	accounts map[string]string

	// A signing copy (WithCredentials) records into parent, with the access key in As.
	parent *fakeAdmin
	as     string
	signed []string // access keys WithCredentials was called with
}

type adminCall struct {
	Method string
	Addr   string
	Args   string
	As     string // the access key a signing copy signed with; "" unsigned
}

var _ CredentialedAdmin = (*fakeAdmin)(nil)

// WithCredentials returns a copy that records into f, marking its calls with the key.
func (f *fakeAdmin) WithCredentials(c acl.Credentials) (BrokerAdmin, io.Closer) {
	r := f.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.signed = append(r.signed, c.AccessKey)
	return &fakeAdmin{parent: r, as: c.AccessKey}, nopCloser{}
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

func (f *fakeAdmin) root() *fakeAdmin {
	if f.parent != nil {
		return f.parent
	}
	return f
}

func newFakeAdmin() *fakeAdmin {
	return &fakeAdmin{stats: map[string][]QueueOffset{}, fail: map[string]error{},
		topics: map[string]map[string]TopicConfig{}, kv: map[string]string{}, accounts: map[string]string{},
		groups: map[string][]string{}, offsets: map[string]int64{}, unregistered: map[string]bool{},
		runtime: map[string]map[string]string{}}
}

func (f *fakeAdmin) record(method, addr, format string, args ...any) error {
	r := f.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, adminCall{method, addr, fmt.Sprintf(format, args...), f.as})
	return r.fail[method]
}

// callsFor returns the calls of one method whose Args contain substr.
func (f *fakeAdmin) callsFor(method, substr string) []adminCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []adminCall
	for _, c := range f.calls {
		if c.Method == method && strings.Contains(c.Args, substr) {
			out = append(out, c)
		}
	}
	return out
}

// callAddrs is the distinct addresses the calls went to, sorted.
func callAddrs(calls []adminCall) []string {
	var addrs []string
	for _, c := range calls {
		addrs = append(addrs, c.Addr)
	}
	slices.Sort(addrs)
	return slices.Compact(addrs)
}

func (f *fakeAdmin) setStats(addr string, q []QueueOffset) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats[addr] = q
}

func (f *fakeAdmin) setFail(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[method] = err
}

func (f *fakeAdmin) UpdateBrokerConfig(_ context.Context, addr string, props map[string]string) error {
	if err := f.record("UpdateBrokerConfig", addr, "%v", props); err != nil {
		return err
	}
	r := f.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	if role, ok := props["brokerRole"]; ok {
		rt := r.runtimeOf(addr)
		rt["brokerRole"] = role
		if e, ok := props["masterEpoch"]; ok {
			rt["masterEpoch"] = e
		}
	}
	return nil
}

// runtimeOf is addr's runtime table, created; r.mu held.
func (f *fakeAdmin) runtimeOf(addr string) map[string]string {
	rt := f.runtime[addr]
	if rt == nil {
		rt = map[string]string{}
		f.runtime[addr] = rt
	}
	return rt
}

func (f *fakeAdmin) setRuntime(addr, key, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runtimeOf(addr)[key] = value
}

func (f *fakeAdmin) RuntimeInfo(_ context.Context, addr string) (map[string]string, error) {
	r := f.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.fail["RuntimeInfo"]; err != nil {
		return nil, err
	}
	out := map[string]string{"commitLogMaxOffset": fmt.Sprint(r.offsets[addr])}
	for k, v := range r.runtime[addr] {
		out[k] = v
	}
	return out, nil
}

func (f *fakeAdmin) CreateOrUpdateSubscriptionGroup(_ context.Context, addr string, cfg SubscriptionGroup) error {
	return f.record("CreateOrUpdateSubscriptionGroup", addr, "%+v", cfg)
}

func (f *fakeAdmin) DeleteSubscriptionGroup(_ context.Context, addr, group string) error {
	return f.record("DeleteSubscriptionGroup", addr, "group=%s", group)
}

func (f *fakeAdmin) ResetOffset(_ context.Context, addr, topic, group string, ts int64) ([]QueueOffset, error) {
	if err := f.record("ResetOffset", addr, "group=%s topic=%s ts=%d", group, topic, ts); err != nil {
		return nil, err
	}
	r := f.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []QueueOffset
	for _, q := range r.stats[addr] {
		if q.Topic == topic {
			q.ConsumerOffset = max(ts, 0) % 1000 // a recognisable "after"
			out = append(out, q)
		}
	}
	return out, nil
}

func (f *fakeAdmin) CloneGroupOffset(_ context.Context, addr, src, dst, topic string) error {
	return f.record("CloneGroupOffset", addr, "src=%s dst=%s topic=%s", src, dst, topic)
}

func (f *fakeAdmin) ConsumeStats(_ context.Context, addr, group, topic string) ([]QueueOffset, error) {
	r := f.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.fail["ConsumeStats"]; err != nil {
		return nil, err
	}
	var out []QueueOffset
	for _, q := range r.stats[addr] {
		if topic == "" || q.Topic == topic {
			out = append(out, q)
		}
	}
	return out, nil
}

func (f *fakeAdmin) SubscriptionGroups(_ context.Context, addr string) ([]string, error) {
	if err := f.record("SubscriptionGroups", addr, ""); err != nil {
		return nil, err
	}
	r := f.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.groups[addr]), nil
}

func (f *fakeAdmin) CommitLogMaxOffset(_ context.Context, addr string) (int64, error) {
	r := f.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.fail["CommitLogMaxOffset"]; err != nil {
		return 0, err
	}
	return r.offsets[addr], nil // 0 unless set: every broker caught up
}

func (f *fakeAdmin) RegisteredMembers(_ context.Context, namesrvAddr, brokerName string) (map[int64]string, error) {
	r := f.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.fail["RegisteredMembers"]; err != nil {
		return nil, err
	}
	out := map[int64]string{}
	for id := range int64(5) {
		if !r.unregistered[fmt.Sprintf("%s %s %d", namesrvAddr, brokerName, id)] {
			out[id] = fmt.Sprintf("%s-%d", brokerName, id)
		}
	}
	return out, nil
}

// The fake's brokers keep topic tables per address; its name servers route every topic the
// fake brokers of their namespace hold, as if every broker registered at once. The
// group of an address is read from the pod's DNS name (rmq-broker-b-0.rmq-broker-b-headless...).

var groupInAddr = regexp.MustCompile(`broker-[a-z]`)

func brokerNameOf(addr string) string {
	host, _, _ := strings.Cut(addr, ".")
	m := groupInAddr.FindAllString(host, -1)
	if len(m) == 0 {
		return addr
	}
	return m[len(m)-1]
}

// namespaceOf is the namespace in a pod's DNS name (pod.service.namespace.svc:port), so
// that the fake name servers of one test's namespace route only its brokers.
func namespaceOf(addr string) string {
	labels := strings.Split(addr, ".")
	if len(labels) < 3 {
		return ""
	}
	return labels[2]
}

func (f *fakeAdmin) CreateOrUpdateTopic(_ context.Context, addr string, t TopicConfig) error {
	if err := f.record("CreateOrUpdateTopic", addr, "%+v", t); err != nil {
		return err
	}
	r := f.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.topics[addr] == nil {
		r.topics[addr] = map[string]TopicConfig{}
	}
	r.topics[addr][t.Name] = t
	return nil
}

func (f *fakeAdmin) DeleteTopic(_ context.Context, addr, topic string) error {
	if err := f.record("DeleteTopic", addr, "topic=%s", topic); err != nil {
		return err
	}
	r := f.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.topics[addr], topic)
	return nil
}

func (f *fakeAdmin) TopicConfigs(_ context.Context, addr string) (map[string]TopicConfig, error) {
	r := f.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.fail["TopicConfigs"]; err != nil {
		return nil, err
	}
	out := map[string]TopicConfig{}
	for k, v := range r.topics[addr] {
		out[k] = v
	}
	return out, nil
}

func (f *fakeAdmin) TopicStats(_ context.Context, addr, topic string) ([]QueueOffset, error) {
	r := f.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.topics[addr][topic]
	if !ok {
		return nil, fmt.Errorf("topic[%s] not exist", topic)
	}
	var out []QueueOffset
	for q := range t.WriteQueueNums {
		out = append(out, QueueOffset{Topic: topic, BrokerName: brokerNameOf(addr), QueueID: q, BrokerOffset: 10})
	}
	return out, nil
}

func (f *fakeAdmin) TopicRoute(_ context.Context, namesrvAddr, topic string) (map[string]v1alpha1.TopicQueues, error) {
	r := f.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]v1alpha1.TopicQueues{}
	for addr, table := range r.topics {
		if t, ok := table[topic]; ok && namespaceOf(addr) == namespaceOf(namesrvAddr) {
			out[brokerNameOf(addr)] = v1alpha1.TopicQueues{ReadQueueNums: t.ReadQueueNums, WriteQueueNums: t.WriteQueueNums, Perm: t.Perm}
		}
	}
	return out, nil
}

func (f *fakeAdmin) DeleteTopicRoute(_ context.Context, namesrvAddr, topic, cluster string) error {
	return f.record("DeleteTopicRoute", namesrvAddr, "topic=%s cluster=%s", topic, cluster)
}

func (f *fakeAdmin) KV(_ context.Context, namesrvAddr, namespace, key string) (string, bool, error) {
	r := f.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.kv[namesrvAddr+"/"+namespace+"/"+key]
	return v, ok, nil
}

func (f *fakeAdmin) PutKV(_ context.Context, namesrvAddr, namespace, key, value string) error {
	if err := f.record("PutKV", namesrvAddr, "%s/%s=%s", namespace, key, value); err != nil {
		return err
	}
	r := f.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kv[namesrvAddr+"/"+namespace+"/"+key] = value
	return nil
}

func (f *fakeAdmin) DeleteKV(_ context.Context, namesrvAddr, namespace, key string) error {
	if err := f.record("DeleteKV", namesrvAddr, "%s/%s", namespace, key); err != nil {
		return err
	}
	r := f.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.kv, namesrvAddr+"/"+namespace+"/"+key)
	return nil
}

func (f *fakeAdmin) WipeWritePerm(_ context.Context, namesrvAddr, brokerName string) (int, error) {
	return 0, f.record("WipeWritePerm", namesrvAddr, "%s", brokerName)
}

func (f *fakeAdmin) AddWritePerm(_ context.Context, namesrvAddr, brokerName string) (int, error) {
	return 0, f.record("AddWritePerm", namesrvAddr, "%s", brokerName)
}

// hasTopic says whether the fake broker at addr holds topic.
func (f *fakeAdmin) hasTopic(addr, topic string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.topics[addr][topic]
	return ok
}

// ProbeAccount accepts the accounts set with accept, on every address.
func (f *fakeAdmin) ProbeAccount(_ context.Context, addr string, creds acl.Credentials) error {
	r := f.root()
	_ = f.record("ProbeAccount", addr, "accessKey=%s", creds.AccessKey)
	r.mu.Lock()
	defer r.mu.Unlock()
	sk, ok := r.accounts[creds.AccessKey]
	switch {
	case !ok:
		return fmt.Errorf("No acl config for %s", creds.AccessKey)
	case sk != creds.SecretKey:
		return fmt.Errorf("Check signature failed for accessKey=%s", creds.AccessKey)
	}
	return nil
}

func (f *fakeAdmin) accept(accessKey, secretKey string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.accounts[accessKey] = secretKey
}
