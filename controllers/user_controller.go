package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/resource"
	"github.com/openrmq/rocketmq-operator/pkg/acl"
	rmqadmin "github.com/openrmq/rocketmq-operator/pkg/admin"
)

// Periods of the User controller.
const (
	// UserResync is how often a loaded account is probed again.
	UserResync = 5 * time.Minute
	// UserWaitRetry is how soon an account the brokers have not loaded yet is probed again
	// (the kubelet refreshes a mounted Secret within about a minute, the brokers poll 5 s).
	UserWaitRetry = 5 * time.Second
)

// UserReconciler reports whether a User's account is in its Broker's rendered plain_acl.yml
// and loaded by every broker pod. It changes nothing on the brokers: the Broker controller
// renders the file (renderUsersACL), the kubelet and the brokers pick it up.
type UserReconciler struct {
	client.Client
	// APIReader reads Secrets' content around the cache.
	APIReader client.Reader
	// Prober signs a request as the account to each broker pod that Members lists.
	Prober   AccountProber
	Members  MemberResolver
	Recorder events.EventRecorder
	// Resync and Retry override UserResync and UserWaitRetry (tests); zero means those.
	Resync, Retry time.Duration
}

// +kubebuilder:rbac:groups=rocketmq.openrmq.io,resources=users,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=rocketmq.openrmq.io,resources=users/status,verbs=get;update;patch

// Reconcile: fetch (a User has no finalizer: its Broker re-renders the file when it goes),
// the Broker and its ACL mode, the verdict on the account (the same one the Broker
// controller renders by), then a signed probe of every broker pod; status.
func (r *UserReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	u := &v1alpha1.User{}
	if err := r.Get(ctx, req.NamespacedName, u); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !u.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	orig := u.DeepCopy()
	reason, msg, after, err := r.check(ctx, u)
	if err != nil {
		degraded(&u.Status.Conditions, u.Generation, "CheckFailed", err)
		if perr := r.patchStatus(ctx, u, orig); perr != nil {
			return ctrl.Result{}, joinErr(err, perr)
		}
		return ctrl.Result{}, err
	}
	degraded(&u.Status.Conditions, u.Generation, "", nil)
	c := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason,
		Message: msg, ObservedGeneration: u.Generation}
	if reason == v1alpha1.UserReasonLoaded {
		c.Status = metav1.ConditionTrue
		u.Status.ObservedGeneration = u.Generation
		if !meta.IsStatusConditionTrue(u.Status.Conditions, v1alpha1.ConditionReady) {
			r.Recorder.Eventf(u, nil, corev1.EventTypeNormal, "AccountLoaded", "ProbeAccount", "%s", msg)
		}
	}
	meta.SetStatusCondition(&u.Status.Conditions, c)
	if err := r.patchStatus(ctx, u, orig); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// check returns the Ready reason and message, and when to look again (0: on a watch event).
func (r *UserReconciler) check(ctx context.Context, u *v1alpha1.User) (reason, msg string, after time.Duration, err error) {
	br := &v1alpha1.Broker{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: u.Namespace, Name: u.Spec.BrokerRef.Name}, br); err != nil {
		if apierrors.IsNotFound(err) {
			u.Status.AccessKey, u.Status.Loaded = "", ""
			return v1alpha1.UserReasonBrokerNotFound, fmt.Sprintf("Broker %q not found in namespace %q", u.Spec.BrokerRef.Name, u.Namespace), 0, nil
		}
		return "", "", 0, err
	}
	switch acl := br.Spec.ACL; {
	case acl == nil:
		u.Status.AccessKey, u.Status.Loaded = "", ""
		return v1alpha1.UserReasonACLNotEnabled, fmt.Sprintf("Broker %q has no spec.acl: its brokers take every request "+
			"without an account; set spec.acl: {} to have the operator render its Users into plain_acl.yml", br.Name), 0, nil
	case !acl.UsersMode():
		u.Status.AccessKey, u.Status.Loaded = "", ""
		return v1alpha1.UserReasonACLFromSecret, fmt.Sprintf("Broker %q reads plain_acl.yml from Secret %q (spec.acl.secretName): "+
			"Users are not rendered; add the account to that file, or drop secretName to have the operator render Users", br.Name, acl.SecretName), 0, nil
	}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	users, err := usersOf(ctx, r.Client, br)
	if err != nil {
		return "", "", 0, err
	}
	op, _, err := operatorCredentials(ctx, reader, br)
	if err != nil {
		return "", "", 0, err
	}
	v, err := decideUser(ctx, reader, u, users, op.AccessKey)
	if err != nil {
		return "", "", 0, err
	}
	if v.account == nil {
		if !v.keepOld {
			u.Status.AccessKey, u.Status.Loaded = "", ""
		} else if u.Status.AccessKey == u.Spec.AccessKey {
			v.message += "; the account as rendered before stays in plain_acl.yml until this is fixed or the User is deleted"
		}
		return v.reason, v.message, 0, nil
	}
	u.Status.AccessKey = u.Spec.AccessKey
	members, err := r.Members.Members(ctx, br)
	if err != nil {
		return "", "", 0, fmt.Errorf("listing the broker pods of Broker %q: %w", br.Name, err)
	}
	if len(members) == 0 {
		u.Status.Loaded = ""
		return v1alpha1.UserReasonNotLoaded, fmt.Sprintf("Broker %q has no broker pods yet", br.Name), r.retry(), nil
	}
	creds := acl.Credentials{AccessKey: v.account.AccessKey, SecretKey: v.account.SecretKey}
	var refused []string
	for _, addr := range members {
		if err := r.Prober.ProbeAccount(ctx, addr, creds); err != nil {
			refused = append(refused, fmt.Sprintf("%s: %s", addr, remarkOf(err)))
		}
	}
	u.Status.Loaded = fmt.Sprintf("%d/%d", len(members)-len(refused), len(members))
	if len(refused) > 0 {
		return v1alpha1.UserReasonNotLoaded, fmt.Sprintf("accessKey %s is in Secret %s, but %d of %d broker(s) refuse it "+
			"(the kubelet refreshes the mount within about a minute, the brokers re-read it within 5 s): %s",
			u.Spec.AccessKey, resource.UsersACLSecretName(br), len(refused), len(members), strings.Join(refused, "; ")), r.retry(), nil
	}
	return v1alpha1.UserReasonLoaded, fmt.Sprintf("every broker (%d) accepts requests signed as accessKey %s", len(members), u.Spec.AccessKey), r.resync(), nil
}

// remarkOf is a broker's refusal remark, or the error.
func remarkOf(err error) string {
	var refused *rmqadmin.Error
	if errors.As(err, &refused) {
		return refused.Remark
	}
	return err.Error()
}

func (r *UserReconciler) resync() time.Duration { return cmp.Or(r.Resync, UserResync) }
func (r *UserReconciler) retry() time.Duration  { return cmp.Or(r.Retry, UserWaitRetry) }

func (r *UserReconciler) patchStatus(ctx context.Context, u, orig *v1alpha1.User) error {
	return patchStatus(ctx, r.Client, u, orig, !equality.Semantic.DeepEqual(u.Status, orig.Status))
}

// SetupWithManager reconciles on spec changes, on changes of the Broker (ACL mode, pods),
// and on changes of Secrets: the User's own, and those of its Broker's ACL (the rendered
// file, the operator's account), after which the brokers may accept the account.
func (r *UserReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.User{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.Broker{}, handler.EnqueueRequestsFromMapFunc(r.usersOfBroker),
			builder.WithPredicates(brokerTopologyChanged{})).
		Watches(&v1alpha1.User{}, handler.EnqueueRequestsFromMapFunc(r.usersOfUserBroker),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.usersOfSecret)).
		Named("user").
		Complete(r)
}

func (r *UserReconciler) usersOfBroker(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.UserList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, u := range list.Items {
		if u.Spec.BrokerRef.Name == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&u)})
		}
	}
	return out
}

// usersOfUserBroker: a User created, changed or deleted can settle another's duplicate.
func (r *UserReconciler) usersOfUserBroker(ctx context.Context, o client.Object) []reconcile.Request {
	u, ok := o.(*v1alpha1.User)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	for _, req := range r.usersOfBroker(ctx, &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: u.Namespace, Name: u.Spec.BrokerRef.Name}}) {
		if req.Name != u.Name {
			out = append(out, req)
		}
	}
	return out
}

func (r *UserReconciler) usersOfSecret(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.UserList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	brokers := map[string]bool{}
	for _, b := range brokersOfSecret(ctx, r.Client, o, false) {
		brokers[b.Name] = true
	}
	var out []reconcile.Request
	for _, u := range list.Items {
		if u.Spec.SecretKeyRef.Name == o.GetName() || brokers[u.Spec.BrokerRef.Name] {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&u)})
		}
	}
	return out
}
