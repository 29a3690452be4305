package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// ensureGroup creates or updates the subscription group on every master when the spec
// changed, a master appeared, or the last attempt failed. The broker persists groups, so
// a quiet periodic reconcile does not repeat the call.
func (r *ConsumerGroupReconciler) ensureGroup(ctx context.Context, cg *v1alpha1.ConsumerGroup, st *cgState) (time.Duration, error) {
	names := slices.Sorted(maps.Keys(st.masters))
	if cg.Status.ObservedGeneration == cg.Generation && slices.Equal(names, cg.Status.Brokers) &&
		meta.IsStatusConditionTrue(cg.Status.Conditions, v1alpha1.ConditionReady) {
		return 0, nil
	}
	cfg := SubscriptionGroup{
		GroupName:                    st.group,
		ConsumeEnable:                true,
		ConsumeFromMinEnable:         ptr.Deref(cg.Spec.ConsumeFromMinEnable, true),
		ConsumeBroadcastEnable:       cg.Spec.ConsumeBroadcastEnable,
		RetryQueueNums:               1,
		RetryMaxTimes:                ptr.Deref(cg.Spec.RetryMaxTimes, 16),
		BrokerID:                     0,
		WhichBrokerWhenConsumeSlowly: 1,
	}
	for _, name := range names {
		if err := st.admin.CreateOrUpdateSubscriptionGroup(ctx, st.masters[name], cfg); err != nil {
			r.Recorder.Eventf(cg, nil, corev1.EventTypeWarning, "SubscriptionGroupFailed",
				"UpdateAndCreateSubscriptionGroup", "group %s on %s: %v", st.group, name, err)
			return 0, fmt.Errorf("UPDATE_AND_CREATE_SUBSCRIPTIONGROUP on %s: %w", name, err)
		}
		r.Recorder.Eventf(cg, nil, corev1.EventTypeNormal, "SubscriptionGroupUpdated",
			"UpdateAndCreateSubscriptionGroup", "group %s created or updated on %s", st.group, name)
	}
	cg.Status.GroupName = st.group
	cg.Status.Brokers = names
	return 0, nil
}

// refreshLag sums broker offset minus consumer offset per topic over every master.
func (r *ConsumerGroupReconciler) refreshLag(ctx context.Context, cg *v1alpha1.ConsumerGroup, st *cgState) (time.Duration, error) {
	lag := map[string]int64{}
	for _, name := range slices.Sorted(maps.Keys(st.masters)) {
		queues, err := st.admin.ConsumeStats(ctx, st.masters[name], st.group, "")
		if err != nil {
			return 0, fmt.Errorf("GET_CONSUME_STATS on %s: %w", name, err)
		}
		for _, q := range queues {
			lag[q.Topic] += max(0, q.BrokerOffset-q.ConsumerOffset)
		}
	}
	cg.Status.Lag = nil
	cg.Status.TotalLag = 0
	for _, t := range slices.Sorted(maps.Keys(lag)) {
		cg.Status.Lag = append(cg.Status.Lag, v1alpha1.TopicLag{Topic: t, Lag: lag[t]})
		cg.Status.TotalLag += lag[t]
	}
	now := metav1.Now()
	cg.Status.LagUpdatedAt = &now
	return 0, nil
}

// SetupWithManager reconciles on spec changes only (GenerationChanged): the status writes
// of the periodic lag refresh must not trigger another reconcile. Deletion bumps the
// generation of an object with finalizers, so finalization still runs. A Broker change
// (masters appearing) and a change of a Broker's operator credentials Secret enqueue the
// groups that reference the Broker.
func (r *ConsumerGroupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Admins == nil {
		r.Admins = NewBrokerAdmins(r.Admin, mgr.GetClient(), mgr.GetAPIReader())
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ConsumerGroup{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.Broker{}, handler.EnqueueRequestsFromMapFunc(r.groupsOfBroker)).
		// A changed credentials Secret retries the groups of its Brokers at once.
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.groupsOfSecret)).
		Named("consumergroup").
		Complete(r)
}

func (r *ConsumerGroupReconciler) groupsOfBroker(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.ConsumerGroupList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, g := range list.Items {
		if g.Spec.BrokerRef.Name == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&g)})
		}
	}
	return out
}

func (r *ConsumerGroupReconciler) groupsOfSecret(ctx context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, b := range brokersOfSecret(ctx, r.Client, o, true) {
		out = append(out, r.groupsOfBroker(ctx, &b)...)
	}
	return out
}
