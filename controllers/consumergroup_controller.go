package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	rmqadmin "github.com/openrmq/rocketmq-operator/pkg/admin"
)

// ConsumerGroupFinalizer is set while deletionPolicy is Delete, so the group can be removed
// from the brokers before the resource goes.
const ConsumerGroupFinalizer = "rocketmq.openrmq.io/subscription-group"

// LagRefresh is how often the lag in status is refreshed.
const LagRefresh = 30 * time.Second

// ConsumerGroupReconciler keeps a subscription group on every master of a Broker.
type ConsumerGroupReconciler struct {
	client.Client
	Admin BrokerAdmin
	// Admins picks the admin per Broker (signing for Brokers with ACL); SetupWithManager
	// makes one from Admin when nil.
	Admins   *BrokerAdmins
	Resolver BrokerResolver
	Recorder events.EventRecorder
	// APIReader reads around the cache; offset changes check the applied id through it, so
	// a cache that has not seen the last status write cannot make them apply twice.
	APIReader client.Reader
	// LagRefresh overrides the refresh period (tests); zero means LagRefresh.
	LagRefresh time.Duration
}

// +kubebuilder:rbac:groups=rocketmq.openrmq.io,resources=consumergroups,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=rocketmq.openrmq.io,resources=consumergroups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=rocketmq.openrmq.io,resources=consumergroups/finalizers,verbs=update
// +kubebuilder:rbac:groups=rocketmq.openrmq.io,resources=brokers,verbs=get;list;watch

// cgState carries what earlier steps found to later ones.
type cgState struct {
	group   string
	broker  *v1alpha1.Broker
	masters map[string]string // brokerName -> address
	admin   BrokerAdmin       // for the Broker's calls: signed when it has ACL credentials
	access  adminAccess
}

// Reconcile: fetch, deletion, finalizer, resolve masters and the admin (signing under the
// Broker's spec.acl), subscription group, offset migration, offset reset (each once per
// id), lag, status; then requeue for the next lag.
func (r *ConsumerGroupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cg := &v1alpha1.ConsumerGroup{}
	if err := r.Get(ctx, req.NamespacedName, cg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	st := &cgState{group: cg.EffectiveGroupName()}
	if !cg.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, cg, st)
	}
	if err := syncFinalizer(ctx, r.Client, cg, cg.Spec.DeletionPolicy, ConsumerGroupFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	steps := []struct {
		reason string
		run    func(context.Context, *v1alpha1.ConsumerGroup, *cgState) (time.Duration, error)
	}{
		{"BrokerUnavailable", r.resolveMasters},
		{"AdminCredentialsUnavailable", r.resolveAdmin},
		{"SubscriptionGroupFailed", r.ensureGroup},
		{"OffsetMigrationFailed", r.migrateOffsets},
		{"OffsetResetFailed", r.resetOffsets},
		{"LagUnavailable", r.refreshLag},
	}
	for _, s := range steps {
		orig := cg.DeepCopy()
		after, err := s.run(ctx, cg, st)
		err = explainRefusal(err, st.access)
		if err != nil || after > 0 {
			degraded(&cg.Status.Conditions, cg.Generation, s.reason, err)
			if err != nil {
				notReady(&cg.Status.Conditions, cg.Generation, s.reason, err.Error())
			}
			cgProgressing(cg)
			if perr := r.patchStatus(ctx, cg, orig); perr != nil {
				return ctrl.Result{}, joinErr(err, perr)
			}
			// Broker calls fail while a broker restarts; retry at a steady pace rather than
			// with the workqueue's backoff, which grows to minutes. The error is in status.
			if err != nil {
				log.FromContext(ctx).Error(err, "reconcile step failed", "reason", s.reason)
			}
			return ctrl.Result{RequeueAfter: max(after, retryAfter)}, nil
		}
		// Steps that changed the brokers write their record at once, so a crash later in
		// this reconcile cannot make the next one apply the same reset again.
		if err := r.patchStatus(ctx, cg, orig); err != nil {
			return ctrl.Result{}, err
		}
	}
	orig := cg.DeepCopy()
	meta.SetStatusCondition(&cg.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady,
		Status: metav1.ConditionTrue, Reason: "Synced", ObservedGeneration: cg.Generation,
		Message: fmt.Sprintf("group %s is on %d master(s)", st.group, len(st.masters))})
	degraded(&cg.Status.Conditions, cg.Generation, "", nil)
	cg.Status.ObservedGeneration = cg.Generation
	cgProgressing(cg)
	if err := r.patchStatus(ctx, cg, orig); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.lagRefresh()}, nil
}

// cgProgressing is True while the spec or an offset change has not reached the brokers.
func cgProgressing(cg *v1alpha1.ConsumerGroup) {
	c := metav1.Condition{Type: v1alpha1.ConditionProgressing, ObservedGeneration: cg.Generation,
		Status: metav1.ConditionFalse, Reason: "Synced", Message: "the brokers hold the current spec"}
	switch {
	case cg.Spec.OffsetMigration != nil && (cg.Status.LastOffsetMigration == nil ||
		cg.Status.LastOffsetMigration.ID != cg.Spec.OffsetMigration.ID):
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, "OffsetMigrationPending",
			"offset migration "+cg.Spec.OffsetMigration.ID+" is not applied yet"
	case cg.Spec.OffsetReset != nil && (cg.Status.LastOffsetReset == nil ||
		cg.Status.LastOffsetReset.ID != cg.Spec.OffsetReset.ID):
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, "OffsetResetPending",
			"offset reset "+cg.Spec.OffsetReset.ID+" is not applied yet"
	case cg.Status.ObservedGeneration != cg.Generation:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, "Syncing", "the spec is not on every master yet"
	}
	meta.SetStatusCondition(&cg.Status.Conditions, c)
}

func (r *ConsumerGroupReconciler) lagRefresh() time.Duration { return cmp.Or(r.LagRefresh, LagRefresh) }

func (r *ConsumerGroupReconciler) patchStatus(ctx context.Context, cg, orig *v1alpha1.ConsumerGroup) error {
	return patchStatus(ctx, r.Client, cg, orig, !equality.Semantic.DeepEqual(cg.Status, orig.Status))
}

// finalize removes the group from every master (deletionPolicy Delete), then the finalizer.
// A Broker without masters blocks deletion until it has them again: the group would
// otherwise outlive the resource.
func (r *ConsumerGroupReconciler) finalize(ctx context.Context, cg *v1alpha1.ConsumerGroup, st *cgState) error {
	if !controllerutil.ContainsFinalizer(cg, ConsumerGroupFinalizer) {
		return nil
	}
	br := &v1alpha1.Broker{}
	err := r.Get(ctx, client.ObjectKey{Namespace: cg.Namespace, Name: cg.Spec.BrokerRef.Name}, br)
	// A Broker that is gone or going (say, its namespace is deleted) has no group to keep.
	brokerGone := apierrors.IsNotFound(err) || (err == nil && !br.DeletionTimestamp.IsZero())
	if err != nil && !brokerGone {
		return err
	}
	if cg.Spec.DeletionPolicy == v1alpha1.DeletionDelete && !brokerGone {
		if _, err := r.resolveMasters(ctx, cg, st); err != nil {
			return err
		}
		if _, err := r.resolveAdmin(ctx, cg, st); err != nil {
			return err
		}
		for _, name := range slices.Sorted(maps.Keys(st.masters)) {
			if err := st.admin.DeleteSubscriptionGroup(ctx, st.masters[name], st.group); err != nil {
				err = explainRefusal(err, st.access)
				r.Recorder.Eventf(cg, nil, corev1.EventTypeWarning, "DeleteFailed", "DeleteSubscriptionGroup",
					"deleting group %s on %s: %v", st.group, name, err)
				return err
			}
			r.Recorder.Eventf(cg, nil, corev1.EventTypeNormal, "GroupDeleted", "DeleteSubscriptionGroup",
				"deleted group %s on %s", st.group, name)
		}
	}
	controllerutil.RemoveFinalizer(cg, ConsumerGroupFinalizer)
	return client.IgnoreNotFound(r.Update(ctx, cg))
}

// resolveMasters finds the Broker and its masters. A missing Broker or one without masters
// yet is waited for (requeue), not failed.
func (r *ConsumerGroupReconciler) resolveMasters(ctx context.Context, cg *v1alpha1.ConsumerGroup, st *cgState) (time.Duration, error) {
	br := &v1alpha1.Broker{}
	key := client.ObjectKey{Namespace: cg.Namespace, Name: cg.Spec.BrokerRef.Name}
	if err := r.Get(ctx, key, br); err != nil {
		if apierrors.IsNotFound(err) {
			return retryAfter, fmt.Errorf("Broker %q not found in namespace %q: %w", key.Name, key.Namespace, err)
		}
		return 0, err
	}
	st.broker = br
	masters, err := r.Resolver.Masters(ctx, br)
	if err != nil {
		return retryAfter, fmt.Errorf("resolving masters of Broker %q: %w", key.Name, err)
	}
	if len(masters) == 0 {
		return retryAfter, fmt.Errorf("Broker %q has no masters yet", key.Name)
	}
	st.masters = masters
	return 0, nil
}

// resolveAdmin picks the admin for the Broker's calls: signed with spec.acl's operator
// credentials when it names them. Credentials that are missing or unusable fail the
// reconcile with the reason; the Broker's AdminAccess condition says the same.
func (r *ConsumerGroupReconciler) resolveAdmin(ctx context.Context, _ *v1alpha1.ConsumerGroup, st *cgState) (time.Duration, error) {
	admins := r.Admins
	if admins == nil {
		admins = NewBrokerAdmins(r.Admin, r.Client, r.Client)
		r.Admins = admins
	}
	acc, err := admins.For(ctx, st.broker)
	if err != nil {
		return 0, err
	}
	st.access = acc
	if err := acc.err(); err != nil {
		return retryAfter, fmt.Errorf("Broker %q: %w", st.broker.Name, err)
	}
	st.admin = acc.Admin
	return 0, nil
}

// explainRefusal adds to a broker's refusal of an unsigned call why it was unsigned.
func explainRefusal(err error, acc adminAccess) error {
	var refused *rmqadmin.Error
	if err == nil || acc.Reason != ReasonCredentialsNotSet || !errors.As(err, &refused) {
		return err
	}
	return fmt.Errorf("%w (the call was unsigned: the Broker's %s)", err, acc.Message)
}
