package controllers

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/resource"
	"github.com/openrmq/rocketmq-operator/pkg/names"
)

// Scale-in. A group beyond spec.groups is not deleted at once: its unconsumed messages
// would become unreachable. It drains first:
//
//	read-only   brokerPermission=4 on its master (UPDATE_BROKER_CONFIG; the broker
//	            re-registers at once, so producers send to the other groups while
//	            consumers keep reading it); set again at every look, so a master that
//	            restarted with its ConfigMap's permission is made read-only again
//	drained     every subscription group the master knows, but its own system groups,
//	            has consumed every queue it has offsets for there (GET_CONSUME_STATS)
//	removed     the group's objects are deleted; its claims follow storage.whenScaled
//
// spec.scaleIn.drainTimeoutSeconds ends the wait early (0: no wait). status.draining keeps
// when each group started to drain; the ScaleIn condition says what it waits for. A group
// that is back in spec.groups while it drains gets its write permission back.

// drainPoll is how often a draining group is looked at.
const drainPoll = 10 * time.Second

// readOnlyPermission is brokerPermission READ (4): PERM_WRITE withdrawn.
const readOnlyPermission = "4"

// configuredPermission is the brokerPermission the Broker's config gives its masters.
func configuredPermission(br *v1alpha1.Broker) string {
	if p, ok := br.Spec.Config["brokerPermission"]; ok {
		return p
	}
	return "6"
}

// maxLagListed bounds the consumer groups and topics the ScaleIn message names per group.
const maxLagListed = 5

// drainTimeout is spec.scaleIn.drainTimeoutSeconds; ok is false when unset (wait for ever).
func drainTimeout(br *v1alpha1.Broker) (d time.Duration, ok bool) {
	if br.Spec.ScaleIn == nil || br.Spec.ScaleIn.DrainTimeoutSeconds == nil {
		return 0, false
	}
	return time.Duration(*br.Spec.ScaleIn.DrainTimeoutSeconds) * time.Second, true
}

// scaleIn drains the groups at or beyond spec.groups and removes those that are drained,
// gives the write permission back to draining groups raised again, and deletes the pod
// Services of pods that no longer exist.
func (r *BrokerReconciler) scaleIn(ctx context.Context, br *v1alpha1.Broker, st *brokerState) (time.Duration, error) {
	var sets appsv1.StatefulSetList
	if err := r.List(ctx, &sets, client.InNamespace(br.Namespace), client.MatchingLabels{
		resource.InstanceLabel: br.Name, resource.ComponentLabel: resource.BrokerComponent}); err != nil {
		return 0, err
	}
	was := map[string]v1alpha1.DrainingGroup{}
	for _, d := range br.Status.Draining {
		was[d.BrokerName] = d
	}
	var draining []v1alpha1.DrainingGroup
	var waits []string
	for i := range sets.Items {
		sts := &sets.Items[i]
		idx, ok := resource.BrokerGroupIndex(sts.Labels[resource.BrokerNameLabel])
		if !ok || idx < br.Spec.Groups || !metav1.IsControlledBy(sts, br) || sts.Name != resource.BrokerGroupName(br, idx) {
			continue
		}
		name := resource.BrokerName(idx)
		d, known := was[name]
		if !known {
			d = v1alpha1.DrainingGroup{BrokerName: name, Since: metav1.NewTime(r.clock()), Unconsumed: -1,
				MasterOrdinal: resource.BrokerMasterOrdinal(br, idx)}
		}
		left, wait := r.drain(ctx, br, st, idx, &d, !known)
		timeout, bounded := drainTimeout(br)
		timedOut := bounded && r.clock().Sub(d.Since.Time) >= timeout
		if left != 0 && !timedOut {
			draining = append(draining, d)
			waits = append(waits, wait)
			continue
		}
		if err := r.removeGroup(ctx, br, sts, idx); err != nil {
			return 0, err
		}
		if left == 0 {
			r.Recorder.Eventf(br, nil, corev1.EventTypeNormal, "GroupRemoved", "ScaleIn",
				"removed broker group %s (StatefulSet %s): its messages were consumed", name, sts.Name)
		} else {
			r.Recorder.Eventf(br, nil, corev1.EventTypeWarning, "GroupRemovedUndrained", "ScaleIn",
				"removed broker group %s (StatefulSet %s) after scaleIn.drainTimeoutSeconds=%d: %s",
				name, sts.Name, *br.Spec.ScaleIn.DrainTimeoutSeconds, wait)
		}
	}
	for _, d := range br.Status.Draining {
		if idx, ok := resource.BrokerGroupIndex(d.BrokerName); ok && idx < br.Spec.Groups {
			if err := r.restoreWrite(ctx, br, st, idx); err != nil {
				draining = append(draining, d)
				waits = append(waits, fmt.Sprintf("group %s is back in spec.groups but keeps read-only: %v", d.BrokerName, err))
				continue
			}
			r.Recorder.Eventf(br, nil, corev1.EventTypeNormal, "ScaleInCancelled", "ScaleIn",
				"broker group %s is back in spec.groups: its write permission is given back", d.BrokerName)
		}
	}
	setScaleInCondition(br, draining, waits)
	br.Status.Draining = draining
	if len(draining) > 0 {
		st.requeueWithin(drainPoll)
	}
	return 0, r.removeStalePodServices(ctx, br)
}

// drain makes group idx read-only and counts what its consumer groups have left there
// (into d.Unconsumed). left is 0 once drained, -1 when it could not be told; wait says
// what the group waits for.
func (r *BrokerReconciler) drain(ctx context.Context, br *v1alpha1.Broker, st *brokerState, idx int32, d *v1alpha1.DrainingGroup, first bool) (left int64, wait string) {
	name := resource.BrokerName(idx)
	timeout, bounded := drainTimeout(br)
	if bounded && timeout == 0 {
		return -1, "scaleIn.drainTimeoutSeconds is 0"
	}
	d.Unconsumed = -1
	since := "read-only since " + d.Since.UTC().Format(time.RFC3339)
	if bounded {
		since += fmt.Sprintf(", removed at the latest at %s", d.Since.Add(timeout).UTC().Format(time.RFC3339))
	}
	if err := st.access.err(); err != nil {
		return -1, fmt.Sprintf("group %s: cannot be drained: %v (%s)", name, err, since)
	}
	master := resource.BrokerMasterAddress(br, idx)
	if err := st.access.Admin.UpdateBrokerConfig(ctx, master, map[string]string{"brokerPermission": readOnlyPermission}); err != nil {
		return -1, fmt.Sprintf("group %s: its master could not be made read-only: %v (%s)", name, err, since)
	}
	if first {
		r.Recorder.Eventf(br, nil, corev1.EventTypeNormal, "GroupDraining", "ScaleIn",
			"broker group %s is scaled in: read-only now, removed once its messages are consumed", name)
	}
	lags, err := groupLags(ctx, st.access.Admin, master)
	if err != nil {
		return -1, fmt.Sprintf("group %s: its consumer groups' lag could not be read: %v (%s)", name, err, since)
	}
	d.Unconsumed = 0
	for _, l := range lags {
		d.Unconsumed += l.messages
	}
	if d.Unconsumed == 0 {
		return 0, ""
	}
	var parts []string
	for i, l := range lags {
		if i == maxLagListed {
			parts = append(parts, fmt.Sprintf("%d more", len(lags)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%d of topic %s by consumer group %s", l.messages, l.topic, l.group))
	}
	return d.Unconsumed, fmt.Sprintf("group %s waits for %d messages to be consumed: %s (%s)",
		name, d.Unconsumed, strings.Join(parts, ", "), since)
}

// topicLag is what one consumer group has not consumed of one topic on one broker.
type topicLag struct {
	group, topic string
	messages     int64
}

// groupLags lists, largest first, what the consumer groups the broker at addr knows have
// not consumed there: their queues' max offsets less their committed offsets, retry
// topics included. The broker's own system groups are left out.
func groupLags(ctx context.Context, admin BrokerAdmin, addr string) ([]topicLag, error) {
	groups, err := admin.SubscriptionGroups(ctx, addr)
	if err != nil {
		return nil, err
	}
	var out []topicLag
	for _, g := range groups {
		if slices.Contains(names.SystemGroups, g) {
			continue
		}
		queues, err := admin.ConsumeStats(ctx, addr, g, "")
		if err != nil {
			return nil, fmt.Errorf("consumer group %s: %w", g, err)
		}
		byTopic := map[string]int64{}
		for _, q := range queues {
			if n := q.BrokerOffset - q.ConsumerOffset; n > 0 {
				byTopic[q.Topic] += n
			}
		}
		for t, n := range byTopic {
			out = append(out, topicLag{group: g, topic: t, messages: n})
		}
	}
	slices.SortFunc(out, func(a, b topicLag) int {
		return cmp.Or(cmp.Compare(b.messages, a.messages), strings.Compare(a.group, b.group), strings.Compare(a.topic, b.topic))
	})
	return out, nil
}

// restoreWrite gives the master of group idx, raised again while it drained, the
// permission its broker.conf has.
func (r *BrokerReconciler) restoreWrite(ctx context.Context, br *v1alpha1.Broker, st *brokerState, idx int32) error {
	if err := st.access.err(); err != nil {
		return err
	}
	return st.access.Admin.UpdateBrokerConfig(ctx, resource.BrokerMasterAddress(br, idx),
		map[string]string{"brokerPermission": configuredPermission(br)})
}

// setScaleInCondition records what the draining groups wait for; once the last one is
// gone the condition says so, and a Broker that never scaled in has none.
func setScaleInCondition(br *v1alpha1.Broker, draining []v1alpha1.DrainingGroup, waits []string) {
	c := metav1.Condition{Type: v1alpha1.ConditionScaleIn, ObservedGeneration: br.Generation}
	switch {
	case len(draining) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, "Draining", strings.Join(waits, "; ")
	case len(br.Status.Draining) > 0 || meta.FindStatusCondition(br.Status.Conditions, v1alpha1.ConditionScaleIn) != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "GroupsRemoved", "no group is draining: the groups scaled in are removed"
	default:
		return
	}
	meta.SetStatusCondition(&br.Status.Conditions, c)
}

// removeGroup deletes the objects of group idx. Its claims follow storage.whenScaled, not
// whenDeleted: before deleting the StatefulSet its whenDeleted retention is set to the
// whenScaled policy, because the StatefulSet controller applies whenDeleted when the
// StatefulSet itself goes.
func (r *BrokerReconciler) removeGroup(ctx context.Context, br *v1alpha1.Broker, sts *appsv1.StatefulSet, idx int32) error {
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, sts, func() error {
		if sts.Spec.PersistentVolumeClaimRetentionPolicy == nil {
			sts.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
		}
		sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted =
			sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled
		return nil
	}); err != nil {
		return err
	}
	for _, obj := range resource.BrokerGroupObjects(br, idx) {
		if err := r.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// removeStalePodServices deletes the pod Services of groups and ordinals that no longer
// exist (spec.groups or spec.replicasPerGroup lowered) and are not draining.
func (r *BrokerReconciler) removeStalePodServices(ctx context.Context, br *v1alpha1.Broker) error {
	var svcs corev1.ServiceList
	if err := r.List(ctx, &svcs, client.InNamespace(br.Namespace), client.MatchingLabels{
		resource.InstanceLabel: br.Name, resource.ComponentLabel: resource.BrokerComponent}); err != nil {
		return err
	}
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		idLabel, isPodService := svc.Labels[resource.BrokerIDLabel]
		if !isPodService || !metav1.IsControlledBy(svc, br) {
			continue
		}
		group := svc.Labels[resource.BrokerNameLabel]
		idx, ok := resource.BrokerGroupIndex(group)
		id, err := strconv.ParseInt(idLabel, 10, 32)
		if !ok || err != nil || (idx < br.Spec.Groups && int32(id) < br.Spec.ReplicasPerGroup) ||
			slices.ContainsFunc(br.Status.Draining, func(d v1alpha1.DrainingGroup) bool { return d.BrokerName == group }) {
			continue
		}
		if err := r.Delete(ctx, svc); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
