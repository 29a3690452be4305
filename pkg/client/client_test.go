package client_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	brokerconfig "github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/internal/testcluster"
	"github.com/openrmq/rocketmq-operator/pkg/client"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// startCluster runs a name server and one master broker in-process on loopback and
// returns the name server's address and the broker's.
func startCluster(t *testing.T, autoCreate bool) (string, string) {
	c := testcluster.Start(t, func(bc *brokerconfig.Config) { bc.AutoCreateTopicEnable = autoCreate })
	return c.NamesrvAddr, c.BrokerAddr
}

func waitQueues(t *testing.T, cl *client.Client, topic string, want int) []client.MessageQueue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		route, err := cl.Route(ctx, topic)
		if err == nil {
			if qs := client.WriteQueues(route, topic, 0); len(qs) >= want {
				return qs
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("route of %s: %v", topic, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestSendAndPull(t *testing.T) {
	nsAddr, brokerAddr := startCluster(t, false)
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	cl := client.New(rc, nsAddr)
	ctx := context.Background()

	if _, err := cl.Route(ctx, "NoSuchTopic"); err == nil {
		t.Fatal("route of an unknown topic: want an error")
	}
	const topic, queues = "ClientTest", 4
	if err := cl.CreateTopic(ctx, brokerAddr, topic, queues); err != nil {
		t.Fatal(err)
	}
	qs := waitQueues(t, cl, topic, queues)
	if len(qs) != queues || qs[0].Addr != brokerAddr {
		t.Fatalf("queues: %v", qs)
	}

	// 40 sync and 40 async sends, round-robin.
	const n = 40
	ids := map[string]bool{}
	var mu sync.Mutex
	for i := range n {
		r, err := cl.Send(ctx, qs[i%queues], "pg", &client.Message{Topic: topic, Body: fmt.Appendf(nil, "sync-%d", i), Tags: "TagA", Keys: fmt.Sprint("k", i)})
		if err != nil {
			t.Fatal(err)
		}
		if r.Queue.QueueID != i%queues || r.QueueOffset != int64(i/queues) || r.OffsetMsgID == "" || len(r.MsgID) != 32 {
			t.Fatalf("send %d: %+v", i, r)
		}
		ids[r.MsgID] = true
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		err := cl.SendAsync(ctx, qs[i%queues], "pg", &client.Message{Topic: topic, Body: fmt.Appendf(nil, "async-%d", i)}, 0,
			func(r *client.SendResult, err error) {
				defer wg.Done()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ids[r.MsgID] = true
				mu.Unlock()
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if len(ids) != 2*n {
		t.Fatalf("%d distinct UNIQ_KEYs, want %d", len(ids), 2*n)
	}

	// Pull everything back; then a long poll that a later send wakes up.
	got := map[string]bool{}
	for _, mq := range qs {
		// The consume queue is built by the broker's dispatcher just behind the sends.
		var max int64
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			var err error
			if max, err = cl.MaxOffset(ctx, mq); err != nil {
				t.Fatalf("max offset of %v: %v", mq, err)
			}
			if max == 2*n/queues {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("max offset of %v: %d, want %d", mq, max, 2*n/queues)
			}
		}
		var off int64
		for off < max {
			r, err := cl.Pull(ctx, mq, client.PullRequest{Group: "cg", Offset: off, CommitOffset: off})
			if err != nil || r.Status != client.Found {
				t.Fatalf("pull %v@%d: %+v %v", mq, off, r, err)
			}
			err = client.ForEachRecord(r.Body, func(v *message.RecordView) error {
				if !v.CheckCRC() || string(v.Topic()) != topic || client.BornTimestamp(v) <= 0 {
					return fmt.Errorf("bad record at %d", v.QueueOffset())
				}
				uniq, _ := message.LookupProperty(v.Properties(), message.PropertyUniqClientMessageIDKey)
				got[string(uniq)] = true
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			off = r.NextBeginOffset
		}
		if err := cl.CommitOffset(ctx, mq, "cg", off); err != nil {
			t.Fatal(err)
		}
	}
	for id := range ids {
		if !got[id] {
			t.Fatalf("message %s sent but not pulled", id)
		}
	}

	mq := qs[0]
	done := make(chan *client.PullResult, 1)
	go func() {
		// Suspended far longer than the test runs: only the new message answers it.
		pctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		r, err := cl.Pull(pctx, mq, client.PullRequest{Group: "cg", Offset: 2 * n / queues, Suspend: time.Hour})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	time.Sleep(200 * time.Millisecond) // usually held by then; if not, it finds the message at once
	if _, err := cl.Send(ctx, mq, "pg", &client.Message{Topic: topic, Body: []byte("late")}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r == nil || r.Status != client.Found {
		t.Fatalf("long poll: %+v", r)
	}
}
