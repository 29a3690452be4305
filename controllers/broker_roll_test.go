package controllers

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	res "github.com/openrmq/rocketmq-operator/internal/resource"
)

// rollWorld is a Broker of two groups of a master and a slave, with StatefulSets and
// pods played by the test on a fake API server, and the roll's clock.
type rollWorld struct {
	t     *testing.T
	c     client.Client
	r     *BrokerReconciler
	admin *fakeAdmin
	br    *v1alpha1.Broker
	now   time.Time
}

func newRollWorld(t *testing.T) *rollWorld {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	br := newBroker("mq", "rmq")
	br.Status.NameServerAddress = "ns-0:9876;ns-1:9876"
	w := &rollWorld{t: t, br: br, admin: newFakeAdmin(), now: time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)}
	w.c = fake.NewClientBuilder().WithScheme(s).WithObjects(br).WithStatusSubresource(br, &appsv1.StatefulSet{}).Build()
	w.r = &BrokerReconciler{Client: w.c, Scheme: s, Recorder: events.NewFakeRecorder(100), now: func() time.Time { return w.now }}
	for g := range br.Spec.Groups {
		sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: res.BrokerGroupName(br, g), Generation: 1},
			Spec:   appsv1.StatefulSetSpec{Replicas: ptr.To(br.Spec.ReplicasPerGroup)},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, CurrentRevision: "r1", UpdateRevision: "r1"}}
		status := sts.Status
		if err := w.c.Create(context.Background(), sts); err != nil {
			t.Fatal(err)
		}
		sts.Status = status
		if err := w.c.Status().Update(context.Background(), sts); err != nil {
			t.Fatal(err)
		}
		for id := range br.Spec.ReplicasPerGroup {
			w.setPod(g, id, "r1", true)
		}
	}
	return w
}

// setPod makes pod id of group g run revision rev, Ready or not ("" deletes it).
func (w *rollWorld) setPod(g, id int32, rev string, ready bool) {
	ctx := context.Background()
	name := res.BrokerPodName(w.br, g, id)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: name, Labels: map[string]string{
		res.InstanceLabel: w.br.Name, res.ComponentLabel: res.BrokerComponent, appsv1.StatefulSetRevisionLabel: rev}}}
	if err := w.c.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
		w.t.Fatal(err)
	}
	if rev == "" {
		return
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	// Running, Ready or not (a slave without its master is not Ready).
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "broker", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	if err := w.c.Create(ctx, pod); err != nil {
		w.t.Fatal(err)
	}
}

// newRevision is a spec change both StatefulSets observed: their update revision is rev.
func (w *rollWorld) newRevision(rev string) {
	ctx := context.Background()
	for g := range w.br.Spec.Groups {
		sts := &appsv1.StatefulSet{}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: "mq", Name: res.BrokerGroupName(w.br, g)}, sts); err != nil {
			w.t.Fatal(err)
		}
		sts.Status.UpdateRevision, sts.Status.ObservedGeneration = rev, sts.Generation
		if err := w.c.Status().Update(ctx, sts); err != nil {
			w.t.Fatal(err)
		}
	}
}

// applyPartitions writes partitions into the StatefulSets, as applyChildren does, and
// has the StatefulSet controller observe them or not yet.
func (w *rollWorld) applyPartitions(partitions map[int32]int32, observed bool) {
	ctx := context.Background()
	for g, p := range partitions {
		sts := &appsv1.StatefulSet{}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: "mq", Name: res.BrokerGroupName(w.br, g)}, sts); err != nil {
			w.t.Fatal(err)
		}
		sts.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(p)}}
		sts.Generation++
		if err := w.c.Update(ctx, sts); err != nil {
			w.t.Fatal(err)
		}
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(sts), sts); err != nil {
			w.t.Fatal(err)
		}
		if observed {
			sts.Status.ObservedGeneration = sts.Generation
		} else {
			sts.Status.ObservedGeneration = sts.Generation - 1
		}
		if err := w.c.Status().Update(ctx, sts); err != nil {
			w.t.Fatal(err)
		}
	}
}

// step plans the roll and makes its name-server calls, as one reconcile does, and
// returns the partitions, the phases and the requeue asked for.
func (w *rollWorld) step() (map[int32]int32, map[int32]v1alpha1.RollPhase, time.Duration) {
	w.t.Helper()
	ctx := context.Background()
	st := &brokerState{access: adminAccess{Admin: w.admin}}
	if _, err := w.r.observePods(ctx, w.br, st); err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.r.observeMembers(ctx, w.br, st); err != nil {
		w.t.Fatal(err)
	}
	st.requeue = 0 // observeMembers's refresh; the roll's own requeues are asserted
	after, err := w.r.planRoll(ctx, w.br, st)
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.r.driveRoll(ctx, w.br, st); err != nil {
		w.t.Fatal(err)
	}
	w.br.Status.Groups = make([]v1alpha1.BrokerGroupStatus, w.br.Spec.Groups)
	st.roll.record(w.br) // as observeWorkloads keeps it
	return st.partitions, st.roll.phase, max(after, st.requeue)
}

func (w *rollWorld) expect(partitions map[int32]int32, phases map[int32]v1alpha1.RollPhase) time.Duration {
	w.t.Helper()
	p, ph, after := w.step()
	if !maps.Equal(p, partitions) || !maps.Equal(ph, phases) {
		w.t.Fatalf("partitions %v phases %v, want %v %v", p, ph, partitions, phases)
	}
	return after
}

// A spec change rolls group a, slaves then master after it stepped aside for the
// configured time, then group b; the other group holds meanwhile.
func TestRollOneGroupAtATime(t *testing.T) {
	w := newRollWorld(t)
	hold := map[int32]int32{0: 2, 1: 2}
	w.expect(hold, map[int32]v1alpha1.RollPhase{})

	w.newRevision("r2")
	w.expect(map[int32]int32{0: 1, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollSlaves})
	w.setPod(0, 1, "r2", false) // replaced, not Ready yet
	w.expect(map[int32]int32{0: 1, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollSlaves})
	if n := len(w.admin.callsFor("WipeWritePerm", "")); n != 0 {
		t.Fatalf("write permission wiped %d times before the slave was Ready", n)
	}

	w.setPod(0, 1, "r2", true)
	after := w.expect(map[int32]int32{0: 1, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollMasterSteppingAside})
	wipes := w.admin.callsFor("WipeWritePerm", "broker-a")
	if len(wipes) != 2 || wipes[0].Addr != "ns-0:9876" || wipes[1].Addr != "ns-1:9876" {
		t.Fatalf("WIPE_WRITE_PERM_OF_BROKER calls %v, want broker-a at both name servers", wipes)
	}
	if after != defaultStepAside {
		t.Errorf("requeue after %v, want the step-aside time %v", after, defaultStepAside)
	}
	if got := w.br.Status.Groups[0].MasterSteppedAsideAt; got == nil || !got.Time.Equal(w.now) {
		t.Fatalf("masterSteppedAsideAt %v, want %v", got, w.now)
	}

	w.now = w.now.Add(10 * time.Second)
	after = w.expect(map[int32]int32{0: 1, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollMasterSteppingAside})
	if after != defaultStepAside-10*time.Second {
		t.Errorf("requeue after %v, want %v", after, defaultStepAside-10*time.Second)
	}
	if n := len(w.admin.callsFor("WipeWritePerm", "")); n != 2 {
		t.Fatalf("%d wipes, want the first two only", n)
	}

	w.now = w.now.Add(defaultStepAside)
	w.expect(map[int32]int32{0: 0, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollMaster})
	// The partition change is not yet seen by the StatefulSet: nothing moves back, and the
	// master keeps its step-aside.
	w.applyPartitions(map[int32]int32{0: 0, 1: 2}, false)
	w.expect(map[int32]int32{0: 0, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollMaster})
	if w.br.Status.Groups[0].MasterSteppedAsideAt == nil || len(w.admin.callsFor("AddWritePerm", "")) != 0 {
		t.Fatalf("the step-aside ended while the StatefulSet had not seen the new partition")
	}
	w.applyPartitions(map[int32]int32{0: 0, 1: 2}, true)
	w.setPod(0, 0, "", false)   // the StatefulSet deleted it
	w.setPod(0, 1, "r2", false) // and its slave lost it: the partition stays
	w.expect(map[int32]int32{0: 0, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollMaster})
	if n := len(w.admin.callsFor("AddWritePerm", "")); n != 0 {
		t.Fatalf("write permission given back while the master restarts")
	}

	w.setPod(0, 0, "r2", true)
	w.setPod(0, 1, "r2", true)
	w.expect(map[int32]int32{0: 2, 1: 1}, map[int32]v1alpha1.RollPhase{1: v1alpha1.RollSlaves})
	// The fake name servers route no broker-a topic: the permission is given back.
	if adds := w.admin.callsFor("AddWritePerm", "broker-a"); len(adds) != 2 {
		t.Fatalf("ADD_WRITE_PERM_OF_BROKER calls %v, want broker-a at both name servers", adds)
	}
	if w.br.Status.Groups[0].MasterSteppedAsideAt != nil {
		t.Errorf("masterSteppedAsideAt kept after the master is back")
	}

	w.setPod(1, 1, "r2", true)
	w.expect(map[int32]int32{0: 2, 1: 1}, map[int32]v1alpha1.RollPhase{1: v1alpha1.RollMasterSteppingAside})
	w.now = w.now.Add(defaultStepAside)
	w.expect(map[int32]int32{0: 2, 1: 0}, map[int32]v1alpha1.RollPhase{1: v1alpha1.RollMaster})
	w.setPod(1, 0, "r2", true)
	w.expect(hold, map[int32]v1alpha1.RollPhase{})
}

// A group whose pods are not all Ready stops the roll before the next group; a pod of a
// broken intermediate spec that never became Ready is deleted, so that a fixed spec
// resumes the roll.
func TestRollStopsAtAPodThatIsNotReady(t *testing.T) {
	w := newRollWorld(t)
	w.setPod(0, 0, "r1", false)
	w.newRevision("r2")
	p, _, _ := w.step()
	if p[1] != 2 {
		t.Fatalf("group b released (partition %d) while group a's master is not Ready", p[1])
	}

	w = newRollWorld(t)
	w.newRevision("r2")
	w.step()
	w.setPod(0, 1, "r2", false) // the new spec crashes
	w.step()
	w.newRevision("r3") // the fix
	w.step()
	pod := &corev1.Pod{}
	err := w.c.Get(context.Background(), client.ObjectKey{Namespace: "mq", Name: res.BrokerPodName(w.br, 0, 1)}, pod)
	if !apierrors.IsNotFound(err) {
		t.Fatalf("the slave of the broken spec r2 is still there (%v): the StatefulSet would wait for it for ever", err)
	}
	if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: "mq", Name: res.BrokerPodName(w.br, 0, 0)}, pod); err != nil {
		t.Fatalf("the master, Ready at the old spec, was deleted: %v", err)
	}
}

// A single group has nowhere else for its writes: its master restarts without stepping
// aside; spec.rollout.masterStepAsideSeconds sets the wait of a larger cluster.
func TestStepAsideTime(t *testing.T) {
	br := newBroker("mq", "rmq")
	if got := stepAsideFor(br); got != defaultStepAside {
		t.Errorf("default %v", got)
	}
	br.Spec.Rollout = &v1alpha1.BrokerRollout{MasterStepAsideSeconds: ptr.To[int32](5)}
	if got := stepAsideFor(br); got != 5*time.Second {
		t.Errorf("spec.rollout %v", got)
	}
	br.Spec.Groups = 1
	if got := stepAsideFor(br); got != 0 {
		t.Errorf("one group: %v", got)
	}
}

// Under SYNC_MASTER the master steps aside before its slaves go (without a slave it would
// answer SLAVE_NOT_AVAILABLE), and restarts right after them.
func TestRollSyncMasterStepsAsideFirst(t *testing.T) {
	w := newRollWorld(t)
	w.br.Spec.BrokerRole = v1alpha1.SyncMaster
	w.newRevision("r2")
	w.expect(map[int32]int32{0: 2, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollMasterSteppingAside})
	if n := len(w.admin.callsFor("WipeWritePerm", "broker-a")); n != 2 {
		t.Fatalf("%d wipes before the slaves, want 2", n)
	}
	w.now = w.now.Add(defaultStepAside)
	w.expect(map[int32]int32{0: 1, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollSlaves})
	w.setPod(0, 1, "r2", true)
	w.expect(map[int32]int32{0: 0, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollMaster})
	if n := len(w.admin.callsFor("AddWritePerm", "")); n != 0 {
		t.Fatalf("write permission given back before the master restarted")
	}
	w.setPod(0, 0, "r2", true)
	w.expect(map[int32]int32{0: 2, 1: 2}, map[int32]v1alpha1.RollPhase{1: v1alpha1.RollMasterSteppingAside})
	if n := len(w.admin.callsFor("AddWritePerm", "broker-a")); n != 2 {
		t.Fatalf("%d give-backs after group a, want 2", n)
	}
}

// A replaced slave that is Ready but far behind its master holds the master's step-aside
// until it caught up, and one whose lag cannot be read holds it too.
func TestRollWaitsForTheSlaveToCatchUp(t *testing.T) {
	w := newRollWorld(t)
	master, slave := res.BrokerMemberAddress(w.br, 0, 0), res.BrokerMemberAddress(w.br, 0, 1)
	w.newRevision("r2")
	w.expect(map[int32]int32{0: 1, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollSlaves})
	w.setPod(0, 1, "r2", true)
	w.admin.offsets[master], w.admin.offsets[slave] = 5<<20, 1<<20
	after := w.expect(map[int32]int32{0: 1, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollSlaves})
	if after != lagPoll {
		t.Errorf("requeue after %v, want %v", after, lagPoll)
	}
	if n := len(w.admin.callsFor("WipeWritePerm", "")); n != 0 {
		t.Fatalf("write permission wiped %d times while the slave was 4 MiB behind", n)
	}
	if got := w.br.Status.Groups[0].Slaves; len(got) != 0 {
		t.Logf("slaves %+v", got)
	}

	w.admin.setFail("CommitLogMaxOffset", errTest("i/o timeout"))
	w.expect(map[int32]int32{0: 1, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollSlaves})
	w.admin.setFail("CommitLogMaxOffset", nil)

	w.admin.offsets[slave] = 5<<20 - 100
	w.expect(map[int32]int32{0: 1, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollMasterSteppingAside})
}

// The status shows each Ready slave's lag.
func TestStatusShowsSlaveLag(t *testing.T) {
	w := newRollWorld(t)
	w.admin.offsets[res.BrokerMemberAddress(w.br, 1, 0)] = 4096
	w.admin.offsets[res.BrokerMemberAddress(w.br, 1, 1)] = 1024
	ctx := context.Background()
	st := &brokerState{access: adminAccess{Admin: w.admin}}
	for _, step := range []brokerStep{w.r.observePods, w.r.observeMembers, w.r.planRoll, w.r.observeWorkloads} {
		if _, err := step(ctx, w.br, st); err != nil {
			t.Fatal(err)
		}
	}
	for g, want := range []int64{0, 3072} {
		s := w.br.Status.Groups[g].Slaves
		if len(s) != 1 || s[0].LagBytes == nil || *s[0].LagBytes != want {
			t.Errorf("group %d slaves %+v, want lagBytes %d", g, s, want)
		}
	}
	if st.requeue != replicationRefresh {
		t.Errorf("requeue %v, want the lag refreshed in %v", st.requeue, replicationRefresh)
	}
}

// A replaced pod that cannot start turns the roll's Progressing reason into RollBlocked,
// with the kubelet's reason.
func TestRollBlockedByACrashingPod(t *testing.T) {
	w := newRollWorld(t)
	w.newRevision("r2")
	w.expect(map[int32]int32{0: 1, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollSlaves})
	w.setPod(0, 1, "r2", false)
	ctx := context.Background()
	pod := &corev1.Pod{}
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: "mq", Name: res.BrokerPodName(w.br, 0, 1)}, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "broker", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container"}}}}
	if err := w.c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	st := &brokerState{access: adminAccess{Admin: w.admin}}
	for _, step := range []brokerStep{w.r.observePods, w.r.observeMembers, w.r.planRoll, w.r.observeWorkloads} {
		if _, err := step(ctx, w.br, st); err != nil {
			t.Fatal(err)
		}
	}
	c := meta.FindStatusCondition(w.br.Status.Conditions, v1alpha1.ConditionProgressing)
	if c == nil || c.Reason != "RollBlocked" || !strings.Contains(c.Message, "blocked: CrashLoopBackOff: pod rmq-broker-a-1 container broker") {
		t.Fatalf("Progressing %+v, want RollBlocked naming the crashing pod", c)
	}
}

// A replaced pod is healthy only once every name server holds it: a slave missing at one
// holds its master's step-aside, and a master missing at one holds the give-back of its
// write permission and the next group's turn.
func TestRollWaitsForEveryNameServer(t *testing.T) {
	w := newRollWorld(t)
	w.newRevision("r2")
	w.expect(map[int32]int32{0: 1, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollSlaves})
	w.setPod(0, 1, "r2", true)
	w.admin.unregistered["ns-1:9876 broker-a 1"] = true
	if after := w.expect(map[int32]int32{0: 1, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollSlaves}); after != lagPoll {
		t.Errorf("requeue after %v, want %v", after, lagPoll)
	}
	delete(w.admin.unregistered, "ns-1:9876 broker-a 1")
	w.expect(map[int32]int32{0: 1, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollMasterSteppingAside})

	w.now = w.now.Add(defaultStepAside)
	w.expect(map[int32]int32{0: 0, 1: 2}, map[int32]v1alpha1.RollPhase{0: v1alpha1.RollMaster})
	w.applyPartitions(map[int32]int32{0: 0, 1: 2}, true)
	w.setPod(0, 0, "r2", true)
	w.admin.unregistered["ns-0:9876 broker-a 0"] = true
	if after := w.expect(map[int32]int32{0: 2, 1: 2}, map[int32]v1alpha1.RollPhase{}); after != lagPoll {
		t.Errorf("requeue after %v, want %v", after, lagPoll)
	}
	if n := len(w.admin.callsFor("AddWritePerm", "")); n != 0 {
		t.Fatalf("write permission given back to a master one name server does not hold")
	}
	delete(w.admin.unregistered, "ns-0:9876 broker-a 0")
	w.expect(map[int32]int32{0: 2, 1: 1}, map[int32]v1alpha1.RollPhase{1: v1alpha1.RollSlaves})
	if n := len(w.admin.callsFor("AddWritePerm", "broker-a")); n != 2 {
		t.Fatalf("%d ADD_WRITE_PERM_OF_BROKER calls, want 2", n)
	}
}
