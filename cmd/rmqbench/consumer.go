package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/client"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

type consumerOptions struct {
	namesrv   string
	topic     string
	group     string
	duration  time.Duration
	interval  time.Duration
	fromFirst bool
	count     int64 // > 0: stop after this many messages
	batch     int
	suspend   time.Duration
}

type consumerStats struct {
	b2c, s2c  latency // born to consumed, stored to consumed
	bytes     atomic.Int64
	pullFails atomic.Int64
	// first and last receipt (unix ns), for the TPS of the span messages flowed.
	first, last atomic.Int64
}

type consumerResult struct {
	received int64
	elapsed  time.Duration
}

func runConsumer(ctx context.Context, o consumerOptions, out io.Writer) (*consumerResult, error) {
	rc := newRemoting()
	defer rc.Close()
	cl := client.New(rc, o.namesrv)

	if o.duration > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, o.duration)
		defer stop()
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()

	st := &consumerStats{}
	// Queues by topic, broker and id; their address is the route table's current one.
	started := map[client.MessageQueue]bool{}
	var routes *routeTable
	var wg sync.WaitGroup
	var mu sync.Mutex
	final := map[client.MessageQueue]int64{}

	// startQueues starts a puller for every readable queue not pulled yet. Queues that
	// appear after the first route (auto-created topic growing) start at their beginning.
	startQueues := func(first bool) error {
		route, err := cl.Route(ctx, o.topic)
		if err != nil {
			return err
		}
		if routes == nil {
			routes = newRouteTable(ctx, cl, o.topic, nil)
		}
		routes.update(route)
		for _, mq := range client.ReadQueues(route, o.topic) {
			mq.Addr = ""
			if started[mq] {
				continue
			}
			var off int64
			if !first || o.fromFirst {
				off, err = cl.MinOffset(ctx, routes.Current(mq))
			} else {
				off, err = cl.MaxOffset(ctx, routes.Current(mq))
			}
			if err != nil {
				return fmt.Errorf("start offset of %s: %w", mq, err)
			}
			started[mq] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				end := pullQueue(ctx, cl, &o, routes, mq, off, st, stop)
				mu.Lock()
				final[mq] = end
				mu.Unlock()
			}()
		}
		return nil
	}

	// Wait for the topic: the consumer may start before the producer auto-creates it.
	for {
		err := startQueues(true)
		if err == nil {
			break
		}
		if !errors.Is(err, client.ErrTopicNotExist) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("topic %s never appeared: %w", o.topic, err)
		case <-time.After(time.Second):
		}
	}
	mu.Lock()
	nq := len(started)
	mu.Unlock()
	where := "max offset (new messages only)"
	if o.fromFirst {
		where = "min offset"
	}
	fmt.Fprintf(out, "consumer: topic %s, group %s, %d queues, starting at %s, long polling %v\n", o.topic, o.group, nq, where, o.suspend)
	cpu0 := processCPU()
	begin := time.Now()

	go func() { // pick up queues added later
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_ = startQueues(false) // a failed route lookup is tried again at the next tick
			}
		}
	}()

	reportDone := make(chan struct{})
	go func() {
		defer close(reportDone)
		report(ctx, o.interval, out, func(prev, cur snapshot) {
			dt := cur.at.Sub(prev.at).Seconds()
			dn := cur.n - prev.n
			avgB, avgS := 0.0, 0.0
			if dn > 0 {
				avgB = float64(cur.sum-prev.sum) / float64(dn)
				avgS = float64(cur.failures[1]-prev.failures[1]) / float64(dn)
			}
			fmt.Fprintf(out, "%s | Consume TPS: %d | AVG(B2C) RT(ms): %7.3f | AVG(S2C) RT(ms): %7.3f | MAX(B2C) RT(ms): %.3f | MAX(S2C) RT(ms): %.3f | Pull Failed: %d\n",
				cur.at.Format("15:04:05"), int64(float64(dn)/dt), ms(avgB), ms(avgS),
				ms(float64(st.b2c.intervalMax.Swap(0))), ms(float64(st.s2c.intervalMax.Swap(0))), cur.failures[0])
		}, func() snapshot {
			// failures[1] carries the S2C sum.
			return snapshot{at: time.Now(), n: st.b2c.n.Load(), sum: st.b2c.sum.Load(),
				failures: [2]int64{st.pullFails.Load(), st.s2c.sum.Load()}}
		})
	}()

	wg.Wait()
	elapsed := time.Since(begin)
	cpu := cpuSince(cpu0)
	stop()
	<-reportDone

	// Store the final offsets, as a consumer does on shutdown.
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	for mq, off := range final {
		if off > 0 {
			if err := cl.CommitOffset(cctx, routes.Current(mq), o.group, off); err != nil {
				fmt.Fprintf(out, "commit offset of %s: %v\n", mq, err)
			}
		}
	}
	cancel()

	res := &consumerResult{received: st.b2c.n.Load(), elapsed: elapsed}
	// TPS over the span messages arrived in, not the idle time around it.
	span := time.Duration(st.last.Load() - st.first.Load())
	if span <= 0 {
		span = elapsed
	}
	rows := []summaryRow{
		{name: "B2C", duration: span, count: res.received, bytes: st.bytes.Load(), lat: &st.b2c},
		{name: "S2C", duration: span, count: res.received, bytes: st.bytes.Load(), lat: &st.s2c},
	}
	printSummary(out, "Consumer summary (B2C = born timestamp to received, S2C = store timestamp to received; ms clock)", rows,
		[]string{fmt.Sprintf("ran %.1f s, messages flowed for %.1f s (the duration column); pull failed: %d",
			elapsed.Seconds(), span.Seconds(), st.pullFails.Load()),
			"client CPU (user+system of rmqbench while pulling): " + cpu + " s"})
	printResults(out, "consumer", rows, fmt.Sprintf("errors=%d pull_failed=%d client_cpu_s=%s", st.pullFails.Load(), st.pullFails.Load(), cpu))
	return res, nil
}

// pullQueue pulls mq from offset until ctx ends and returns the offset reached. The
// offset consumed so far rides on each pull as commitOffset, as Java's consumer does.
func pullQueue(ctx context.Context, cl *client.Client, o *consumerOptions, routes *routeTable, mq client.MessageQueue, offset int64,
	st *consumerStats, stop context.CancelFunc) int64 {
	for ctx.Err() == nil {
		r, err := cl.Pull(ctx, routes.Current(mq), client.PullRequest{Group: o.group, Offset: offset, MaxNums: o.batch,
			Suspend: o.suspend, CommitOffset: offset})
		if err != nil {
			if ctx.Err() == nil {
				st.pullFails.Add(1)
				routes.Failed() // the broker may have moved
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		switch r.Status {
		case client.Found:
			at := time.Now()
			now := at.UnixMilli()
			st.first.CompareAndSwap(0, at.UnixNano())
			st.last.Store(at.UnixNano())
			err := client.ForEachRecord(r.Body, func(v *message.RecordView) error {
				st.b2c.add(time.Duration(now-client.BornTimestamp(v)) * time.Millisecond)
				st.s2c.add(time.Duration(now-v.StoreTimestamp()) * time.Millisecond)
				st.bytes.Add(int64(len(v.Body())))
				return nil
			})
			if err != nil {
				st.pullFails.Add(1)
			}
			if o.count > 0 && st.b2c.n.Load() >= o.count {
				stop()
			}
		case client.OffsetIllegal:
			// fall through to nextBeginOffset
		}
		if r.NextBeginOffset > offset || r.Status == client.OffsetIllegal {
			offset = r.NextBeginOffset
		}
	}
	return offset
}
