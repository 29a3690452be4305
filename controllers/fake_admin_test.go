package controllers

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

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
	return &fakeAdmin{stats: map[string][]QueueOffset{}, fail: map[string]error{}}
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
	return f.record("UpdateBrokerConfig", addr, "%v", props)
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
