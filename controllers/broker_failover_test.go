package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	res "github.com/openrmq/rocketmq-operator/internal/resource"
)

// failoverWorld is rollWorld with status groups that keep their record between looks,
// as observeWorkloads carries it over.
func newFailoverWorld(t *testing.T, mode v1alpha1.FailoverMode) *rollWorld {
	w := newRollWorld(t)
	w.br.Spec.Failover = &v1alpha1.BrokerFailover{Mode: mode, AfterSeconds: 60}
	w.br.Spec.BrokerRole = v1alpha1.AsyncMaster // the API server defaults it
	w.br.Status.Groups = []v1alpha1.BrokerGroupStatus{{BrokerName: "broker-a"}, {BrokerName: "broker-b"}}
	return w
}

// look runs the steps of one reconcile up to the failover's.
func (w *rollWorld) look() {
	w.t.Helper()
	ctx := context.Background()
	st := &brokerState{access: adminAccess{Admin: w.admin}}
	for _, step := range []brokerStep{w.r.observePods, w.r.observeMembers, w.r.planRoll, w.r.driveFailover} {
		if _, err := step(ctx, w.br, st); err != nil {
			w.t.Fatal(err)
		}
	}
}

// setPending makes pod id of group g one that does not run (Pending).
func (w *rollWorld) setPending(g, id int32) {
	w.t.Helper()
	pod := &corev1.Pod{}
	if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: "mq", Name: res.BrokerPodName(w.br, g, id)}, pod); err != nil {
		w.t.Fatal(err)
	}
	pod.Status.Phase, pod.Status.ContainerStatuses = corev1.PodPending, nil
	if err := w.c.Status().Update(context.Background(), pod); err != nil {
		w.t.Fatal(err)
	}
}

func (w *rollWorld) failover() *v1alpha1.GroupFailover {
	w.t.Helper()
	f := w.br.Status.Groups[0].Failover
	if f == nil {
		w.t.Fatal("no failover of broker-a")
	}
	return f
}

// Automatic: a master not Ready for afterSeconds is fenced at the name servers, its
// slave promoted with epoch 1 (and the pods' roles and the HA Service follow), its pod
// restarted to rejoin as a slave, and the bytes it cut reported.
func TestAutomaticFailover(t *testing.T) {
	w := newFailoverWorld(t, v1alpha1.FailoverAutomatic)
	oldAddr, newAddr := res.BrokerMemberAddress(w.br, 0, 0), res.BrokerMemberAddress(w.br, 0, 1)
	w.admin.offsets[newAddr] = 1000
	w.setPod(0, 0, "r1", false)
	w.setPending(0, 0)          // its node is gone: the replacement cannot start
	w.setPod(0, 1, "r1", false) // running, not Ready: its master is gone
	w.look()
	if w.br.Status.Groups[0].MasterUnavailableSince == nil || w.br.Status.Groups[0].Failover != nil {
		t.Fatalf("status %+v: want the master's unavailability noted, no failover yet", w.br.Status.Groups[0])
	}
	w.now = w.now.Add(59 * time.Second)
	w.look()
	if w.br.Status.Groups[0].Failover != nil {
		t.Fatal("failed over before afterSeconds")
	}

	w.now = w.now.Add(2 * time.Second)
	w.look()
	f := w.failover()
	if f.Phase != v1alpha1.FailoverPromoting || f.Trigger != v1alpha1.FailoverAutomatic || f.To != 1 || f.Epoch != 1 || *f.StartOffset != 1000 {
		t.Fatalf("failover %+v", f)
	}
	if n := len(w.admin.callsFor("WipeWritePerm", "broker-a")); n != 2 {
		t.Fatalf("write permission withdrawn at %d name servers, want 2", n)
	}
	promote := w.admin.callsFor("UpdateBrokerConfig", "masterEpoch:1")
	if len(promote) != 1 || promote[0].Addr != newAddr || !strings.Contains(promote[0].Args, "brokerId:0") || !strings.Contains(promote[0].Args, "brokerRole:ASYNC_MASTER") {
		t.Fatalf("promotion calls %v", promote)
	}
	gs := w.br.Status.Groups[0]
	if gs.MasterOrdinal != 1 || gs.Epoch != 1 {
		t.Fatalf("masterOrdinal %d epoch %d, want 1 1", gs.MasterOrdinal, gs.Epoch)
	}
	if conf := res.BrokerPodConf(w.br, 0, 1); !strings.Contains(conf, "brokerId=0\n") || !strings.Contains(conf, "brokerRole=ASYNC_MASTER\n") || !strings.Contains(conf, "masterEpoch=1\n") {
		t.Fatalf("the new master's rendered config:\n%s", conf)
	}
	if conf := res.BrokerPodConf(w.br, 0, 0); !strings.Contains(conf, "brokerId=1\n") || !strings.Contains(conf, "brokerRole=SLAVE\n") {
		t.Fatalf("the old master's rendered config:\n%s", conf)
	}
	if res.BrokerMasterAddress(w.br, 0) != newAddr {
		t.Fatalf("the group's master address is %s", res.BrokerMasterAddress(w.br, 0))
	}

	w.look() // the slave reopened as master of epoch 1
	if f := w.failover(); f.Phase != v1alpha1.FailoverRejoining || f.WritesBackAt == nil {
		t.Fatalf("failover %+v, want Rejoining with writesBackAt", f)
	}
	if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: "mq", Name: res.BrokerPodName(w.br, 0, 0)}, &corev1.Pod{}); err == nil {
		t.Fatal("the old master's pod, which ran before the failover, was not deleted to restart as a slave")
	}

	// The StatefulSet brings it back; it starts as a slave, cuts 300 bytes, replicates.
	w.setPod(0, 0, "r1", true)
	w.admin.setRuntime(oldAddr, "brokerRole", "SLAVE")
	w.admin.setRuntime(oldAddr, "masterEpoch", "1")
	w.admin.setRuntime(oldAddr, "lastEpochCut", "1000-1300")
	w.look()
	f = w.failover()
	if f.Phase != v1alpha1.FailoverDone || f.OldMasterExtraBytes == nil || *f.OldMasterExtraBytes != 300 {
		t.Fatalf("failover %+v, want Done with 300 extra bytes", f)
	}
	if w.br.Status.Groups[1].Failover != nil {
		t.Fatal("group b failed over too")
	}
}

// Manual: the annotation makes the master read-only, waits for the slave to hold all it
// has, promotes the slave and demotes the old master at run time; nothing is cut, and the
// annotation is removed.
func TestManualFailover(t *testing.T) {
	w := newFailoverWorld(t, v1alpha1.FailoverManual)
	oldAddr, newAddr := res.BrokerMemberAddress(w.br, 0, 0), res.BrokerMemberAddress(w.br, 0, 1)
	w.admin.offsets[oldAddr], w.admin.offsets[newAddr] = 2000, 1500
	w.br.Annotations = map[string]string{v1alpha1.FailoverAnnotation: "broker-a"}
	if err := w.c.Update(context.Background(), w.br); err != nil {
		t.Fatal(err)
	}
	w.br.Status.Groups = []v1alpha1.BrokerGroupStatus{{BrokerName: "broker-a"}, {BrokerName: "broker-b"}} // Update returned the stored status
	w.look()
	if f := w.failover(); f.Phase != v1alpha1.FailoverFencing || !strings.Contains(f.Message, "500 bytes behind") {
		t.Fatalf("failover %+v, want Fencing while the slave catches up", f)
	}
	if calls := w.admin.callsFor("UpdateBrokerConfig", "brokerPermission:4"); len(calls) == 0 || calls[0].Addr != oldAddr {
		t.Fatalf("the old master was not made read-only: %v", calls)
	}
	if w.br.Status.Groups[0].MasterOrdinal != 0 {
		t.Fatal("the master moved before the slave caught up")
	}
	w.admin.offsets[newAddr] = 2000
	w.look() // promoted
	w.look() // serves: the old master is told to follow it
	demote := w.admin.callsFor("UpdateBrokerConfig", "brokerRole:SLAVE")
	if len(demote) != 1 || demote[0].Addr != oldAddr || !strings.Contains(demote[0].Args, "brokerId:1") ||
		!strings.Contains(demote[0].Args, "haMasterAddress:"+res.BrokerMasterHAAddress(w.br, 0)) {
		t.Fatalf("demotion calls %v", demote)
	}
	w.admin.setRuntime(oldAddr, "masterEpoch", "1")
	w.look()
	f := w.failover()
	if f.Phase != v1alpha1.FailoverDone || f.OldMasterExtraBytes == nil || *f.OldMasterExtraBytes != 0 {
		t.Fatalf("failover %+v, want Done with nothing cut", f)
	}
	var got v1alpha1.Broker
	if err := w.c.Get(context.Background(), client.ObjectKeyFromObject(w.br), &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Annotations[v1alpha1.FailoverAnnotation]; ok {
		t.Fatal("the failover annotation is still there")
	}
}

// A roll of a group whose master moved in a failover first moves it back to ordinal 0,
// as a planned failover, and then rolls as always: slaves (the highest ordinals) first,
// the master last.
func TestRollAfterFailoverSwitchesBackFirst(t *testing.T) {
	w := newFailoverWorld(t, v1alpha1.FailoverManual)
	w.br.Status.Groups[0].MasterOrdinal, w.br.Status.Groups[0].Epoch = 1, 1
	w.newRevision("r2")
	w.look()
	f := w.failover()
	if f.To != 0 || f.From != 1 || f.Epoch != 2 || f.Trigger != v1alpha1.FailoverManual || !strings.Contains(f.Reason, "before a roll") {
		t.Fatalf("failover %+v, want a switch back to ordinal 0 with epoch 2", f)
	}
	if calls := w.admin.callsFor("UpdateBrokerConfig", "brokerPermission:4"); len(calls) != 1 || calls[0].Addr != res.BrokerMemberAddress(w.br, 0, 1) {
		t.Fatalf("read-only calls %v, want the master at ordinal 1", calls)
	}
	w.look() // promoted (the fake reopens at once)
	w.look() // the old master is told to follow
	w.admin.setRuntime(res.BrokerMemberAddress(w.br, 0, 1), "masterEpoch", "2")
	w.look()
	if f := w.failover(); f.Phase != v1alpha1.FailoverDone || w.br.Status.Groups[0].MasterOrdinal != 0 {
		t.Fatalf("failover %+v, master at %d; want Done at ordinal 0", f, w.br.Status.Groups[0].MasterOrdinal)
	}
	st := &brokerState{access: adminAccess{Admin: w.admin}}
	for _, step := range []brokerStep{w.r.observePods, w.r.observeMembers, w.r.planRoll} {
		if _, err := step(context.Background(), w.br, st); err != nil {
			t.Fatal(err)
		}
	}
	if st.partitions[0] != 1 || st.roll.phase[0] != v1alpha1.RollSlaves {
		t.Fatalf("after the switch back: partition %d phase %q, want the slaves rolled first", st.partitions[0], st.roll.phase[0])
	}
}
