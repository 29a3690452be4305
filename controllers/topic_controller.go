package controllers

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
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
)

// TopicFinalizer is set while deletionPolicy is Delete, so the topic can be removed from
// the brokers and the name servers before the resource goes.
const TopicFinalizer = "rocketmq.openrmq.io/topic"

// Periods of the Topic controller.
const (
	// TopicResync is how often a topic is compared with the brokers and the name servers
	// (drift repair) and its message count refreshed.
	TopicResync = 30 * time.Second
	// TopicWaitRetry is how soon a topic waiting for a route or a group is looked at again.
	TopicWaitRetry = 5 * time.Second
)

// TopicReconciler keeps a topic on the master of every selected group of a Broker, its
// route in the name servers and, for ordered topics, its order config in their KV store.
type TopicReconciler struct {
	client.Client
	Admin BrokerAdmin
	// Admins picks the admin per Broker (signing for Brokers with ACL); SetupWithManager
	// makes one from Admin when nil. Share one with the other controllers, as SetupAll does.
	Admins   *BrokerAdmins
	Resolver BrokerResolver
	Recorder events.EventRecorder
	// Resync and Retry override TopicResync and TopicWaitRetry (tests); zero means those.
	Resync, Retry time.Duration

	tablesOnce sync.Once
	tables     *topicTables
	touchMu    sync.Mutex
	touched    map[string]time.Time // route repairs by Topic and group, to pace them
}

// +kubebuilder:rbac:groups=rocketmq.openrmq.io,resources=topics,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=rocketmq.openrmq.io,resources=topics/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=rocketmq.openrmq.io,resources=topics/finalizers,verbs=update

// topicState carries what earlier steps found to later ones.
type topicState struct {
	topic   string
	want    TopicConfig
	broker  *v1alpha1.Broker
	cluster string
	// masters of the selected groups the Broker has: brokerName -> address.
	masters  map[string]string
	namesrvs []string
	admin    BrokerAdmin
	access   adminAccess
	// onBroker is the topic as each reachable master holds it after ensureTopic.
	onBroker map[string]TopicConfig
	// changed lists the groups ensureTopic wrote to in this reconcile.
	changed map[string]bool
	// routes: name server -> brokerName -> the group's share of the route.
	routes map[string]map[string]v1alpha1.TopicQueues
	// messages per group.
	messages map[string]int64
	// waits are why the topic is not Ready although no step failed.
	waits []topicWait
}

type topicWait struct{ reason, msg string }

func (st *topicState) wait(reason, format string, args ...any) {
	st.waits = append(st.waits, topicWait{reason, fmt.Sprintf(format, args...)})
}

// Reconcile: fetch, deletion, finalizer, then the checklist: resolve the Broker (its
// selected masters and name servers), the admin (signing under spec.acl), refuse a
// duplicate, the topic on every master, the order config, the routes, the message
// counts; then the status, and a requeue for the next resync.
func (r *TopicReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	t := &v1alpha1.Topic{}
	if err := r.Get(ctx, req.NamespacedName, t); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !t.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, t, newTopicState(t))
	}
	// The finalizer update answers with the stored object, maybe a newer spec: the
	// state is taken from what it returns, so the spec applied is the generation recorded.
	if err := syncFinalizer(ctx, r.Client, t, t.Spec.DeletionPolicy, TopicFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	st := newTopicState(t)
	orig := t.DeepCopy()
	t.Status.TopicName = st.topic
	t.Status.Queues = fmt.Sprintf("%d/%d", st.want.ReadQueueNums, st.want.WriteQueueNums)
	steps := []struct {
		reason string
		run    func(context.Context, *v1alpha1.Topic, *topicState) (time.Duration, error)
	}{
		{"BrokerUnavailable", r.resolveBroker},
		{"AdminCredentialsUnavailable", r.resolveTopicAdmin},
		{"DuplicateTopic", r.refuseDuplicate},
		{"TopicFailed", r.ensureTopic},
		{"OrderConfFailed", r.ensureOrderConf},
		{"RouteUnavailable", r.checkRoutes},
		{"StatsUnavailable", r.refreshStats},
	}
	for _, s := range steps {
		after, err := s.run(ctx, t, st)
		err = explainRefusal(err, st.access)
		if err != nil || after > 0 {
			degraded(&t.Status.Conditions, t.Generation, s.reason, err)
			if err != nil {
				notReady(&t.Status.Conditions, t.Generation, s.reason, err.Error())
				log.FromContext(ctx).Error(err, "reconcile step failed", "reason", s.reason)
			}
			topicProgressing(t)
			if perr := r.patchStatus(ctx, t, orig); perr != nil {
				return ctrl.Result{}, joinErr(err, perr)
			}
			return ctrl.Result{RequeueAfter: max(after, r.retry())}, nil
		}
	}
	topicGroupsStatus(t, st)
	degraded(&t.Status.Conditions, t.Generation, "", nil)
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Synced",
		ObservedGeneration: t.Generation, Message: fmt.Sprintf("topic %s is on %d group(s) and routed by %d name server(s)",
			st.topic, len(st.onBroker), len(st.namesrvs))}
	requeue := r.resync()
	if len(st.waits) > 0 {
		var msgs []string
		for _, w := range st.waits {
			msgs = append(msgs, w.msg)
		}
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, st.waits[0].reason, strings.Join(msgs, "; ")
		requeue = r.retry()
	} else {
		t.Status.ObservedGeneration = t.Generation
	}
	meta.SetStatusCondition(&t.Status.Conditions, ready)
	topicProgressing(t)
	if err := r.patchStatus(ctx, t, orig); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

func newTopicState(t *v1alpha1.Topic) *topicState {
	read, write := t.QueueNums()
	return &topicState{
		topic:    t.EffectiveTopicName(),
		want:     TopicConfig{Name: t.EffectiveTopicName(), ReadQueueNums: read, WriteQueueNums: write, Perm: t.EffectivePerm(), Order: t.Spec.Order},
		onBroker: map[string]TopicConfig{}, changed: map[string]bool{},
		routes: map[string]map[string]v1alpha1.TopicQueues{}, messages: map[string]int64{},
	}
}

// topicProgressing is True while the spec has not reached every selected group.
func topicProgressing(t *v1alpha1.Topic) {
	c := metav1.Condition{Type: v1alpha1.ConditionProgressing, ObservedGeneration: t.Generation,
		Status: metav1.ConditionFalse, Reason: "Synced", Message: "the brokers and the name servers hold the current spec"}
	if t.Status.ObservedGeneration != t.Generation {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, "Syncing", "the spec is not on every selected group and name server yet"
	}
	meta.SetStatusCondition(&t.Status.Conditions, c)
}

func (r *TopicReconciler) resync() time.Duration { return cmp.Or(r.Resync, TopicResync) }
func (r *TopicReconciler) retry() time.Duration  { return cmp.Or(r.Retry, TopicWaitRetry) }

func (r *TopicReconciler) patchStatus(ctx context.Context, t, orig *v1alpha1.Topic) error {
	return patchStatus(ctx, r.Client, t, orig, !equality.Semantic.DeepEqual(t.Status, orig.Status))
}

// resolveBroker finds the Broker, the masters of the groups the topic selects and the
// name servers. A missing Broker, or one without masters or name servers yet, is waited
// for. Selected groups the Broker does not have make the topic wait, not fail: it goes
// on the others.
func (r *TopicReconciler) resolveBroker(ctx context.Context, t *v1alpha1.Topic, st *topicState) (time.Duration, error) {
	br := &v1alpha1.Broker{}
	key := client.ObjectKey{Namespace: t.Namespace, Name: t.Spec.BrokerRef.Name}
	if err := r.Get(ctx, key, br); err != nil {
		if apierrors.IsNotFound(err) {
			return r.retry(), fmt.Errorf("Broker %q not found in namespace %q: %w", key.Name, key.Namespace, err)
		}
		return 0, err
	}
	st.broker, st.cluster = br, br.Spec.ClusterName
	masters, err := r.Resolver.Masters(ctx, br)
	if err != nil {
		return r.retry(), fmt.Errorf("resolving masters of Broker %q: %w", key.Name, err)
	}
	if len(masters) == 0 {
		return r.retry(), fmt.Errorf("Broker %q has no masters yet", key.Name)
	}
	st.masters = map[string]string{}
	for name, addr := range masters {
		if t.SelectsGroup(name) {
			st.masters[name] = addr
		}
	}
	if g := t.Spec.Groups; g != nil {
		var missing []string
		for _, n := range g.Names {
			if _, ok := masters[n]; !ok {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			st.wait("GroupsNotFound", "Broker %q has no group %s (spec.groups.names)", key.Name, strings.Join(missing, ", "))
		}
	}
	st.namesrvs = nameServersOf(br)
	if len(st.namesrvs) == 0 {
		return r.retry(), fmt.Errorf("the name servers of Broker %q are not known yet", key.Name)
	}
	return 0, nil
}

// nameServersOf lists the name servers a Broker's brokers register with: the list they
// were last told (status), else spec.nameServerAddresses.
func nameServersOf(br *v1alpha1.Broker) []string {
	var out []string
	for a := range strings.SplitSeq(br.Status.NameServerAddress, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		out = slices.Clone(br.Spec.NameServerAddresses)
	}
	return out
}

// resolveTopicAdmin picks the admin for the Broker's calls, signed under spec.acl.
func (r *TopicReconciler) resolveTopicAdmin(ctx context.Context, _ *v1alpha1.Topic, st *topicState) (time.Duration, error) {
	acc, err := r.admins().For(ctx, st.broker)
	if err != nil {
		return 0, err
	}
	st.access = acc
	if err := acc.err(); err != nil {
		return r.retry(), fmt.Errorf("Broker %q: %w", st.broker.Name, err)
	}
	st.admin = acc.Admin
	return 0, nil
}

func (r *TopicReconciler) admins() *BrokerAdmins {
	if r.Admins == nil {
		r.Admins = NewBrokerAdmins(r.Admin, r.Client, r.Client)
	}
	return r.Admins
}

// refuseDuplicate leaves the topic to the oldest Topic resource of the same Broker and
// topic name: a second one changes nothing on the brokers, and deleting it removes nothing.
func (r *TopicReconciler) refuseDuplicate(ctx context.Context, t *v1alpha1.Topic, _ *topicState) (time.Duration, error) {
	owner, err := r.topicOwner(ctx, t)
	if err != nil || owner == nil || owner.Name == t.Name {
		return 0, err
	}
	return r.resync(), fmt.Errorf("Topic %q, older, already manages topic %s on Broker %q: this one changes nothing until it is gone",
		owner.Name, t.EffectiveTopicName(), t.Spec.BrokerRef.Name)
}

// topicOwner is the oldest Topic of t's namespace with t's Broker and topic name (by
// creation time, then name), deleting ones included.
func (r *TopicReconciler) topicOwner(ctx context.Context, t *v1alpha1.Topic) (*v1alpha1.Topic, error) {
	same, err := r.sameTopic(ctx, t)
	if err != nil || len(same) == 0 {
		return nil, err
	}
	return &same[0], nil
}

// sameTopic lists the Topics of t's namespace (t too) naming t's Broker and topic, oldest first.
func (r *TopicReconciler) sameTopic(ctx context.Context, t *v1alpha1.Topic) ([]v1alpha1.Topic, error) {
	var list v1alpha1.TopicList
	if err := r.List(ctx, &list, client.InNamespace(t.Namespace)); err != nil {
		return nil, err
	}
	var out []v1alpha1.Topic
	for _, o := range list.Items {
		if o.Spec.BrokerRef == t.Spec.BrokerRef && o.EffectiveTopicName() == t.EffectiveTopicName() {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.Topic) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// finalize removes the topic from the masters, then its route and order config from the
// name servers (deletionPolicy Delete), then the finalizer. A duplicate, or a topic another
// live Topic resource also names, is not removed. A Broker without masters blocks deletion
// until it has them again.
func (r *TopicReconciler) finalize(ctx context.Context, t *v1alpha1.Topic, st *topicState) error {
	if !controllerutil.ContainsFinalizer(t, TopicFinalizer) {
		return nil
	}
	br := &v1alpha1.Broker{}
	err := r.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Spec.BrokerRef.Name}, br)
	brokerGone := apierrors.IsNotFound(err) || (err == nil && !br.DeletionTimestamp.IsZero())
	if err != nil && !brokerGone {
		return err
	}
	same, err := r.sameTopic(ctx, t)
	if err != nil {
		return err
	}
	var others []string
	for _, o := range same {
		if o.Name != t.Name && o.DeletionTimestamp.IsZero() {
			others = append(others, o.Name)
		}
	}
	switch {
	case brokerGone:
	case len(others) > 0:
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, "TopicKept", "DeleteTopic",
			"topic %s left on the brokers: Topic %s still names it", st.topic, strings.Join(others, ", "))
	case t.Spec.DeletionPolicy == v1alpha1.DeletionDelete:
		if err := r.deleteEverywhere(ctx, t, st); err != nil {
			return err
		}
	}
	controllerutil.RemoveFinalizer(t, TopicFinalizer)
	return client.IgnoreNotFound(r.Update(ctx, t))
}

// deleteEverywhere deletes the topic from every master that holds it by the spec or the
// status, then from every name server (route, order config).
func (r *TopicReconciler) deleteEverywhere(ctx context.Context, t *v1alpha1.Topic, st *topicState) error {
	if _, err := r.resolveBroker(ctx, t, st); err != nil {
		return err
	}
	if _, err := r.resolveTopicAdmin(ctx, t, st); err != nil {
		return err
	}
	all, err := r.Resolver.Masters(ctx, st.broker)
	if err != nil {
		return err
	}
	for _, g := range t.Status.Groups {
		if addr, ok := all[g.BrokerName]; ok {
			st.masters[g.BrokerName] = addr
		}
	}
	for _, name := range slices.Sorted(maps.Keys(st.masters)) {
		if err := st.admin.DeleteTopic(ctx, st.masters[name], st.topic); err != nil {
			err = explainRefusal(err, st.access)
			r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, "DeleteFailed", "DeleteTopicInBroker",
				"deleting topic %s on %s: %v", st.topic, name, err)
			return err
		}
		r.tablesCache().forget(st.masters[name])
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, "TopicDeleted", "DeleteTopicInBroker",
			"deleted topic %s on %s", st.topic, name)
	}
	for _, ns := range st.namesrvs {
		if err := st.admin.DeleteTopicRoute(ctx, ns, st.topic, st.cluster); err != nil {
			r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, "DeleteFailed", "DeleteTopicInNameServer",
				"deleting the route of topic %s on name server %s: %v", st.topic, ns, err)
			return err
		}
		if t.Spec.Order {
			if err := st.admin.DeleteKV(ctx, ns, NamespaceOrderTopicConfig, st.topic); err != nil {
				return fmt.Errorf("DELETE_KV_CONFIG %s on %s: %w", st.topic, ns, err)
			}
		}
	}
	r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, "RouteDeleted", "DeleteTopicInNameServer",
		"deleted the route of topic %s from %d name server(s)", st.topic, len(st.namesrvs))
	return nil
}
