package controllers

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/resource"
)

// NameServerReconciler keeps a NameServer's StatefulSet, Services, ConfigMap and PDB, and
// its NetworkPolicy under spec.networkPolicy.
type NameServerReconciler struct {
	client.Client
	Scheme *runtime.Scheme
	// Recorder records an Event for each child created or changed; nil records none.
	Recorder events.EventRecorder
	// OperatorNamespace is the namespace the NetworkPolicies admit admin traffic from.
	OperatorNamespace string
}

// +kubebuilder:rbac:groups=rocketmq.openrmq.io,resources=nameservers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=rocketmq.openrmq.io,resources=nameservers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rocketmq.openrmq.io,resources=nameservers/finalizers;brokers/finalizers;consumergroups/finalizers,verbs=update

// Reconcile: fetch, skip if deleting (owner references clean up), apply or delete the
// NetworkPolicy (first, so no pod starts unprotected), apply the children, then write the
// status.
func (r *NameServerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := &v1alpha1.NameServer{}
	if err := r.Get(ctx, req.NamespacedName, ns); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ns.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	orig := ns.DeepCopy()
	b := &resource.NameServerBuilder{Instance: ns, Scheme: r.Scheme, OperatorNamespace: r.OperatorNamespace}
	if err := r.applyNetworkPolicy(ctx, ns, b); err != nil {
		degraded(&ns.Status.Conditions, ns.Generation, "NetworkPolicyFailed", err)
		return ctrl.Result{}, joinErr(err, r.Status().Patch(ctx, ns, client.MergeFrom(orig)))
	}
	if err := applyAll(ctx, r.Client, r.Recorder, ns, b.Builders()); err != nil {
		degraded(&ns.Status.Conditions, ns.Generation, "ApplyFailed", err)
		return ctrl.Result{}, joinErr(err, r.Status().Patch(ctx, ns, client.MergeFrom(orig)))
	}

	// The cache may not hold a StatefulSet created a moment ago; its watch event will
	// bring us back, so read it as not started yet.
	sts := &appsv1.StatefulSet{}
	if err := r.Get(ctx, client.ObjectKeyFromObject(ns), sts); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	pods, err := r.pods(ctx, ns)
	if err != nil {
		return ctrl.Result{}, err
	}
	ns.Status.Replicas = ns.Spec.Replicas
	ns.Status.ReadyReplicas = sts.Status.ReadyReplicas
	ns.Status.Address = nameServerPodAddress(ns, pods)
	ns.Status.AddressURL = resource.NameServerAddressURL(ns)
	workloadConditions(&ns.Status.Conditions, ns.Generation, []*appsv1.StatefulSet{sts}, pods,
		sts.Status.ReadyReplicas, ns.Spec.Replicas)
	degraded(&ns.Status.Conditions, ns.Generation, "", nil)
	ns.Status.ObservedGeneration = ns.Generation
	if err := r.Status().Patch(ctx, ns, client.MergeFrom(orig)); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).V(1).Info("reconciled", "ready", sts.Status.ReadyReplicas)
	return ctrl.Result{}, nil
}

// SetupWithManager watches the NameServers, the objects they own, and the Brokers that
// reference them (their pods are admitted by the NetworkPolicy).
func (r *NameServerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.NameServer{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&networkingv1.NetworkPolicy{}).
		// Pod IPs and readiness make status.address.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(nameServerOfPod)).
		// Spec changes only: a Broker's status writes do not move its nameServerRef.
		Watches(&v1alpha1.Broker{}, handler.EnqueueRequestsFromMapFunc(nameServerOfBroker),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("nameserver").
		Complete(r)
}

// joinErr returns the first error; a status write failure after a reconcile failure is
// only worth logging by the caller's retry.
func joinErr(primary, secondary error) error {
	if primary != nil {
		return primary
	}
	return secondary
}

// retryAfter is how long to wait before retrying a step that waits on something outside the
// cluster (a broker call, a missing reference) and so produces no watch event.
const retryAfter = 15 * time.Second
