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
