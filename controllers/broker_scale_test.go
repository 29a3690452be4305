package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	res "github.com/openrmq/rocketmq-operator/internal/resource"
)

// scaleInWorld is rollWorld's Broker with its StatefulSets owned and labelled as
// applyChildren makes them, scaled in to one group: broker-b drains.
func newScaleInWorld(t *testing.T) (*rollWorld, string) {
	w := newRollWorld(t)
	ctx := context.Background()
	if err := w.c.Get(ctx, client.ObjectKeyFromObject(w.br), w.br); err != nil {
		t.Fatal(err)
	}
	for g := range w.br.Spec.Groups {
		sts := &appsv1.StatefulSet{}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: "mq", Name: res.BrokerGroupName(w.br, g)}, sts); err != nil {
			t.Fatal(err)
		}
		sts.Labels = map[string]string{res.InstanceLabel: w.br.Name, res.ComponentLabel: res.BrokerComponent,
			res.BrokerNameLabel: res.BrokerName(g)}
		sts.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Broker",
			Name: w.br.Name, UID: w.br.UID, Controller: ptr.To(true)}}
		if err := w.c.Update(ctx, sts); err != nil {
			t.Fatal(err)
		}
	}
	w.br.Spec.Groups = 1
	master := res.BrokerMemberAddress(w.br, 1, 0)
	w.admin.groups[master] = []string{"TOOLS_CONSUMER", "billing"}
	return w, master
}

// scaleIn runs one reconcile's scale-in step and says whether broker-b's StatefulSet is
// still there.
func (w *rollWorld) scaleIn() (time.Duration, bool) {
	w.t.Helper()
	st := &brokerState{access: adminAccess{Admin: w.admin}}
	if _, err := w.r.scaleIn(context.Background(), w.br, st); err != nil {
		w.t.Fatal(err)
	}
	err := w.c.Get(context.Background(), client.ObjectKey{Namespace: "mq", Name: res.BrokerGroupName(w.br, 1)}, &appsv1.StatefulSet{})
	if client.IgnoreNotFound(err) != nil {
		w.t.Fatal(err)
	}
	return st.requeue, err == nil
}

func (w *rollWorld) scaleInCondition() *metav1.Condition {
	return meta.FindStatusCondition(w.br.Status.Conditions, v1alpha1.ConditionScaleIn)
}

// A group scaled in is made read-only and kept while a consumer group has not consumed
// it; once it has, the group goes.
func TestScaleInWaitsForConsumers(t *testing.T) {
	w, master := newScaleInWorld(t)
	w.admin.setStats(master, []QueueOffset{
		{Topic: "orders", BrokerName: "broker-b", QueueID: 0, BrokerOffset: 100, ConsumerOffset: 40},
		{Topic: "orders", BrokerName: "broker-b", QueueID: 1, BrokerOffset: 10, ConsumerOffset: 10},
	})
	after, kept := w.scaleIn()
	if !kept || after != drainPoll {
		t.Fatalf("kept %v, requeue %v: want broker-b kept and looked at again in %v", kept, after, drainPoll)
	}
	if calls := w.admin.callsFor("UpdateBrokerConfig", "brokerPermission:4"); len(calls) != 1 || calls[0].Addr != master {
		t.Fatalf("brokerPermission calls %v, want one to broker-b's master", calls)
	}
	want := []v1alpha1.DrainingGroup{{BrokerName: "broker-b", Since: metav1.NewTime(w.now), Unconsumed: 60}}
	if len(w.br.Status.Draining) != 1 || w.br.Status.Draining[0].BrokerName != want[0].BrokerName ||
		!w.br.Status.Draining[0].Since.Equal(&want[0].Since) || w.br.Status.Draining[0].Unconsumed != 60 {
		t.Fatalf("draining %+v, want %+v", w.br.Status.Draining, want)
	}
	c := w.scaleInCondition()
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Draining" ||
		!strings.Contains(c.Message, "group broker-b waits for 60 messages to be consumed: 60 of topic orders by consumer group billing") {
		t.Fatalf("ScaleIn condition %+v", c)
	}

	// Some consumed: still kept, the start of the drain kept too.
	w.now = w.now.Add(time.Hour)
	w.admin.setStats(master, []QueueOffset{{Topic: "orders", BrokerName: "broker-b", QueueID: 0, BrokerOffset: 100, ConsumerOffset: 99}})
	if _, kept := w.scaleIn(); !kept || w.br.Status.Draining[0].Unconsumed != 1 || !w.br.Status.Draining[0].Since.Equal(&want[0].Since) {
		t.Fatalf("kept %v draining %+v", kept, w.br.Status.Draining)
	}

	w.admin.setStats(master, []QueueOffset{{Topic: "orders", BrokerName: "broker-b", QueueID: 0, BrokerOffset: 100, ConsumerOffset: 100}})
	after, kept = w.scaleIn()
	if kept || after != 0 || len(w.br.Status.Draining) != 0 {
		t.Fatalf("kept %v requeue %v draining %+v: want broker-b removed", kept, after, w.br.Status.Draining)
	}
	if c := w.scaleInCondition(); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "GroupsRemoved" {
		t.Fatalf("ScaleIn condition %+v", c)
	}
	if !hasEvent(w.r.Recorder, "GroupRemoved") {
		t.Error("no GroupRemoved event")
	}
}

// The drain timeout removes a group with what it still holds, and says so.
func TestScaleInTimeout(t *testing.T) {
	w, master := newScaleInWorld(t)
	w.br.Spec.ScaleIn = &v1alpha1.BrokerScaleIn{DrainTimeoutSeconds: ptr.To[int32](30)}
	w.admin.setStats(master, []QueueOffset{{Topic: "orders", BrokerName: "broker-b", BrokerOffset: 5}})
	if _, kept := w.scaleIn(); !kept {
		t.Fatal("removed before the timeout")
	}
	if c := w.scaleInCondition(); c == nil || !strings.Contains(c.Message, "removed at the latest at 2030-01-01T12:00:30Z") {
		t.Fatalf("ScaleIn condition %+v", c)
	}
	w.now = w.now.Add(29 * time.Second)
	if _, kept := w.scaleIn(); !kept {
		t.Fatal("removed before the timeout")
	}
	w.now = w.now.Add(time.Second)
	if _, kept := w.scaleIn(); kept {
		t.Fatal("kept after the timeout")
	}
	if !hasEvent(w.r.Recorder, "GroupRemovedUndrained") {
		t.Error("no GroupRemovedUndrained event")
	}
}

// A master that cannot be reached is not a drained one; raising groups again gives the
// write permission back.
func TestScaleInUnreachableThenCancelled(t *testing.T) {
	w, master := newScaleInWorld(t)
	w.admin.setFail("UpdateBrokerConfig", errTest("connection refused"))
	if _, kept := w.scaleIn(); !kept || w.br.Status.Draining[0].Unconsumed != -1 {
		t.Fatalf("kept %v draining %+v", kept, w.br.Status.Draining)
	}
	if c := w.scaleInCondition(); c == nil || !strings.Contains(c.Message, "its master could not be made read-only: connection refused") {
		t.Fatalf("ScaleIn condition %+v", c)
	}
	w.admin.setFail("UpdateBrokerConfig", nil)
	w.br.Spec.Groups = 2
	if _, kept := w.scaleIn(); !kept || len(w.br.Status.Draining) != 0 {
		t.Fatalf("kept %v draining %+v", kept, w.br.Status.Draining)
	}
	if calls := w.admin.callsFor("UpdateBrokerConfig", "brokerPermission:6"); len(calls) != 1 || calls[0].Addr != master {
		t.Fatalf("brokerPermission calls %v, want 6 given back to broker-b's master", calls)
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }

// hasEvent says whether a FakeRecorder holds an event with reason.
func hasEvent(rec events.EventRecorder, reason string) bool {
	fr := rec.(*events.FakeRecorder)
	for {
		select {
		case e := <-fr.Events:
			if strings.Contains(e, " "+reason+" ") {
				return true
			}
		default:
			return false
		}
	}
}
