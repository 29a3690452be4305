package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/client"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// Route refresh, as the official clients do it: the topic's route is asked for again every
// routeRefresh (the Java and Go clients' pollNameServerInterval, 30 s) and, sooner, after
// a send or pull fails (at most once per routeRetry), so that a broker that restarted on
// another address, a pod with a new IP, is found again within a second or so.
const (
	routeRefresh = 30 * time.Second
	routeRetry   = time.Second
)

// routeTable holds a topic's current queues and its brokers' master addresses.
type routeTable struct {
	cl      *client.Client
	topic   string
	masters atomic.Pointer[map[string]string] // broker name -> master address
	queues  atomic.Pointer[[]client.MessageQueue]
	failed  chan struct{}
}

// newRouteTable starts with queues (those the setup resolved) and refreshes until ctx ends.
func newRouteTable(ctx context.Context, cl *client.Client, topic string, queues []client.MessageQueue) *routeTable {
	t := &routeTable{cl: cl, topic: topic, failed: make(chan struct{}, 1)}
	t.queues.Store(&queues)
	masters := map[string]string{}
	for _, q := range queues {
		masters[q.BrokerName] = q.Addr
	}
	t.masters.Store(&masters)
	go t.run(ctx)
	return t
}

func (t *routeTable) run(ctx context.Context) {
	tick := time.NewTicker(routeRefresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-t.failed:
		}
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if route, err := t.cl.Route(rctx, t.topic); err == nil {
			t.update(route)
		}
		cancel()
		select { // no more than one refresh a routeRetry
		case <-ctx.Done():
			return
		case <-time.After(routeRetry):
		}
	}
}

// update takes a route just read. A route without writable queues (the topic not created
// yet: the producer sends through TBW102's) keeps the queues it had.
func (t *routeTable) update(route *protocol.TopicRouteData) {
	masters := client.MasterAddrs(route)
	t.masters.Store(&masters)
	if qs := client.WriteQueues(route, t.topic, 0); len(qs) > 0 {
		t.queues.Store(&qs)
	}
}

// Queues are the current writable queues.
func (t *routeTable) Queues() []client.MessageQueue { return *t.queues.Load() }

// Current is mq at its broker's current master address.
func (t *routeTable) Current(mq client.MessageQueue) client.MessageQueue {
	if a := (*t.masters.Load())[mq.BrokerName]; a != "" {
		mq.Addr = a
	}
	return mq
}

// Failed asks for a refresh soon.
func (t *routeTable) Failed() {
	select {
	case t.failed <- struct{}{}:
	default:
	}
}
