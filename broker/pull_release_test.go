package broker

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// waitReadersReleased fails unless every read reference to the commitlog is given back:
// pulls send the mapped records themselves and release them once written or dropped.
func waitReadersReleased(t *testing.T, tb *testBroker) {
	t.Helper()
	s := tb.store
	deadline := time.Now().Add(5 * time.Second)
	for {
		refs := s.CommitLogReaders()
		if !slices.ContainsFunc(refs, func(n int64) bool { return n != 0 }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("commitlog segments still held by readers: %v", refs)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPullReleasesStoreRecords(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("ZC", 2)
	for i := range 40 {
		tb.sendV2("ZC", 0, "a", "m"+strconv.Itoa(i))
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("ZC", 0) == 40 })

	// Written: a full batch of 32, then the rest.
	resp := tb.invoke(remoting.PullMessage, pullFields("g", "ZC", 0, 0, pullSubscription, "*"), nil)
	if msgs := decodeAll(t, resp.Body); resp.Code != remoting.Success || len(msgs) != 32 || string(msgs[31].Body) != "m31" {
		t.Fatalf("pull: %v, %d messages", resp, len(msgs))
	}
	resp = tb.invoke(remoting.PullMessage, pullFields("g", "ZC", 0, 32, pullSubscription, "*"), nil)
	if msgs := decodeAll(t, resp.Body); len(msgs) != 8 || string(msgs[0].Body) != "m32" {
		t.Fatalf("second pull: %d messages", len(msgs))
	}
	waitReadersReleased(t, tb)

	// Read but not sent: the filter drops records after reading them.
	resp = tb.invoke(remoting.PullMessage, pullFields("g", "ZC", 0, 0, pullSubscription, "zz"), nil)
	if resp.Code != remoting.PullRetryImmediately {
		t.Fatalf("pull with a filter matching nothing: %v", resp)
	}
	waitReadersReleased(t, tb)

	// Dropped: the response to a oneway pull.
	req := remoting.NewRequest(remoting.PullMessage, pullFields("g", "ZC", 0, 0, pullSubscription, "*"), nil)
	if err := tb.cl.InvokeOneway(t.Context(), tb.addr, req); err != nil {
		t.Fatal(err)
	}
	waitReadersReleased(t, tb)

	// Dropped or failed: the puller goes away before its response is written.
	for range 20 {
		nc, err := net.Dial("tcp", tb.addr)
		if err != nil {
			t.Fatal(err)
		}
		frame, _ := remoting.Encode(remoting.NewRequest(remoting.PullMessage, pullFields("g", "ZC", 0, 0, pullSubscription, "*"), nil))
		nc.Write(frame)
		nc.Close()
	}
	waitReadersReleased(t, tb)
}

func TestHeldPullReleasesStoreRecords(t *testing.T) {
	tb := startBroker(t, "", nil)
	tb.createTopic("ZH", 1)
	done := make(chan *remoting.Command, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := tb.cl.Invoke(ctx, tb.addr, remoting.NewRequest(remoting.PullMessage, pullFields("g", "ZH", 0, 0, pullSuspend|pullSubscription, "*"), nil))
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	waitFor(t, func() bool { return tb.holder.Len() == 1 })
	tb.sendV2("ZH", 0, "x", "hello")
	resp := <-done
	if msgs := decodeAll(t, resp.Body); resp.Code != remoting.Success || len(msgs) != 1 || string(msgs[0].Body) != "hello" {
		t.Fatalf("held pull answered %v", resp)
	}
	waitReadersReleased(t, tb)
}

// TestSlavePullReleasesStoreRecords: a slave serves pulls from the commitlog HA copied,
// and one refused for want of slaveReadEnable releases the records it read.
func TestSlavePullReleasesStoreRecords(t *testing.T) {
	m := startBroker(t, "", nil)
	m.createTopic("ZS", 1)
	for i := range 5 {
		m.sendV2("ZS", 0, "t", "m"+strconv.Itoa(i))
	}
	s := startSlave(t, m, nil)
	waitFor(t, func() bool { _, ok := s.topics.Get("ZS"); return ok && s.store.MaxOffsetInQueue("ZS", 0) == 5 })
	resp := s.invoke(remoting.PullMessage, pullFields("g", "ZS", 0, 0, pullSubscription, "*"), nil)
	if msgs := decodeAll(t, resp.Body); resp.Code != remoting.Success || len(msgs) != 5 || string(msgs[4].Body) != "m4" {
		t.Fatalf("pull from the slave: %v", resp)
	}
	waitReadersReleased(t, s)

	s.cfg.Update(map[string]string{"slaveReadEnable": "false"})
	if resp := s.invoke(remoting.PullMessage, pullFields("g", "ZS", 0, 0, pullSubscription, "*"), nil); resp.Code != remoting.PullRetryImmediately {
		t.Fatalf("pull from a slave without slaveReadEnable: %v", resp)
	}
	waitReadersReleased(t, s)
	waitReadersReleased(t, m)
}
