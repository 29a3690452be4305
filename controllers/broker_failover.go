package controllers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/resource"
)

// Failover of a master/slave group (spec.failover). The brokers keep the invariants
// (broker/epoch.go: epochs, the run-time role change, the rejoin cut, fencing); the
// operator decides, one phase per look, and records each step in
// status.groups[].failover before the next, so that a restarted operator resumes where
// it stood:
//
//	Fencing    the old master stops taking writes: a healthy one is made read-only
//	           (brokerPermission=4) and the chosen slave catches up with it; a lost one
//	           loses its write permission at the name servers (WIPE_WRITE_PERM_OF_BROKER),
//	           and the new epoch makes the name servers refuse it should it come back
//	Promoting  masterOrdinal and epoch move to the chosen slave (the rendered roles and
//	           the HA Service follow at once); the slave is told its new role
//	           (UPDATE_BROKER_CONFIG brokerRole, brokerId=0, masterEpoch) and reopens as
//	           master of the new epoch
//	Rejoining  the old master becomes a slave of the new one: told so when it runs,
//	           restarted (its pod deleted) when it does not, so that it starts with its new
//	           role; it cuts what it wrote past the epoch's start before replicating
//	Done       the old master replicates, and the Event says what it had to cut
//
// The slave chosen holds the highest commitlog offset of the Ready slaves: under
// SYNC_MASTER every acknowledged send is on some slave, and slaves hold prefixes of the
// same log, so the longest holds every one.

// failoverPoll is how soon a failover under way looks again.
const failoverPoll = time.Second

// noSlavePoll is how soon a failover that found no slave to promote looks again.
const noSlavePoll = 10 * time.Second

var errNoSlave = errors.New("no slave to promote")

// catchUpTimeout bounds how long a planned failover waits for its slave to catch up with
// the read-only master before it gives up and gives the master its writes back.
const catchUpTimeout = time.Minute

func failoverMode(br *v1alpha1.Broker) (v1alpha1.FailoverMode, time.Duration) {
	f := br.Spec.Failover
	if f == nil || f.Mode == "" {
		return v1alpha1.FailoverDisabled, 0
	}
	after := time.Duration(f.AfterSeconds) * time.Second
	if after <= 0 {
		after = 60 * time.Second
	}
	return f.Mode, after
}

func failoverMessage(gs *v1alpha1.BrokerGroupStatus) string {
	if gs.Failover == nil || gs.Failover.Phase == v1alpha1.FailoverDone {
		return "the master moves back to ordinal 0 before the roll"
	}
	return gs.Failover.Message
}

// inProgress reports whether f is past its start and before the new master serves.
func inProgress(f *v1alpha1.GroupFailover) bool {
	return f != nil && (f.Phase == v1alpha1.FailoverFencing || f.Phase == v1alpha1.FailoverPromoting)
}

// driveFailover starts and advances the groups' failovers. It runs after planRoll (which
// asks for a switch back to ordinal 0 before rolling a group whose master moved) and
// before applyChildren (which renders the roles the status now says).
func (r *BrokerReconciler) driveFailover(ctx context.Context, br *v1alpha1.Broker, st *brokerState) (time.Duration, error) {
	mode, after := failoverMode(br)
	asked, hasAsked := br.Annotations[v1alpha1.FailoverAnnotation]
	var errs []error
	for g := range br.Spec.Groups {
		gs := resource.BrokerGroupStatusOf(br, g)
		if gs == nil {
			continue // status comes at the end of the first reconcile
		}
		name := resource.BrokerName(g)
		r.trackMaster(br, st, g, gs)
		if gs.Failover != nil && gs.Failover.Phase != v1alpha1.FailoverDone {
			was := gs.Failover.Phase
			if err := r.advanceFailover(ctx, br, st, g, gs); err != nil {
				errs = append(errs, fmt.Errorf("failover of %s: %w", name, err))
			}
			st.requeueWithin(failoverPoll)
			// One failover at a time; a new one may replace one whose old master is
			// still away (Rejoining), not one that just ended.
			if was != v1alpha1.FailoverRejoining || gs.Failover.Phase == v1alpha1.FailoverDone {
				continue
			}
		}
		var trigger v1alpha1.FailoverMode
		target := int32(-1)
		switch {
		case asked == name:
			if mode == v1alpha1.FailoverDisabled {
				r.Recorder.Eventf(br, nil, corev1.EventTypeWarning, "FailoverRefused", "Failover",
					"%s asks to fail %s over, but spec.failover.mode is Disabled", v1alpha1.FailoverAnnotation, name)
				continue
			}
			trigger = v1alpha1.FailoverManual
		case st.switchBack[g]:
			trigger, target = v1alpha1.FailoverManual, 0
		case mode == v1alpha1.FailoverAutomatic && gs.MasterUnavailableSince != nil && gs.Rolling != v1alpha1.RollMaster:
			if wait := after - r.clock().Sub(gs.MasterUnavailableSince.Time); wait > 0 {
				st.requeueWithin(wait)
				continue
			}
			trigger = v1alpha1.FailoverAutomatic
		default:
			continue
		}
		switch err := r.startFailover(ctx, br, st, g, gs, trigger, target); {
		case errors.Is(err, errNoSlave):
			// Not an error of this reconcile: the rest of the checklist goes on, and a
			// slave that starts is promoted at a later look.
			st.requeueWithin(noSlavePoll)
		case err != nil:
			errs = append(errs, fmt.Errorf("failover of %s: %w", name, err))
		default:
			st.requeueWithin(failoverPoll)
		}
	}
	if hasAsked && !askedFailoverPending(br, asked) {
		if !isGroupOf(br, asked) {
			r.Recorder.Eventf(br, nil, corev1.EventTypeWarning, "FailoverRefused", "Failover",
				"%s names %q, which is no group of this Broker", v1alpha1.FailoverAnnotation, asked)
		}
		if err := r.removeFailoverAnnotation(ctx, br); err != nil {
			errs = append(errs, err)
		}
	}
	return 0, errors.Join(errs...)
}

// askedFailoverPending reports whether the group the annotation names still fails over
// at the annotation's request (Fencing or Promoting); the annotation is removed otherwise.
func askedFailoverPending(br *v1alpha1.Broker, name string) bool {
	gs := resource.BrokerGroupStatusByName(br, name)
	return gs != nil && inProgress(gs.Failover) && gs.Failover.Trigger == v1alpha1.FailoverManual
}

func isGroupOf(br *v1alpha1.Broker, name string) bool {
	for g := range br.Spec.Groups {
		if resource.BrokerName(g) == name {
			return true
		}
	}
	return false
}

// removeFailoverAnnotation patches a copy: the patch's answer carries the stored
// status, which would overwrite what this reconcile found.
func (r *BrokerReconciler) removeFailoverAnnotation(ctx context.Context, br *v1alpha1.Broker) error {
	cp := br.DeepCopy()
	delete(cp.Annotations, v1alpha1.FailoverAnnotation)
	if err := r.Patch(ctx, cp, client.MergeFrom(br)); client.IgnoreNotFound(err) != nil {
		return err
	}
	delete(br.Annotations, v1alpha1.FailoverAnnotation)
	return nil
}

// trackMaster keeps masterUnavailableSince: when the master's pod was first seen not
// Ready, nil while it is.
func (r *BrokerReconciler) trackMaster(br *v1alpha1.Broker, st *brokerState, g int32, gs *v1alpha1.BrokerGroupStatus) {
	if podReady(st.pods[resource.BrokerPodName(br, g, gs.MasterOrdinal)]) {
		gs.MasterUnavailableSince = nil
		return
	}
	if gs.MasterUnavailableSince == nil {
		now := metav1.NewTime(r.clock())
		gs.MasterUnavailableSince = &now
	}
}

// startFailover chooses the new master (target, or the running slave with the highest
// offset when target < 0) and fences the old one.
func (r *BrokerReconciler) startFailover(ctx context.Context, br *v1alpha1.Broker, st *brokerState, g int32,
	gs *v1alpha1.BrokerGroupStatus, trigger v1alpha1.FailoverMode, target int32) error {
	name := resource.BrokerName(g)
	if err := st.access.err(); err != nil {
		return err
	}
	from := gs.MasterOrdinal
	to, offset, err := r.chooseSlave(ctx, br, st, g, target)
	if err != nil {
		r.Recorder.Eventf(br, nil, corev1.EventTypeWarning, "FailoverImpossible", "Failover", "%s: %v", name, err)
		return err
	}
	f := &v1alpha1.GroupFailover{Trigger: trigger, Phase: v1alpha1.FailoverFencing, From: from, To: to,
		Epoch: gs.Epoch + 1, StartedAt: metav1.NewTime(r.clock())}
	why := fmt.Sprintf("its master %s has been unavailable since %s", resource.BrokerPodName(br, g, from),
		ptr.Deref(gs.MasterUnavailableSince, metav1.Time{}).UTC().Format(time.RFC3339))
	if trigger == v1alpha1.FailoverManual {
		why = "asked for"
		if target == 0 {
			why = "switching the master back to ordinal 0 before a roll"
		}
	}
	f.Reason = fmt.Sprintf("%s: %s is the new master (commitlog at %d)", why, resource.BrokerPodName(br, g, to), offset)
	gs.Failover = f
	r.Recorder.Eventf(br, nil, corev1.EventTypeWarning, "FailoverStarted", "Failover",
		"%s fails over to epoch %d: %s", name, f.Epoch, f.Reason)
	return r.advanceFailover(ctx, br, st, g, gs)
}

// chooseSlave returns the running slave with the highest commitlog offset (or target
// when >= 0, if it runs), and that offset.
func (r *BrokerReconciler) chooseSlave(ctx context.Context, br *v1alpha1.Broker, st *brokerState, g, target int32) (int32, int64, error) {
	best, bestOff := int32(-1), int64(-1)
	var why []string
	for _, o := range resource.BrokerSlaveOrdinals(br, g) {
		if target >= 0 && o != target {
			continue
		}
		pod := resource.BrokerPodName(br, g, o)
		if !podRunning(st.pods[pod]) {
			why = append(why, pod+" is not running")
			continue
		}
		off, err := st.access.Admin.CommitLogMaxOffset(ctx, resource.BrokerMemberAddress(br, g, o))
		if err != nil {
			why = append(why, fmt.Sprintf("%s: %v", pod, err))
			continue
		}
		if off > bestOff {
			best, bestOff = o, off
		}
	}
	if best < 0 {
		return 0, 0, fmt.Errorf("%w: %s", errNoSlave, strings.Join(why, "; "))
	}
	return best, bestOff, nil
}

// podRunning reports whether p's containers run. A slave whose master is gone is not
// Ready (its /readyz wants its master) but serves reads, and is what a failover promotes.
func podRunning(p *corev1.Pod) bool {
	if p == nil || !p.DeletionTimestamp.IsZero() || p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Running == nil {
			return false
		}
	}
	return true
}

// advanceFailover moves gs.Failover one phase on when it can.
func (r *BrokerReconciler) advanceFailover(ctx context.Context, br *v1alpha1.Broker, st *brokerState, g int32, gs *v1alpha1.BrokerGroupStatus) error {
	if err := st.access.err(); err != nil {
		return err
	}
	f := gs.Failover
	switch f.Phase {
	case v1alpha1.FailoverFencing:
		return r.fence(ctx, br, st, g, gs)
	case v1alpha1.FailoverPromoting:
		return r.promote(ctx, br, st, g, gs)
	case v1alpha1.FailoverRejoining:
		return r.rejoin(ctx, br, st, g, gs)
	}
	return nil
}

// fence stops the old master's writes. A planned failover keeps the old master serving
// reads and waits for the new master to hold all it has; an unplanned one cannot ask the
// old master anything.
func (r *BrokerReconciler) fence(ctx context.Context, br *v1alpha1.Broker, st *brokerState, g int32, gs *v1alpha1.BrokerGroupStatus) error {
	f := gs.Failover
	admin := st.access.Admin
	oldAddr := resource.BrokerMemberAddress(br, g, f.From)
	newAddr := resource.BrokerMemberAddress(br, g, f.To)
	var start int64
	if f.Trigger == v1alpha1.FailoverManual {
		if err := admin.UpdateBrokerConfig(ctx, oldAddr, map[string]string{"brokerPermission": readOnlyPermission}); err != nil {
			return fmt.Errorf("make the old master read-only: %w", err)
		}
		oldEnd, err := admin.CommitLogMaxOffset(ctx, oldAddr)
		if err != nil {
			return fmt.Errorf("the old master's offset: %w", err)
		}
		newEnd, err := admin.CommitLogMaxOffset(ctx, newAddr)
		if err != nil {
			return fmt.Errorf("the new master's offset: %w", err)
		}
		if newEnd < oldEnd {
			if r.clock().Sub(f.StartedAt.Time) > catchUpTimeout {
				return r.abandon(ctx, br, st, g, gs, fmt.Sprintf("%s did not catch up with the old master within %s (%d of %d bytes)",
					resource.BrokerPodName(br, g, f.To), catchUpTimeout, newEnd, oldEnd))
			}
			f.Message = fmt.Sprintf("waiting for %s to catch up: %d bytes behind", resource.BrokerPodName(br, g, f.To), oldEnd-newEnd)
			return nil
		}
		start = newEnd
	} else {
		for _, ns := range nameServersOf(br) {
			if _, err := admin.WipeWritePerm(ctx, ns, resource.BrokerName(g)); err != nil {
				// The new epoch fences the old master at that name server anyway.
				f.Message = fmt.Sprintf("write permission not withdrawn at %s: %v", ns, err)
			}
		}
		end, err := admin.CommitLogMaxOffset(ctx, newAddr)
		if err != nil {
			return fmt.Errorf("the new master's offset: %w", err)
		}
		start = end
	}
	f.StartOffset = &start
	f.Phase = v1alpha1.FailoverPromoting
	f.Message = fmt.Sprintf("promoting %s to master of epoch %d at offset %d", resource.BrokerPodName(br, g, f.To), f.Epoch, start)
	// From here the roles the pods read at a restart, and the HA Service, follow the new
	// master: a restart of either pod now starts it in its new role.
	gs.MasterOrdinal, gs.Epoch = f.To, f.Epoch
	gs.MasterUnavailableSince = nil
	return r.promote(ctx, br, st, g, gs)
}

// abandon ends a planned failover that cannot finish: the old master gets its writes back.
func (r *BrokerReconciler) abandon(ctx context.Context, br *v1alpha1.Broker, st *brokerState, g int32, gs *v1alpha1.BrokerGroupStatus, why string) error {
	if err := r.restoreWrite(ctx, br, st, g); err != nil {
		return fmt.Errorf("give the old master its writes back: %w", err)
	}
	gs.Failover.Phase, gs.Failover.Message = v1alpha1.FailoverDone, "abandoned: "+why
	r.Recorder.Eventf(br, nil, corev1.EventTypeWarning, "FailoverAbandoned", "Failover", "%s: %s", resource.BrokerName(g), why)
	return nil
}

// promote tells the chosen slave its new role until it serves as master of the epoch.
func (r *BrokerReconciler) promote(ctx context.Context, br *v1alpha1.Broker, st *brokerState, g int32, gs *v1alpha1.BrokerGroupStatus) error {
	f := gs.Failover
	addr := resource.BrokerMemberAddress(br, g, f.To)
	info, err := st.access.Admin.RuntimeInfo(ctx, addr)
	if err != nil {
		// It reopens in its new role: a second or so without an answer.
		f.Message = fmt.Sprintf("waiting for %s to answer as master of epoch %d: %v", resource.BrokerPodName(br, g, f.To), f.Epoch, err)
		return nil
	}
	if info["brokerRole"] != "" && info["brokerRole"] != "SLAVE" && info["masterEpoch"] == strconv.FormatInt(f.Epoch, 10) {
		now := metav1.NewTime(r.clock())
		f.WritesBackAt, f.Phase = &now, v1alpha1.FailoverRejoining
		f.Message = fmt.Sprintf("%s is master of epoch %d; the old master %s rejoins as its slave",
			resource.BrokerPodName(br, g, f.To), f.Epoch, resource.BrokerPodName(br, g, f.From))
		r.Recorder.Eventf(br, nil, corev1.EventTypeNormal, "MasterPromoted", "Failover",
			"%s: %s is master of epoch %d and takes writes, %s after the failover started",
			resource.BrokerName(g), resource.BrokerPodName(br, g, f.To), f.Epoch, now.Sub(f.StartedAt.Time).Round(time.Millisecond))
		if _, err := r.giveWritePermBack(ctx, st, nameServersOf(br), resource.BrokerName(g)); err != nil {
			f.Message += "; " + err.Error()
		}
		return r.rejoin(ctx, br, st, g, gs)
	}
	props := map[string]string{
		"brokerRole": string(br.Spec.BrokerRole), "brokerId": "0", "masterEpoch": strconv.FormatInt(f.Epoch, 10),
		"brokerPermission": configuredPermission(br),
	}
	if br.Spec.BrokerRole == v1alpha1.SyncMaster {
		// Its slave is the old master, gone or about to reopen: until it replicates
		// again the group takes writes acknowledged by its master alone.
		props["syncMasterAcksAlone"] = "true"
	}
	return st.access.Admin.UpdateBrokerConfig(ctx, addr, props)
}

// rejoin makes the old master a slave of the new one.
func (r *BrokerReconciler) rejoin(ctx context.Context, br *v1alpha1.Broker, st *brokerState, g int32, gs *v1alpha1.BrokerGroupStatus) error {
	f := gs.Failover
	pod := st.pods[resource.BrokerPodName(br, g, f.From)]
	if pod == nil || !pod.DeletionTimestamp.IsZero() {
		return nil // its StatefulSet brings it back with its new role
	}
	if !podRunning(pod) {
		if pod.CreationTimestamp.Time.Before(f.StartedAt.Time) {
			// Created before the failover, it would start with its old role once it can;
			// a new pod reads the new one. (A running old master is told at run time.)
			if err := r.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
				return err
			}
			f.Message = fmt.Sprintf("restarting %s, the old master, as a slave", pod.Name)
		}
		return nil
	}
	addr := resource.BrokerMemberAddress(br, g, f.From)
	info, err := st.access.Admin.RuntimeInfo(ctx, addr)
	if err != nil {
		f.Message = fmt.Sprintf("waiting for the old master %s to answer: %v", pod.Name, err)
		return nil
	}
	if info["brokerRole"] != "SLAVE" {
		return st.access.Admin.UpdateBrokerConfig(ctx, addr, map[string]string{
			"brokerRole": "SLAVE", "brokerId": strconv.Itoa(int(resource.BrokerID(br, g, f.From))),
			"haMasterAddress": resource.BrokerMasterHAAddress(br, g), "brokerPermission": configuredPermission(br),
		})
	}
	if info["masterEpoch"] != strconv.FormatInt(f.Epoch, 10) {
		return nil // not replicating from the new master yet (it learns the epoch when it does)
	}
	if br.Spec.BrokerRole == v1alpha1.SyncMaster {
		// Back to waiting for a slave once it holds nearly all the master has.
		if l, ok := st.lag[pod.Name]; !ok || l.err != nil || l.bytes > maxSlaveLag(br) {
			f.Message = fmt.Sprintf("%s replicates from %s and catches up", pod.Name, resource.BrokerPodName(br, g, f.To))
			return nil
		}
		if err := st.access.Admin.UpdateBrokerConfig(ctx, resource.BrokerMemberAddress(br, g, f.To),
			map[string]string{"syncMasterAcksAlone": "false"}); err != nil {
			return fmt.Errorf("the new master waits for its slave again: %w", err)
		}
	}
	extra := int64(0)
	if from, to, ok := parseCut(info["lastEpochCut"]); ok && f.StartOffset != nil && from == *f.StartOffset {
		extra = to - from
	}
	f.OldMasterExtraBytes, f.Phase = &extra, v1alpha1.FailoverDone
	f.Message = fmt.Sprintf("%s replicates from %s", pod.Name, resource.BrokerPodName(br, g, f.To))
	if extra > 0 {
		r.Recorder.Eventf(br, pod, corev1.EventTypeWarning, "OldMasterTruncated", "Failover",
			"%s: the old master %s held %d bytes (commitlog offsets %d to %d) that were never replicated to %s; it cut them to rejoin as a slave",
			resource.BrokerName(g), pod.Name, extra, *f.StartOffset, *f.StartOffset+extra, resource.BrokerPodName(br, g, f.To))
	} else {
		r.Recorder.Eventf(br, pod, corev1.EventTypeNormal, "OldMasterRejoined", "Failover",
			"%s: the old master %s replicates from %s, nothing cut", resource.BrokerName(g), pod.Name, resource.BrokerPodName(br, g, f.To))
	}
	return nil
}

// parseCut reads the broker's lastEpochCut, "from-to".
func parseCut(s string) (from, to int64, ok bool) {
	a, b, found := strings.Cut(s, "-")
	from, err1 := strconv.ParseInt(a, 10, 64)
	to, err2 := strconv.ParseInt(b, 10, 64)
	return from, to, found && err1 == nil && err2 == nil
}
