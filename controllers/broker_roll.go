package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/resource"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// The roll of a Broker: one group at a time, in index order; in each group the slaves
// first, then the master, after it stepped aside. The StatefulSets do the pod work
// (RollingUpdate with OrderedReady replaces the highest ordinal first, each after the
// previous one is Ready, and Ready is the broker's own /readyz: registered with a name
// server and, for a slave, connected to its master). The operator only moves each
// group's partition:
//
//	hold                 partition = replicas: no pod of the group is replaced
//	Slaves               partition = 1: the slaves are replaced
//	MasterSteppingAside  partition = 1, the master's write permission withdrawn at the
//	                     name servers (WIPE_WRITE_PERM_OF_BROKER) so that producers move to
//	                     the other groups at their next route refresh
//	Master               partition = 0: the master is replaced; once it is Ready the group
//	                     takes writes again and the next group's turn comes
//
// A group's turn comes when every group before it runs the current revision with all its
// pods Ready: a pod that does not become Ready stops the roll there, and a fixed spec
// resumes it (planRoll replaces a broken pod of the new revision that the StatefulSet
// controller, waiting for it to be Ready, never would).

// defaultStepAside is how long a master is left without write permission when
// spec.rollout does not say: the official clients refresh routes every 30 s.
const defaultStepAside = 35 * time.Second

// lagPoll is how soon a roll waiting for a slave to catch up looks again.
const lagPoll = 2 * time.Second

// groupPods is what planRoll knows of one group.
type groupPods struct {
	index    int32
	sts      *appsv1.StatefulSet
	pods     map[int32]*corev1.Pod // by ordinal (brokerId)
	outdated map[int32]bool        // ordinals missing or at another revision than the StatefulSet's update revision
	was      v1alpha1.RollPhase    // the group's phase in the status, before this reconcile
}

func (g *groupPods) ready(ordinals ...int32) bool {
	for _, o := range ordinals {
		if g.outdated[o] || !podReady(g.pods[o]) {
			return false
		}
	}
	return true
}

// rollState is where a Broker's roll stands, for the steps after planRoll and the status.
type rollState struct {
	phase   map[int32]v1alpha1.RollPhase
	stepped map[int32]*metav1.Time // MasterSteppedAsideAt carried over or set
	// current says which groups run the current revision with every pod Ready: only
	// their masters get the write permission back.
	current map[int32]bool
	// stepAside is the group whose master must step aside now, -1 when none.
	stepAside int32
	// message describes the roll for the Progressing condition; "" when none is under way.
	message string
}

// stepAsideFor is spec.rollout.masterStepAsideSeconds, or 0 for a single group, which
// has no other group to take its writes.
func stepAsideFor(br *v1alpha1.Broker) time.Duration {
	if br.Spec.Groups < 2 {
		return 0
	}
	if br.Spec.Rollout != nil && br.Spec.Rollout.MasterStepAsideSeconds != nil {
		return time.Duration(*br.Spec.Rollout.MasterStepAsideSeconds) * time.Second
	}
	return defaultStepAside
}

// planRoll sets every group's partition for applyChildren (st.partitions) and says which
// master steps aside (st.roll); it asks for a requeue (st.requeueWithin) while a master
// waits.
func (r *BrokerReconciler) planRoll(ctx context.Context, br *v1alpha1.Broker, st *brokerState) (time.Duration, error) {
	st.partitions = map[int32]int32{}
	st.roll = rollState{phase: map[int32]v1alpha1.RollPhase{}, stepped: map[int32]*metav1.Time{},
		current: map[int32]bool{}, stepAside: -1}
	st.switchBack = map[int32]bool{}
	previous := map[int32]v1alpha1.RollPhase{}
	for i, gs := range br.Status.Groups {
		if gs.MasterSteppedAsideAt != nil {
			st.roll.stepped[int32(i)] = gs.MasterSteppedAsideAt
		}
		previous[int32(i)] = gs.Rolling
	}
	groups, err := r.observeGroups(ctx, br, st.pods)
	if err != nil {
		return 0, err
	}
	var turn *groupPods
	for _, g := range groups {
		g.was = previous[g.index]
		replicas := br.Spec.ReplicasPerGroup
		// Held: a new StatefulSet creates its pods at the current spec whatever the
		// partition, and starting held spares it a change right after.
		st.partitions[g.index] = replicas
		if g.sts == nil {
			continue
		}
		if turn != nil || st.roll.message != "" {
			continue // a group before this one rolls or holds the roll
		}
		if g.sts.Status.ObservedGeneration < g.sts.Generation {
			// The StatefulSet has not seen its last change (a new template or partition):
			// its revisions are not to be trusted yet. Keep what it has, and so do the
			// groups after it.
			if ru := g.sts.Spec.UpdateStrategy.RollingUpdate; ru != nil {
				st.partitions[g.index] = ptr.Deref(ru.Partition, 0)
			}
			st.roll.phase[g.index] = previous[g.index]
			st.roll.message = fmt.Sprintf("group %s: waiting for its StatefulSet to take the last change", resource.BrokerName(g.index))
			continue
		}
		if gs := resource.BrokerGroupStatusOf(br, g.index); gs != nil && (inProgress(gs.Failover) || gs.MasterOrdinal != 0 && len(g.outdated) > 0) {
			// A failover moves the master; the roll goes on once the old master rejoined,
			// from ordinal 0 again: the partition replaces the highest ordinals first, the
			// master last.
			st.roll.message = fmt.Sprintf("group %s: failing over (%s)", resource.BrokerName(g.index), failoverMessage(gs))
			st.switchBack[g.index] = gs.Failover == nil || gs.Failover.Phase == v1alpha1.FailoverDone
			continue
		}
		if len(g.outdated) > 0 {
			turn = g
			continue
		}
		if !g.ready(ordinals(replicas)...) {
			// Done with the current revision but not all Ready: later groups wait.
			st.roll.message = fmt.Sprintf("group %s: %s", resource.BrokerName(g.index), notReadyPods(br, g, ordinals(replicas)))
			continue
		}
		if why := unregisteredPods(br, st, g.index); why != "" {
			// Ready, but not yet found through every name server: no pod event comes
			// when it is.
			st.roll.message = fmt.Sprintf("group %s: %s", resource.BrokerName(g.index), why)
			st.requeueWithin(lagPoll)
			continue
		}
		st.roll.current[g.index] = true
	}
	if turn != nil {
		after, err := r.rollGroup(ctx, br, st, turn)
		if err != nil {
			return 0, err
		}
		st.requeueWithin(after)
	}
	st.roll.record(br)
	return 0, nil
}

// record writes the roll's phases and step-aside times into br's status groups: at once,
// so that a later step's failure does not lose them, and again over the groups
// observeWorkloads lists.
func (rs rollState) record(br *v1alpha1.Broker) {
	for i := range br.Status.Groups {
		br.Status.Groups[i].Rolling = rs.phase[int32(i)]
		br.Status.Groups[i].MasterSteppedAsideAt = rs.stepped[int32(i)]
	}
}

// rollGroup moves the partition of g, the group whose turn it is, and says how soon to
// look again while its master steps aside (driveRoll, later in the same reconcile, makes
// the name-server calls and asks for the whole wait). Under SYNC_MASTER the
// master steps aside before the slaves go, not after: a SYNC_MASTER without a slave answers
// sends SLAVE_NOT_AVAILABLE, so the group takes no writes from the first restart to the
// last.
func (r *BrokerReconciler) rollGroup(ctx context.Context, br *v1alpha1.Broker, st *brokerState, g *groupPods) (time.Duration, error) {
	replicas := br.Spec.ReplicasPerGroup
	name := resource.BrokerName(g.index)
	if err := r.replaceBrokenPods(ctx, br, g); err != nil {
		return 0, err
	}
	set := func(partition int32, phase v1alpha1.RollPhase, msg string) {
		st.partitions[g.index] = partition
		st.roll.phase[g.index] = phase
		st.roll.message = fmt.Sprintf("group %s: %s", name, msg)
	}
	// stepAside reports whether the master has been without write permission long enough;
	// until then it holds the group at partition and asks for a requeue.
	stepAside := func(partition int32) (bool, time.Duration) {
		wait := stepAsideFor(br)
		since := st.roll.stepped[g.index]
		switch {
		case wait == 0 || since != nil && r.clock().Sub(since.Time) >= wait:
			return true, 0
		case since == nil:
			set(partition, v1alpha1.RollMasterSteppingAside, "withdrawing the master's write permission")
			st.roll.stepAside = g.index
			return false, 0
		default:
			left := wait - r.clock().Sub(since.Time)
			set(partition, v1alpha1.RollMasterSteppingAside, fmt.Sprintf("the master steps aside, restarting in %ds", int(left.Seconds()+0.5)))
			return false, left
		}
	}
	slaves := ordinals(replicas)[1:]
	slavesOutdated := false
	for _, o := range slaves {
		slavesOutdated = slavesOutdated || g.outdated[o]
	}
	if slavesOutdated && br.Spec.BrokerRole == v1alpha1.SyncMaster {
		if done, after := stepAside(replicas); !done {
			return after, nil
		}
	}
	switch {
	case slavesOutdated:
		set(1, v1alpha1.RollSlaves, "replacing the slaves, highest brokerId first")
		return 0, nil
	case !g.ready(slaves...) && g.was != v1alpha1.RollMaster:
		// Once the master is being replaced its slaves lose it and turn not Ready: that
		// must not move the partition back, which would restart the master at the old
		// revision.
		set(1, v1alpha1.RollSlaves, "waiting for the replaced slaves: "+notReadyPods(br, g, slaves))
		return 0, nil
	}
	// Once the master is being replaced it cannot be asked, and its slaves were within
	// the bound when it went.
	if lagging := laggingSlaves(br, st, g.index); lagging != "" && g.was != v1alpha1.RollMaster && podReady(g.pods[0]) {
		// No pod event comes when a slave catches up: look again soon.
		set(1, v1alpha1.RollSlaves, "waiting for the replaced slaves to catch up: "+lagging)
		return lagPoll, nil
	}
	if done, after := stepAside(1); !done {
		return after, nil
	}
	msg := "replacing the master"
	if since := st.roll.stepped[g.index]; since != nil {
		msg += ", which stepped aside at " + since.UTC().Format(time.RFC3339)
	}
	set(0, v1alpha1.RollMaster, msg)
	return 0, nil
}

// replaceBrokenPods deletes the pods of g at an older update revision that are not
// Ready: a StatefulSet with OrderedReady waits for such a pod for ever, so a roll to a
// broken spec would stay stuck after the spec is fixed. Pods of the current revision and
// Ready pods are left to the StatefulSet.
func (r *BrokerReconciler) replaceBrokenPods(ctx context.Context, br *v1alpha1.Broker, g *groupPods) error {
	for o, pod := range g.pods {
		if !g.outdated[o] || podReady(pod) || !pod.DeletionTimestamp.IsZero() ||
			pod.Labels[appsv1.StatefulSetRevisionLabel] == g.sts.Status.CurrentRevision {
			continue
		}
		if err := r.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
			return err
		}
		r.Recorder.Eventf(br, pod, corev1.EventTypeNormal, "BrokenPodReplaced", "Delete",
			"pod %s of an earlier spec never became Ready; replaced with the current spec", pod.Name)
	}
	return nil
}

// observeGroups reads each group's StatefulSet, and takes its pods from byName
// (observePods).
func (r *BrokerReconciler) observeGroups(ctx context.Context, br *v1alpha1.Broker, byName map[string]*corev1.Pod) ([]*groupPods, error) {
	var out []*groupPods
	for gi := range br.Spec.Groups {
		g := &groupPods{index: gi, pods: map[int32]*corev1.Pod{}, outdated: map[int32]bool{}}
		sts := &appsv1.StatefulSet{}
		err := r.Get(ctx, client.ObjectKey{Namespace: br.Namespace, Name: resource.BrokerGroupName(br, gi)}, sts)
		switch {
		case err == nil:
			g.sts = sts
		case client.IgnoreNotFound(err) != nil:
			return nil, err
		}
		for _, o := range ordinals(br.Spec.ReplicasPerGroup) {
			pod := byName[resource.BrokerPodName(br, gi, o)]
			if pod != nil {
				g.pods[o] = pod
			}
			if g.sts != nil && (pod == nil || pod.Labels[appsv1.StatefulSetRevisionLabel] != g.sts.Status.UpdateRevision) {
				g.outdated[o] = true
			}
		}
		out = append(out, g)
	}
	return out, nil
}

// driveRoll makes the name-server calls the plan asks for: it withdraws the write
// permission of the master stepping aside, and gives it back to the masters that are
// back (their registration after the restart usually restores it; a name server that
// kept the old registration would not).
func (r *BrokerReconciler) driveRoll(ctx context.Context, br *v1alpha1.Broker, st *brokerState) (time.Duration, error) {
	namesrvs := nameServersOf(br)
	if g := st.roll.stepAside; g >= 0 {
		if err := st.access.err(); err != nil {
			return retryAfter, fmt.Errorf("master of %s cannot step aside: %w", resource.BrokerName(g), err)
		}
		var errs []error
		topics := 0
		for _, ns := range namesrvs {
			n, err := st.access.Admin.WipeWritePerm(ctx, ns, resource.BrokerName(g))
			errs = append(errs, err)
			topics = max(topics, n)
		}
		if err := errors.Join(errs...); err != nil {
			return retryAfter, fmt.Errorf("WIPE_WRITE_PERM_OF_BROKER %s: %w", resource.BrokerName(g), err)
		}
		now := metav1.NewTime(r.clock())
		st.roll.stepped[g] = &now
		st.requeueWithin(stepAsideFor(br))
		r.Recorder.Eventf(br, nil, corev1.EventTypeNormal, "MasterSteppedAside", "WipeWritePerm",
			"master of %s: write permission withdrawn at %d name server(s) (%d topics) before its restart",
			resource.BrokerName(g), len(namesrvs), topics)
	}
	for g, since := range st.roll.stepped {
		if since == nil || !st.roll.current[g] {
			continue // still rolling, or not known to be back
		}
		if err := st.access.err(); err != nil {
			return retryAfter, fmt.Errorf("write permission of %s not given back: %w", resource.BrokerName(g), err)
		}
		restored, err := r.giveWritePermBack(ctx, st, namesrvs, resource.BrokerName(g))
		if err != nil {
			return retryAfter, err
		}
		delete(st.roll.stepped, g)
		r.Recorder.Eventf(br, nil, corev1.EventTypeNormal, "MasterBack", "AddWritePerm",
			"master of %s is back and takes writes (%s)", resource.BrokerName(g), restored)
	}
	st.roll.record(br)
	return 0, nil
}

// giveWritePermBack restores brokerName's write permission at every name server whose
// route of the broker's own topic (brokerTopicEnable) still lacks it, and says what it did.
func (r *BrokerReconciler) giveWritePermBack(ctx context.Context, st *brokerState, namesrvs []string, brokerName string) (string, error) {
	var added []string
	for _, ns := range namesrvs {
		route, err := st.access.Admin.TopicRoute(ctx, ns, brokerName)
		if err != nil {
			return "", fmt.Errorf("route of %s at %s: %w", brokerName, ns, err)
		}
		if q, ok := route[brokerName]; ok && protocol.IsWriteable(int(q.Perm)) {
			continue // the master's registration after its restart restored it
		}
		if _, err := st.access.Admin.AddWritePerm(ctx, ns, brokerName); err != nil {
			return "", fmt.Errorf("ADD_WRITE_PERM_OF_BROKER %s at %s: %w", brokerName, ns, err)
		}
		added = append(added, ns)
	}
	if len(added) == 0 {
		return "its registration restored the write permission", nil
	}
	return "ADD_WRITE_PERM_OF_BROKER at " + strings.Join(added, ", "), nil
}

// ordinals is 0..n-1.
func ordinals(n int32) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// notReadyPods names the pods of g among ordinals that are not Ready or not at the
// current spec.
func notReadyPods(br *v1alpha1.Broker, g *groupPods, ordinals []int32) string {
	var names []string
	for _, o := range ordinals {
		if !g.ready(o) {
			names = append(names, resource.BrokerPodName(br, g.index, o))
		}
	}
	return strings.Join(names, ", ") + " not Ready"
}
