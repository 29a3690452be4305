package controllers

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// fakeAdmin records every broker call; stats are served from a per-address table.
type fakeAdmin struct {
	mu    sync.Mutex
	calls []adminCall
	// stats: addr -> queues GET_CONSUME_STATS returns (filtered by group and topic).
	stats map[string][]QueueOffset
	// fail makes calls to the named method fail.
	fail map[string]error
}

type adminCall struct {
	Method string
	Addr   string
	Args   string
}

func newFakeAdmin() *fakeAdmin {
	return &fakeAdmin{stats: map[string][]QueueOffset{}, fail: map[string]error{}}
}

func (f *fakeAdmin) record(method, addr, format string, args ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, adminCall{method, addr, fmt.Sprintf(format, args...)})
	return f.fail[method]
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
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []QueueOffset
	for _, q := range f.stats[addr] {
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
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail["ConsumeStats"]; err != nil {
		return nil, err
	}
	var out []QueueOffset
	for _, q := range f.stats[addr] {
		if topic == "" || q.Topic == topic {
			out = append(out, q)
		}
	}
	return out, nil
}
