package controllers

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// maxRecordedQueues bounds the per-queue record in status; the rest is only counted.
const maxRecordedQueues = 256

// Offset changes are applied once per id: status.lastOffset*.id is compared with the spec's
// id and written right after the brokers accepted the change. If a later master fails, the
// retry re-applies to the earlier ones too; that is harmless for a timestamp (the same
// target) and for a clone (the same source offsets).

type queueKey struct {
	topic, broker string
	queue         int32
}

// migrateOffsets clones spec.offsetMigration.fromGroup's offsets onto this group on every
// master (CLONE_GROUP_OFFSET), once per id.
func (r *ConsumerGroupReconciler) migrateOffsets(ctx context.Context, cg *v1alpha1.ConsumerGroup, st *cgState) (time.Duration, error) {
	m := cg.Spec.OffsetMigration
	applied := func(s *v1alpha1.ConsumerGroupStatus) bool {
		return s.LastOffsetMigration != nil && s.LastOffsetMigration.ID == m.ID
	}
	if m == nil || applied(&cg.Status) {
		return 0, nil
	}
	if done, err := r.appliedFresh(ctx, cg, applied); done || err != nil {
		return 0, err
	}
	before, after := map[queueKey]int64{}, map[queueKey]int64{}
	for _, name := range slices.Sorted(maps.Keys(st.masters)) {
		addr := st.masters[name]
		if err := r.collect(ctx, st.admin, addr, st.group, m.Topic, before); err != nil {
			return 0, err
		}
		if err := st.admin.CloneGroupOffset(ctx, addr, m.FromGroup, st.group, m.Topic); err != nil {
			offsetChanged("migration", err)
			r.Recorder.Eventf(cg, nil, corev1.EventTypeWarning, "OffsetMigrationFailed", "CloneGroupOffset",
				"migration %s from %s on %s: %v", m.ID, m.FromGroup, name, err)
			return 0, fmt.Errorf("CLONE_GROUP_OFFSET on %s: %w", name, err)
		}
		if err := r.collect(ctx, st.admin, addr, st.group, m.Topic, after); err != nil {
			return 0, err
		}
	}
	cg.Status.LastOffsetMigration = appliedChange(m.ID, before, after)
	offsetChanged("migration", nil)
	r.Recorder.Eventf(cg, nil, corev1.EventTypeNormal, "OffsetsMigrated", "CloneGroupOffset",
		"migration %s: copied offsets of %s onto %s on %d master(s)", m.ID, m.FromGroup, st.group, len(st.masters))
	return 0, nil
}

// resetOffsets applies spec.offsetReset (INVOKE_BROKER_TO_RESET_OFFSET) once per id, for
// one topic or for every topic the group has offsets for on each master.
func (r *ConsumerGroupReconciler) resetOffsets(ctx context.Context, cg *v1alpha1.ConsumerGroup, st *cgState) (time.Duration, error) {
	rs := cg.Spec.OffsetReset
	applied := func(s *v1alpha1.ConsumerGroupStatus) bool {
		return s.LastOffsetReset != nil && s.LastOffsetReset.ID == rs.ID
	}
	if rs == nil || applied(&cg.Status) {
		return 0, nil
	}
	if done, err := r.appliedFresh(ctx, cg, applied); done || err != nil {
		return 0, err
	}
	ts := resetTimestamp(rs)
	before, after := map[queueKey]int64{}, map[queueKey]int64{}
	for _, name := range slices.Sorted(maps.Keys(st.masters)) {
		addr := st.masters[name]
		if err := r.collect(ctx, st.admin, addr, st.group, rs.Topic, before); err != nil {
			return 0, err
		}
		topics := []string{rs.Topic}
		if rs.Topic == "" {
			topics = topicsOf(before, name)
		}
		for _, topic := range topics {
			queues, err := st.admin.ResetOffset(ctx, addr, topic, st.group, ts)
			if err != nil {
				offsetChanged("reset", err)
				r.Recorder.Eventf(cg, nil, corev1.EventTypeWarning, "OffsetResetFailed", "ResetOffset",
					"reset %s of topic %s on %s: %v", rs.ID, topic, name, err)
				return 0, fmt.Errorf("INVOKE_BROKER_TO_RESET_OFFSET topic %s on %s: %w", topic, name, err)
			}
			for _, q := range queues {
				after[queueKey{q.Topic, q.BrokerName, q.QueueID}] = q.ConsumerOffset
			}
		}
	}
	cg.Status.LastOffsetReset = appliedChange(rs.ID, before, after)
	offsetChanged("reset", nil)
	r.Recorder.Eventf(cg, nil, corev1.EventTypeNormal, "OffsetsReset", "ResetOffset",
		"reset %s: %d queue(s) of group %s moved to %s", rs.ID, len(after), st.group, describeTarget(rs))
	return 0, nil
}

// appliedFresh re-reads the status from the API server, not the cache, and says whether
// the change was applied already; if so it copies the fresh record into cg.
func (r *ConsumerGroupReconciler) appliedFresh(ctx context.Context, cg *v1alpha1.ConsumerGroup,
	applied func(*v1alpha1.ConsumerGroupStatus) bool) (bool, error) {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	fresh := &v1alpha1.ConsumerGroup{}
	if err := reader.Get(ctx, client.ObjectKeyFromObject(cg), fresh); err != nil {
		return false, err
	}
	if !applied(&fresh.Status) {
		return false, nil
	}
	cg.Status.LastOffsetReset = fresh.Status.LastOffsetReset
	cg.Status.LastOffsetMigration = fresh.Status.LastOffsetMigration
	return true, nil
}

// resetTimestamp maps the target to the broker's timestamp argument.
func resetTimestamp(rs *v1alpha1.OffsetReset) int64 {
	switch {
	case rs.Earliest:
		return ResetTimestampEarliest
	case rs.Latest:
		return ResetTimestampLatest
	default:
		return rs.Timestamp.UnixMilli()
	}
}

func describeTarget(rs *v1alpha1.OffsetReset) string {
	switch {
	case rs.Earliest:
		return "earliest"
	case rs.Latest:
		return "latest"
	default:
		return rs.Timestamp.UTC().Format(time.RFC3339)
	}
}

// collect adds the group's consumer offsets on one broker to into.
func (r *ConsumerGroupReconciler) collect(ctx context.Context, admin BrokerAdmin, addr, group, topic string, into map[queueKey]int64) error {
	queues, err := admin.ConsumeStats(ctx, addr, group, topic)
	if err != nil {
		return fmt.Errorf("GET_CONSUME_STATS on %s: %w", addr, err)
	}
	for _, q := range queues {
		into[queueKey{q.Topic, q.BrokerName, q.QueueID}] = q.ConsumerOffset
	}
	return nil
}

// topicsOf lists the topics seen on one broker, sorted.
func topicsOf(offsets map[queueKey]int64, broker string) []string {
	set := map[string]bool{}
	for k := range offsets {
		if k.broker == broker {
			set[k.topic] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// appliedChange records before/after per queue, sorted, at most maxRecordedQueues of them.
func appliedChange(id string, before, after map[queueKey]int64) *v1alpha1.AppliedOffsetChange {
	keys := map[queueKey]bool{}
	for k := range before {
		keys[k] = true
	}
	for k := range after {
		keys[k] = true
	}
	sorted := slices.SortedFunc(maps.Keys(keys), func(a, b queueKey) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.broker, b.broker), cmp.Compare(a.queue, b.queue))
	})
	out := &v1alpha1.AppliedOffsetChange{ID: id, AppliedAt: metav1.Now()}
	for i, k := range sorted {
		if i >= maxRecordedQueues {
			out.QueuesOmitted = int32(len(sorted) - maxRecordedQueues)
			break
		}
		b, a := before[k], before[k]
		if v, ok := after[k]; ok {
			a = v
		}
		out.Queues = append(out.Queues, v1alpha1.QueueOffsetChange{
			Topic: k.topic, BrokerName: k.broker, QueueID: k.queue, Before: b, After: a})
	}
	return out
}
