package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/admin"
	"github.com/openrmq/rocketmq-operator/pkg/client"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

type producerOptions struct {
	namesrv     string
	topic       string
	group       string
	threads     int
	size        int
	async       bool
	inflight    int // per thread, async only
	duration    time.Duration
	interval    time.Duration
	keys        bool
	tags        string
	create      bool
	queues      int
	sendTimeout time.Duration
}

type producerStats struct {
	rt           latency
	sendFailed   atomic.Int64 // no answer: connection error, timeout
	respFailed   atomic.Int64 // an answer other than SUCCESS (or a stored-not-confirmed code)
	busy         atomic.Int64 // of those, SYSTEM_BUSY: refused by the broker's flow control
	notConfirmed atomic.Int64 // FLUSH_DISK_TIMEOUT and the like: stored, counted as sent
}

// producerResult is what runProducer reports for tests and the summary.
type producerResult struct {
	sent, sendFailed, respFailed int64
	elapsed                      time.Duration
}

// producerQueues resolves the queues to send to: the topic's route, created first with
// -c; else the default topic's (TBW102) first four queues per broker, so that the
// broker auto-creates the topic as Java's producer makes it do.
func producerQueues(ctx context.Context, cl *client.Client, o *producerOptions, log io.Writer) ([]client.MessageQueue, error) {
	if o.create {
		if err := createTopic(ctx, cl, o.namesrv, o.topic, o.queues, log); err != nil {
			// A topic the broker refuses to change (BenchmarkTest is a system topic with
			// 1024 queues, as in Java) is still usable when it is routed.
			if _, rerr := cl.Route(ctx, o.topic); rerr != nil {
				return nil, err
			}
			fmt.Fprintf(log, "warning: %v; using the existing route\n", err)
		}
	}
	route, err := cl.Route(ctx, o.topic)
	if err == nil {
		if qs := client.WriteQueues(route, o.topic, 0); len(qs) > 0 {
			return qs, nil
		}
		return nil, fmt.Errorf("topic %s has no writable queue on a master", o.topic)
	}
	if !errors.Is(err, client.ErrTopicNotExist) {
		return nil, err
	}
	route, err = cl.Route(ctx, protocol.DefaultTopic)
	if err != nil {
		return nil, fmt.Errorf("topic %s does not exist and neither does %s (autoCreateTopicEnable=false?): create it with -c", o.topic, protocol.DefaultTopic)
	}
	fmt.Fprintf(log, "topic %s not in the route table: sending through %s's route, the broker auto-creates it\n", o.topic, protocol.DefaultTopic)
	return client.WriteQueues(route, o.topic, 4), nil
}

// createTopic creates topic on every master of the cluster and waits for the name
// server to route it.
func createTopic(ctx context.Context, cl *client.Client, namesrv, topic string, queues int, log io.Writer) error {
	ad := admin.New(cl.Remoting())
	var info *protocol.ClusterInfo
	var err error
	for _, ns := range splitAddrs(namesrv) {
		if info, err = ad.ClusterInfo(ctx, ns); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("cluster info: %w", err)
	}
	n := 0
	for name, bd := range info.BrokerAddrTable {
		addr := bd.MasterAddr()
		if addr == "" {
			continue
		}
		if err := cl.CreateTopic(ctx, addr, topic, queues); err != nil {
			return fmt.Errorf("create topic %s on %s (%s): %w", topic, name, addr, err)
		}
		fmt.Fprintf(log, "topic %s created on %s (%s) with %d queues\n", topic, name, addr, queues)
		n++
	}
	if n == 0 {
		return errors.New("create topic: no master broker registered with the name server")
	}
	return waitRoute(ctx, cl, topic, n*queues)
}

// waitRoute waits until the route of topic has at least want writable queues.
func waitRoute(ctx context.Context, cl *client.Client, topic string, want int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		route, err := cl.Route(ctx, topic)
		if err == nil && len(client.WriteQueues(route, topic, 0)) >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s not routed by the name server: %v", topic, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func runProducer(ctx context.Context, o producerOptions, out io.Writer) (*producerResult, error) {
	rc := newRemoting()
	defer rc.Close()
	cl := client.New(rc, o.namesrv)

	setupCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	queues, err := producerQueues(setupCtx, cl, &o, out)
	cancel()
	if err != nil {
		return nil, err
	}
	mode := "sync"
	if o.async {
		mode = fmt.Sprintf("async (%d in flight per thread)", o.inflight)
	}
	fmt.Fprintf(out, "producer: topic %s, %d queues, %d threads, %s, body %d B, keys %v, tags %q\n",
		o.topic, len(queues), o.threads, mode, o.size, o.keys, o.tags)

	body := make([]byte, o.size)
	for i := range body {
		body[i] = byte('a' + rand.IntN(26))
	}

	if o.duration > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, o.duration)
		defer stop()
	}
	st := &producerStats{}
	routes := newRouteTable(ctx, cl, o.topic, queues)
	var next atomic.Uint64
	pick := func() client.MessageQueue {
		qs := routes.Queues()
		return qs[int(next.Add(1)%uint64(len(qs)))]
	}
	msgFor := func(thread, seq int) *client.Message {
		m := &client.Message{Topic: o.topic, Body: body, Tags: o.tags}
		if o.keys {
			m.Keys = strconv.FormatInt(time.Now().UnixMilli(), 10) + "-" + strconv.Itoa(thread) + "-" + strconv.Itoa(seq)
		}
		return m
	}
	record := func(start time.Time, r *client.SendResult, err error) {
		var re *client.ResponseError
		switch {
		case errors.As(err, &re):
			st.respFailed.Add(1)
			if re.Code == remoting.SystemBusy {
				st.busy.Add(1)
			}
		case err != nil:
			st.sendFailed.Add(1)
			routes.Failed() // the broker may have moved
		default:
			if r.Code != 0 {
				st.notConfirmed.Add(1)
			}
			st.rt.add(time.Since(start))
		}
	}

	reportDone := make(chan struct{})
	go func() {
		defer close(reportDone)
		report(ctx, o.interval, out, func(prev, cur snapshot) {
			dt := cur.at.Sub(prev.at).Seconds()
			dn := cur.n - prev.n
			avg := 0.0
			if dn > 0 {
				avg = float64(cur.sum-prev.sum) / float64(dn)
			}
			fmt.Fprintf(out, "%s | Send TPS: %d | Max RT(ms): %.3f | Average RT(ms): %7.3f | Send Failed: %d | Response Failed: %d\n",
				cur.at.Format("15:04:05"), int64(float64(dn)/dt), ms(float64(st.rt.intervalMax.Swap(0))), ms(avg),
				cur.failures[0], cur.failures[1])
		}, func() snapshot {
			return snapshot{at: time.Now(), n: st.rt.n.Load(), sum: st.rt.sum.Load(),
				failures: [2]int64{st.sendFailed.Load(), st.respFailed.Load()}}
		})
	}()

	cpu0 := processCPU()
	begin := time.Now()
	var wg sync.WaitGroup
	for t := range o.threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if o.async {
				asyncWorker(ctx, cl, &o, t, pick, msgFor, record, st)
				return
			}
			for seq := 0; ctx.Err() == nil; seq++ {
				start := time.Now()
				sctx, cancel := context.WithTimeout(context.Background(), o.sendTimeout)
				r, err := cl.Send(sctx, pick(), o.group, msgFor(t, seq))
				cancel()
				record(start, r, err)
				if err != nil && ctx.Err() == nil {
					time.Sleep(10 * time.Millisecond) // do not spin on a dead broker
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	cpu := cpuSince(cpu0)
	<-reportDone

	res := &producerResult{sent: st.rt.n.Load(), sendFailed: st.sendFailed.Load(), respFailed: st.respFailed.Load(), elapsed: elapsed}
	rows := []summaryRow{{name: "send", duration: elapsed, count: res.sent, bytes: res.sent * int64(o.size), lat: &st.rt}}
	printSummary(out, "Producer summary ("+mode+", RT = send to response)", rows,
		[]string{fmt.Sprintf("send failed: %d, response failed: %d, stored but not confirmed (flush/slave timeout): %d, refused SYSTEM_BUSY: %d",
			res.sendFailed, res.respFailed, st.notConfirmed.Load(), st.busy.Load()),
			"client CPU (user+system of rmqbench while sending): " + cpu + " s"})
	printResults(out, "producer", rows, fmt.Sprintf("errors=%d send_failed=%d response_failed=%d busy=%d not_confirmed=%d client_cpu_s=%s",
		res.sendFailed+res.respFailed, res.sendFailed, res.respFailed, st.busy.Load(), st.notConfirmed.Load(), cpu))
	return res, nil
}

// asyncWorker keeps up to o.inflight sends outstanding, then waits for them all.
func asyncWorker(ctx context.Context, cl *client.Client, o *producerOptions, t int, pick func() client.MessageQueue,
	msgFor func(int, int) *client.Message, record func(time.Time, *client.SendResult, error), st *producerStats) {
	slots := make(chan struct{}, o.inflight)
	var pending sync.WaitGroup
	defer pending.Wait()
	for seq := 0; ; seq++ {
		select {
		case <-ctx.Done():
			return
		case slots <- struct{}{}:
		}
		if ctx.Err() != nil {
			<-slots
			return
		}
		start := time.Now()
		pending.Add(1)
		err := cl.SendAsync(context.Background(), pick(), o.group, msgFor(t, seq), o.sendTimeout, func(r *client.SendResult, err error) {
			record(start, r, err)
			<-slots
			pending.Done()
		})
		if err != nil {
			pending.Done()
			<-slots
			record(start, nil, err)
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// report calls line with the previous and current snapshot every interval until ctx ends.
func report(ctx context.Context, interval time.Duration, out io.Writer, line func(prev, cur snapshot), snap func() snapshot) {
	if interval <= 0 {
		<-ctx.Done()
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	prev := snap()
	for {
		select {
		case <-ctx.Done():
			// A last line for a partial interval of at least half the period.
			if cur := snap(); cur.at.Sub(prev.at) >= interval/2 {
				line(prev, cur)
			}
			return
		case <-tick.C:
			cur := snap()
			line(prev, cur)
			prev = cur
		}
	}
}
