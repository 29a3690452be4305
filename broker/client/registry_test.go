package client

import (
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

func TestRegistryMembership(t *testing.T) {
	r := NewRegistry()
	c1, c2 := &remoting.Conn{}, &remoting.Conn{}
	now := time.Unix(1000, 0)
	reg := ConsumerRegistration{Group: "g", MessageModel: "CLUSTERING",
		Subscriptions: []SubscriptionData{{Topic: "t", SubString: "*", SubVersion: 1}}}
	if changed, subs := r.RegisterConsumer(reg, Channel{Conn: c1, ClientID: "a", LastUpdate: now}); !changed || !subs {
		t.Fatalf("first registration: changed=%v subs=%v", changed, subs)
	}
	if changed, _ := r.RegisterConsumer(reg, Channel{Conn: c1, ClientID: "a", LastUpdate: now.Add(time.Second)}); changed {
		t.Fatal("a heartbeat of a known channel changed the membership")
	}
	if changed, _ := r.RegisterConsumer(reg, Channel{Conn: c2, ClientID: "b", LastUpdate: now}); !changed {
		t.Fatal("a new channel did not change the membership")
	}
	g, _ := r.Consumer("g")
	if ids := g.ClientIDs(); len(ids) != 2 || ids[0] != "a" || ids[1] != "b" {
		t.Fatalf("ids %v", ids)
	}
	if exp := r.Expired(now.Add(500 * time.Millisecond)); len(exp) != 1 || exp[0] != c2 {
		t.Fatalf("expired %v", exp)
	}
	if left := r.RemoveConn(c2); len(left) != 1 || left[0] != "g" {
		t.Fatalf("groups that lost a member: %v", left)
	}
	if left := r.RemoveConn(c1); len(left) != 0 {
		t.Fatalf("an emptied group is not notified: %v", left)
	}
	if _, ok := r.Consumer("g"); ok {
		t.Fatal("empty group kept")
	}
}

func TestProducerByClientID(t *testing.T) {
	r := NewRegistry()
	old, fresh, other := &remoting.Conn{}, &remoting.Conn{}, &remoting.Conn{}
	now := time.Unix(1000, 0)
	r.RegisterProducer("pg", Channel{Conn: old, ClientID: "requester", LastUpdate: now})
	r.RegisterProducer("pg2", Channel{Conn: other, ClientID: "someone-else", LastUpdate: now})
	if _, ok := r.ProducerByClientID("nobody"); ok {
		t.Fatal("found a channel for an unknown client id")
	}
	// The client reconnected: its new connection, heard from last, is the one to use.
	r.RegisterProducer("pg", Channel{Conn: fresh, ClientID: "requester", LastUpdate: now.Add(time.Second)})
	if ch, ok := r.ProducerByClientID("requester"); !ok || ch.Conn != fresh {
		t.Fatalf("lookup after reconnect: ok=%v conn=%p, want %p", ok, ch.Conn, fresh)
	}
	r.RemoveConn(fresh)
	if ch, ok := r.ProducerByClientID("requester"); !ok || ch.Conn != old {
		t.Fatalf("lookup after the new connection closed: ok=%v conn=%p, want %p", ok, ch.Conn, old)
	}
	r.UnregisterProducer("pg", old)
	if _, ok := r.ProducerByClientID("requester"); ok {
		t.Fatal("found an unregistered producer")
	}
	if ch, ok := r.ProducerByClientID("someone-else"); !ok || ch.Conn != other {
		t.Fatal("lost another client's channel")
	}
}
