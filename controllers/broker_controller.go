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
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/resource"
)

// BrokerReconciler keeps what a Broker owns in step with its spec: the NetworkPolicy, the
// rendered plain_acl.yml Secret, the name-server ConfigMap, and per group a ConfigMap,
// headless Service, StatefulSet and PodDisruptionBudget (removing groups scaled in), and
// the status; through Admin (signing for Brokers
// with ACL, through Admins) it tells running brokers about name-server changes and checks
// their TLS certificates. Topics on the brokers belong to the Topic controller.
type BrokerReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Admin    BrokerAdmin
	Recorder events.EventRecorder
	// Admins picks the admin per Broker; SetupWithManager makes one from Admin when nil.
	// Share one with the ConsumerGroup controller, as SetupAll does.
	Admins *BrokerAdmins
	// OperatorNamespace is the namespace the NetworkPolicies admit admin traffic from.
	OperatorNamespace string
	// APIReader reads Secrets' content around the cache, which holds only their metadata;
	// SetupWithManager sets the manager's when nil.
	APIReader client.Reader
	// now is the clock of the roll's waits; nil is time.Now (tests set it).
	now func() time.Time
}

func (r *BrokerReconciler) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// +kubebuilder:rbac:groups=rocketmq.openrmq.io,resources=brokers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=rocketmq.openrmq.io,resources=brokers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=rocketmq.openrmq.io,resources=nameservers,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=rocketmq.openrmq.io,resources=topics;users,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create;update;patch

// step is one item of the reconcile checklist; a non-zero duration asks for a requeue.
type brokerStep func(ctx context.Context, br *v1alpha1.Broker, st *brokerState) (time.Duration, error)

// brokerState carries what earlier steps found to later ones.
type brokerState struct {
	namesrvAddr string
	pods        map[string]*corev1.Pod
	access      adminAccess
	// lag and unregistered are observeMembers': each Ready slave's replication lag, and
	// the Ready pods some name server does not hold (with why), by pod name.
	lag          map[string]slaveLag
	unregistered map[string]string
	// topicsPending says which groups lack topics the others hold; "" when none.
	topicsPending string
	// partitions and roll are planRoll's: each group's StatefulSet partition, and where
	// the roll stands (broker_roll.go).
	partitions map[int32]int32
	roll       rollState
	// switchBack is planRoll's: the groups to roll whose master moved off ordinal 0 in a
	// failover; driveFailover moves it back first (the roll replaces ordinals from the
	// highest down, the master last).
	switchBack map[int32]bool
	// loadBalancersPending is applyChildren's: the pod Services that wait for a
	// load-balancer IP, holding their groups; "" when none.
	loadBalancersPending string
	// requeue asks for another reconcile this soon, with nothing wrong (a master waiting
	// to restart); 0 for none. Set it with requeueWithin.
	requeue time.Duration
}

// requeueWithin asks for another reconcile within d (d <= 0: none), keeping an earlier
// request that is sooner.
func (st *brokerState) requeueWithin(d time.Duration) {
	if d > 0 && (st.requeue == 0 || d < st.requeue) {
		st.requeue = d
	}
}

// Reconcile runs the checklist: apply or delete the NetworkPolicy (first, so no pod starts
// unprotected), resolve name servers, render plain_acl.yml from the Users (spec.acl without
// secretName; before the pods that mount it), check spec.config with the broker's parser,
// pick the admin for the brokers (TLS under spec.tls, signing under spec.acl), observe the
// pods, their registrations and the slaves' replication lag, plan the roll (each group's partition), apply
// children, check the brokers' TLS certificates, drain and remove groups that were scaled in, make the roll's name-server
// calls, push a
// changed name-server list, observe the groups' topics, then write the status, Ready
// waiting for the groups to hold the topics.
func (r *BrokerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	br := &v1alpha1.Broker{}
	if err := r.Get(ctx, req.NamespacedName, br); err != nil {
		if apierrors.IsNotFound(err) {
			r.admins().Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !br.DeletionTimestamp.IsZero() {
		r.admins().Forget(req.NamespacedName)
		return ctrl.Result{}, nil // owner references and the StatefulSets' PVC policy clean up
	}
	orig := br.DeepCopy()
	st := &brokerState{}
	steps := []struct {
		reason string
		run    brokerStep
	}{
		{"NetworkPolicyFailed", r.applyNetworkPolicy},
		{"NameServerUnresolved", r.resolveNameServers},
		{"ACLFileFailed", r.renderUsersACL},
		{"ConfigInvalid", r.checkConfig},
		{"AdminAccessFailed", r.resolveAdmin},
		{"ObservePodsFailed", r.observePods},
		{"MembersUnobserved", r.observeMembers},
		{"RollPlanFailed", r.planRoll},
		{"FailoverFailed", r.driveFailover},
		{"ApplyFailed", r.applyChildren},
		{"TLSCheckFailed", r.checkTLS},
		{"ScaleInFailed", r.scaleIn},
		{"RollFailed", r.driveRoll},
		{"NameServerPushFailed", r.pushNameServers},
		{"TopicsUnobserved", r.observeTopics},
		{"StatusFailed", r.observeWorkloads},
	}
	for _, s := range steps {
		after, err := s.run(ctx, br, st)
		if err != nil || after > 0 {
			degraded(&br.Status.Conditions, br.Generation, s.reason, err)
			if perr := r.Status().Patch(ctx, br, client.MergeFrom(orig)); perr != nil && !apierrors.IsNotFound(perr) {
				return ctrl.Result{}, joinErr(err, perr)
			}
			if err != nil && after > 0 {
				// An expected, retryable failure: requeue without the error backoff noise.
				return ctrl.Result{RequeueAfter: after}, nil
			}
			return ctrl.Result{RequeueAfter: after}, err
		}
	}
	degraded(&br.Status.Conditions, br.Generation, "", nil)
	br.Status.ObservedGeneration = br.Generation
	if err := r.Status().Patch(ctx, br, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: st.requeue}, nil
}

func (r *BrokerReconciler) applyChildren(ctx context.Context, br *v1alpha1.Broker, st *brokerState) (time.Duration, error) {
	b := &resource.BrokerBuilder{Instance: br, Scheme: r.Scheme, NameServerAddress: st.namesrvAddr, Partitions: st.partitions}
	if err := applyAll(ctx, r.Client, r.Recorder, br, b.Builders()); err != nil {
		return 0, err
	}
	// The Services' status updates bring us back; the requeue covers a missed one.
	if st.loadBalancersPending = b.PendingLoadBalancers(); st.loadBalancersPending != "" {
		st.requeueWithin(retryAfter)
	}
	return 0, nil
}

// resolveAdmin picks the admin for this Broker's calls and records the AdminAccess
// condition. Missing or unusable credentials fail only the calls that need them.
func (r *BrokerReconciler) resolveAdmin(ctx context.Context, br *v1alpha1.Broker, st *brokerState) (time.Duration, error) {
	acc, err := r.admins().For(ctx, br)
	if err != nil {
		return 0, err
	}
	st.access = acc
	if acc.TLSReason != "" {
		return 0, nil // no admin at all: the TLS condition says why (checkTLS)
	}
	if setAdminAccess(&br.Status.Conditions, br.Generation, acc) && acc.Reason != ReasonSigned && acc.Reason != "" {
		r.Recorder.Eventf(br, nil, corev1.EventTypeWarning, acc.Reason, "AdminAccess", "%s", acc.Message)
	}
	return 0, nil
}

func (r *BrokerReconciler) admins() *BrokerAdmins {
	if r.Admins == nil {
		r.Admins = NewBrokerAdmins(r.Admin, r.Client, r.Client)
	}
	return r.Admins
}

// SetupWithManager watches Brokers, their children, their pods (for member readiness), the
// NameServers they reference (a replica change alters the address list), the Secrets
// spec.acl and spec.tls name or the operator renders (metadata only: a credentials change
// updates AdminAccess, a TLS Secret change the admin's trust and the TLS condition; the
// files themselves reach the pods through the kubelet), the Users and their Secrets (the
// rendered file), and the Topics (a group's topics, for Ready).
func (r *BrokerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Admins == nil {
		r.Admins = NewBrokerAdmins(r.Admin, mgr.GetClient(), mgr.GetAPIReader())
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Broker{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(brokerOfPod)).
		Watches(&v1alpha1.NameServer{}, handler.EnqueueRequestsFromMapFunc(r.brokersOfNameServer)).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(
			func(ctx context.Context, o client.Object) []reconcile.Request {
				return append(requestsOf(brokersOfSecret(ctx, r.Client, o, false)), brokersOfUserSecret(ctx, r.Client, o)...)
			})).
		Watches(&v1alpha1.User{}, handler.EnqueueRequestsFromMapFunc(brokersOfUser),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.Topic{}, handler.EnqueueRequestsFromMapFunc(brokerOfTopic), builder.WithPredicates(topicGroupsChanged)).
		Named("broker").
		Complete(r)
}

func brokerOfPod(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[resource.ComponentLabel] != resource.BrokerComponent || l[resource.InstanceLabel] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{
		Namespace: o.GetNamespace(), Name: l[resource.InstanceLabel]}}}
}

func (r *BrokerReconciler) brokersOfNameServer(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.BrokerList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, b := range list.Items {
		if b.Spec.NameServerRef != nil && b.Spec.NameServerRef.Name == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
		}
	}
	return out
}
