package e2e

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// committed returns the broker's committed offset of group per queue (-1: none).
func committed(t *testing.T, b *brokerProc, group, topic string, queues int) []int64 {
	t.Helper()
	out := make([]int64, queues)
	for q := range queues {
		resp := invoke(t, b.addr, remoting.QueryConsumerOffset, map[string]string{
			"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(q)}, nil)
		out[q] = -1
		if resp.Code == remoting.Success {
			out[q], _ = strconv.ParseInt(resp.Field("offset"), 10, 64)
		}
	}
	return out
}

// maxOffsets returns the max offset of each queue (GET_MAX_OFFSET).
func maxOffsets(t *testing.T, b *brokerProc, topic string, queues int) []int64 {
	t.Helper()
	out := make([]int64, queues)
	for q := range queues {
		resp := invoke(t, b.addr, remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": strconv.Itoa(q)}, nil)
		out[q], _ = strconv.ParseInt(resp.Field("offset"), 10, 64)
	}
	return out
}

func sum(v []int64) int64 {
	var s int64
	for _, x := range v {
		s += x
	}
	return s
}

// TestOffsetsSurviveRestart: offsets a group committed are there after the broker
// restarts, after SIGTERM at once and after SIGKILL once the 5 s persist period passed;
// a consumer of the group then gets only the new messages.
func TestOffsetsSurviveRestart(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		name := map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGKILL: "SIGKILL"}[sig]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := startTestBroker(t, "broker-restart-"+name, nil)
			topic, group := "E2ERestart"+name, "E2ERestartG"+name
			createTopic(t, b, topic, 2)
			p := newProducer(t, "E2ERestartP"+name)
			for i := range 20 {
				sendSync(t, p, msg(topic, fmt.Sprintf("old-%d", i), ""))
			}
			c, col := startPush(t, group, topic, pushOpts{from: consumer.ConsumeFromFirstOffset})
			eventually(t, 30*time.Second, "20 messages consumed", func() bool { return col.distinct() == 20 })
			c.Shutdown() // commits the offsets
			eventually(t, 10*time.Second, "offsets committed", func() bool { return sum(committed(t, b, group, topic, 2)) == 20 })
			p.Shutdown()
			if sig == syscall.SIGKILL {
				time.Sleep(6 * time.Second) // one consumerOffset.json persist period and a bit
			}
			if err := b.stop(sig); err != nil && sig == syscall.SIGTERM {
				t.Fatalf("broker exit after SIGTERM: %v", err)
			}
			if err := b.start(); err != nil {
				t.Fatal(err)
			}
			if got := committed(t, b, group, topic, 2); sum(got) != 20 {
				t.Fatalf("offsets after restart %v, want a total of 20", got)
			}
			waitRoute(t, topic, true)
			p2 := newProducer(t, "E2ERestartP2"+name)
			for i := range 5 {
				sendSync(t, p2, msg(topic, fmt.Sprintf("new-%d", i), ""))
			}
			_, col2 := startPush(t, group, topic, pushOpts{from: consumer.ConsumeFromFirstOffset})
			eventually(t, 30*time.Second, "5 new messages consumed", func() bool { return col2.distinct() == 5 })
			time.Sleep(500 * time.Millisecond)
			col2.mu.Lock()
			defer col2.mu.Unlock()
			for body := range col2.msgs {
				if body[:4] != "new-" {
					t.Errorf("re-delivered %s after the restart", body)
				}
			}
		})
	}
}

// TestConsumeFromWhere: a new group with CONSUME_FROM_LAST_OFFSET skips the history and
// one with CONSUME_FROM_FIRST_OFFSET does not.
//
// As on the Java broker, a new group on a queue whose first message is still in memory
// is told offset 0 and starts from the beginning whatever its setting; the broker here
// is started with accessMessageInMemoryMaxRatio=0 so that history counts as on disk.
func TestConsumeFromWhere(t *testing.T) {
	b := startTestBroker(t, "broker-from", map[string]string{"accessMessageInMemoryMaxRatio": "0"})
	const topic = "E2EFromWhere"
	createTopic(t, b, topic, 2)
	p := newProducer(t, "E2EFromWhereP")
	for i := range 10 {
		sendSync(t, p, msg(topic, fmt.Sprintf("history-%d", i), ""))
	}
	// The history must be in the consume queues (the store dispatches behind the
	// commitlog) before the groups ask where to start.
	eventually(t, 5*time.Second, "10 messages in the queues", func() bool { return sum(maxOffsets(t, b, topic, 2)) == 10 })
	_, last := startPush(t, "E2EFromLastG", topic, pushOpts{from: consumer.ConsumeFromLastOffset})
	_, first := startPush(t, "E2EFromFirstG", topic, pushOpts{from: consumer.ConsumeFromFirstOffset})
	// Both have started pulling once their offsets are committed to the end or below.
	eventually(t, 30*time.Second, "the first-offset group to get the history", func() bool { return first.distinct() == 10 })
	// Once idle, both groups have a pull held on each of the 2 queues.
	eventually(t, 30*time.Second, "the last-offset group to start pulling", func() bool { return heldPulls(t, b) >= 4 })
	sendSync(t, p, msg(topic, "fresh", ""))
	eventually(t, 30*time.Second, "both groups to get the fresh message", func() bool { return last.has("fresh") && first.has("fresh") })
	if n := last.distinct(); n != 1 {
		t.Fatalf("the last-offset group received %d messages, want only the fresh one", n)
	}
}

// heldPulls is the broker's number of held (long-polling) pulls.
func heldPulls(t *testing.T, b *brokerProc) int {
	resp := invoke(t, b.addr, remoting.GetBrokerRuntimeInfo, nil, nil)
	var v struct {
		Table map[string]string `json:"table"`
	}
	if resp.Code != remoting.Success || jsonUnmarshal(resp.Body, &v) != nil {
		return 0
	}
	n, _ := strconv.Atoi(v.Table["pullRequestHoldNum"])
	return n
}

// TestPullConsumerByOffset: the pull consumer reads a queue from a given offset.
func TestPullConsumerByOffset(t *testing.T) {
	topic := runName(t, "E2EPull")
	createTopic(t, shared, topic, 1)
	p := newProducer(t, "E2EPullP")
	for i := range 10 {
		sendSync(t, p, msg(topic, fmt.Sprintf("pull-%d", i), ""))
	}
	// The consume queue is built behind the commitlog, as in RocketMQ.
	eventually(t, 5*time.Second, "10 messages in the queue", func() bool { return sum(maxOffsets(t, shared, topic, 1)) == 10 })
	pc := startPull(t, runName(t, "E2EPullG"), topic, "pull")
	mqs, err := pc.GetTopicRouteInfo(topic)
	if err != nil || len(mqs) != 1 {
		t.Fatalf("route: %v %v", mqs, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := pc.PullFrom(ctx, mqs[0], 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.GetMessageExts()) != 3 || res.NextBeginOffset != 7 || res.MaxOffset != 10 {
		t.Fatalf("pull from 4: %d messages, next %d, max %d", len(res.GetMessageExts()), res.NextBeginOffset, res.MaxOffset)
	}
	for i, m := range res.GetMessageExts() {
		if want := fmt.Sprintf("pull-%d", 4+i); string(m.Body) != want || m.QueueOffset != int64(4+i) {
			t.Errorf("message %d: %q at %d, want %s", i, m.Body, m.QueueOffset, want)
		}
	}
}
