package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	rmqadmin "github.com/openrmq/rocketmq-operator/pkg/admin"
)

// ensureTopic compares the topic on every selected master with the spec and writes it
// where it is missing or differs: a new topic or group, a spec change, or drift (the topic
// deleted or changed behind the operator's back, put back with a warning event). Queues
// a master has beyond the spec are kept unless allowQueueShrink: removing them would strand
// their messages. A master that cannot be reached while its pod is not ready is waited for;
// a refusal fails the step with the broker's remark, after the other groups were done.
func (r *TopicReconciler) ensureTopic(ctx context.Context, t *v1alpha1.Topic, st *topicState) (time.Duration, error) {
	had := map[string]bool{}
	for _, g := range t.Status.Groups {
		had[g.BrokerName] = true
	}
	var failed []error
	for _, name := range slices.Sorted(maps.Keys(st.masters)) {
		addr := st.masters[name]
		table, err := r.tablesCache().get(ctx, st.admin, addr)
		if err != nil {
			if unreachable(err) && !masterReady(st.broker, name) {
				st.wait("GroupsPending", "the master of %s is not ready yet (%v)", name, err)
				continue
			}
			failed = append(failed, fmt.Errorf("GET_ALL_TOPIC_CONFIG on %s: %w", name, err))
			continue
		}
		have, exists := table[st.topic]
		cfg := st.want
		if exists && !t.Spec.AllowQueueShrink && (have.ReadQueueNums > cfg.ReadQueueNums || have.WriteQueueNums > cfg.WriteQueueNums) {
			cfg.ReadQueueNums = max(cfg.ReadQueueNums, have.ReadQueueNums)
			cfg.WriteQueueNums = max(cfg.WriteQueueNums, have.WriteQueueNums)
			st.wait("QueuesAboveSpec", "%s has %d/%d queues, more than the spec's %d/%d: they are kept, since removing "+
				"queues strands their messages; raise the spec, or set allowQueueShrink to shrink",
				name, have.ReadQueueNums, have.WriteQueueNums, st.want.ReadQueueNums, st.want.WriteQueueNums)
		}
		if exists && sameTopic(have, cfg) {
			st.onBroker[name] = have
			continue
		}
		reason, kind, note := "TopicCreated", corev1.EventTypeNormal, fmt.Sprintf("created topic %s on %s (%s)", st.topic, name, describeTopic(cfg))
		switch {
		case !exists && had[name]:
			reason, kind = "TopicRecreated", corev1.EventTypeWarning
			note = fmt.Sprintf("topic %s was missing on %s (deleted outside the operator?): created again (%s)", st.topic, name, describeTopic(cfg))
		case exists && t.Status.ObservedGeneration == t.Generation:
			reason, kind = "TopicRepaired", corev1.EventTypeWarning
			note = fmt.Sprintf("topic %s on %s was changed outside the operator: %s put back to %s", st.topic, name, describeTopic(have), describeTopic(cfg))
		case exists:
			reason = "TopicUpdated"
			note = fmt.Sprintf("topic %s on %s updated: %s to %s", st.topic, name, describeTopic(have), describeTopic(cfg))
		}
		err = st.admin.CreateOrUpdateTopic(ctx, addr, cfg)
		r.tablesCache().forget(addr)
		if err != nil {
			err = explainRefusal(err, st.access)
			failed = append(failed, fmt.Errorf("UPDATE_AND_CREATE_TOPIC on %s: %w", name, err))
			continue
		}
		r.Recorder.Eventf(t, nil, kind, reason, "UpdateAndCreateTopic", "%s", note)
		st.onBroker[name], st.changed[name] = cfg, true
	}
	err := errors.Join(failed...)
	if err != nil {
		// One Event for the reconcile, not one per broker: the brokers mostly fail alike
		// (an ACL refusal, a down name server).
		r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, "TopicFailed", "UpdateAndCreateTopic",
			"topic %s on %d broker(s): %v", st.topic, len(failed), strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return 0, err
}

// sameTopic compares what drift repair looks at: queues and permission. The order flag
// is left out: a Java broker does not take it from UPDATE_AND_CREATE_TOPIC but from the
// name servers' ORDER_TOPIC_CONFIG when it next registers, so it lags the create call;
// ensureOrderConf keeps that KV, which is what makes a topic ordered.
func sameTopic(have, want TopicConfig) bool {
	return have.ReadQueueNums == want.ReadQueueNums && have.WriteQueueNums == want.WriteQueueNums && have.Perm == want.Perm
}

func describeTopic(c TopicConfig) string {
	s := fmt.Sprintf("%d/%d queues, perm %d", c.ReadQueueNums, c.WriteQueueNums, c.Perm)
	if c.Order {
		s += ", ordered"
	}
	return s
}

// unreachable says the call did not get an answer (no connection, timeout), as opposed
// to a refusal by the broker.
func unreachable(err error) bool {
	var refused *rmqadmin.Error
	return err != nil && !errors.As(err, &refused)
}

// masterReady says whether the Broker's status reports the group's master pod ready; a
// group the status does not list counts as ready (the resolver knows better).
func masterReady(br *v1alpha1.Broker, brokerName string) bool {
	for _, g := range br.Status.Groups {
		if g.BrokerName == brokerName {
			return g.Master != nil && g.Master.Ready
		}
	}
	return true
}

// orderConf is the KV value mqadmin updateTopic -o writes: brokerName:writeQueueNums of
// every group holding the topic, joined by ';'.
func orderConf(onBroker map[string]TopicConfig) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(onBroker)) {
		parts = append(parts, fmt.Sprintf("%s:%d", name, onBroker[name].WriteQueueNums))
	}
	return strings.Join(parts, ";")
}

// ensureOrderConf keeps ORDER_TOPIC_CONFIG/<topic> on every name server: the queues of
// the groups holding an ordered topic (a group that could not be asked counts as its last
// status says), absent otherwise. With no group known to hold it, it is left as it is.
func (r *TopicReconciler) ensureOrderConf(ctx context.Context, t *v1alpha1.Topic, st *topicState) (time.Duration, error) {
	want := ""
	if t.Spec.Order {
		holding := maps.Clone(st.onBroker)
		for _, g := range t.Status.Groups {
			_, selected := st.masters[g.BrokerName]
			if _, asked := holding[g.BrokerName]; selected && !asked {
				holding[g.BrokerName] = TopicConfig{WriteQueueNums: g.WriteQueueNums}
			}
		}
		if len(holding) == 0 {
			return 0, nil
		}
		want = orderConf(holding)
	}
	for _, ns := range st.namesrvs {
		have, found, err := st.admin.KV(ctx, ns, NamespaceOrderTopicConfig, st.topic)
		if err != nil {
			return 0, fmt.Errorf("GET_KV_CONFIG on name server %s: %w", ns, err)
		}
		switch {
		case want == "" && found:
			if err := st.admin.DeleteKV(ctx, ns, NamespaceOrderTopicConfig, st.topic); err != nil {
				return 0, fmt.Errorf("DELETE_KV_CONFIG on name server %s: %w", ns, err)
			}
			r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, "OrderConfDeleted", "DeleteKVConfig",
				"topic %s is not ordered: removed its order config %q from name server %s", st.topic, have, ns)
		case want != "" && (!found || have != want):
			if err := st.admin.PutKV(ctx, ns, NamespaceOrderTopicConfig, st.topic, want); err != nil {
				return 0, fmt.Errorf("PUT_KV_CONFIG on name server %s: %w", ns, err)
			}
			r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, "OrderConfUpdated", "PutKVConfig",
				"order config of topic %s on name server %s: %q (was %q)", st.topic, ns, want, have)
		}
	}
	return 0, nil
}

// checkRoutes reads the route from every name server and compares each group's queues
// with what its master holds. A route that lags a write of this reconcile is waited for
// (the broker registers its new topic table at once, asynchronously); one that is missing
// or stale otherwise (deleted from a name server, say) is repaired by writing the topic
// again, which makes the broker register a new version; at most once per resync and group.
// The permission is not compared: a broker made read-only (wipeWritePerm) narrows it.
func (r *TopicReconciler) checkRoutes(ctx context.Context, t *v1alpha1.Topic, st *topicState) (time.Duration, error) {
	for _, ns := range st.namesrvs {
		route, err := st.admin.TopicRoute(ctx, ns, st.topic)
		if err != nil {
			return 0, fmt.Errorf("GET_ROUTEINFO_BY_TOPIC on name server %s: %w", ns, err)
		}
		st.routes[ns] = route
	}
	for _, name := range slices.Sorted(maps.Keys(st.onBroker)) {
		cfg := st.onBroker[name]
		var stale []string
		for _, ns := range st.namesrvs {
			q, ok := st.routes[ns][name]
			if !ok || q.ReadQueueNums != cfg.ReadQueueNums || q.WriteQueueNums != cfg.WriteQueueNums {
				stale = append(stale, ns)
			}
		}
		if len(stale) == 0 {
			continue
		}
		st.wait("RoutePending", "name server(s) %s do not route %s's %d/%d queues yet", strings.Join(stale, ", "),
			name, cfg.ReadQueueNums, cfg.WriteQueueNums)
		if st.changed[name] || !r.mayTouch(t, name) {
			continue
		}
		addr := st.masters[name]
		err := st.admin.CreateOrUpdateTopic(ctx, addr, cfg)
		r.tablesCache().forget(addr)
		if err != nil {
			return 0, fmt.Errorf("UPDATE_AND_CREATE_TOPIC on %s (to publish its route again): %w", name, err)
		}
		r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, "RouteRepaired", "UpdateAndCreateTopic",
			"name server(s) %s did not route topic %s on %s (deleted outside the operator?): wrote the topic again "+
				"so that %s publishes it", strings.Join(stale, ", "), st.topic, name, name)
	}
	return 0, nil
}

// mayTouch paces route repairs: once per resync for one Topic and group.
func (r *TopicReconciler) mayTouch(t *v1alpha1.Topic, group string) bool {
	r.touchMu.Lock()
	defer r.touchMu.Unlock()
	if r.touched == nil {
		r.touched = map[string]time.Time{}
	}
	key := string(t.UID) + "/" + group
	if last, ok := r.touched[key]; ok && time.Since(last) < r.resync() {
		return false
	}
	for k, at := range r.touched {
		if time.Since(at) >= r.resync() {
			delete(r.touched, k)
		}
	}
	r.touched[key] = time.Now()
	return true
}

// refreshStats sums each group's max offsets (GET_TOPIC_STATS_INFO).
func (r *TopicReconciler) refreshStats(ctx context.Context, _ *v1alpha1.Topic, st *topicState) (time.Duration, error) {
	for _, name := range slices.Sorted(maps.Keys(st.onBroker)) {
		queues, err := st.admin.TopicStats(ctx, st.masters[name], st.topic)
		if err != nil {
			return 0, fmt.Errorf("GET_TOPIC_STATS_INFO on %s: %w", name, err)
		}
		var n int64
		for _, q := range queues {
			n += q.BrokerOffset
		}
		st.messages[name] = n
	}
	return 0, nil
}

// topicGroupsStatus writes status.groups from what the masters and name servers reported.
// A selected group that could not be reached keeps its last entry: a restarting master
// still holds the topic.
func topicGroupsStatus(t *v1alpha1.Topic, st *topicState) {
	prev := map[string]v1alpha1.TopicGroupStatus{}
	for _, g := range t.Status.Groups {
		prev[g.BrokerName] = g
	}
	var groups []v1alpha1.TopicGroupStatus
	var total int64
	for _, name := range slices.Sorted(maps.Keys(st.masters)) {
		cfg, ok := st.onBroker[name]
		if !ok {
			if g, had := prev[name]; had {
				groups = append(groups, g)
				total += g.Messages
			}
			continue
		}
		g := v1alpha1.TopicGroupStatus{BrokerName: name, Messages: st.messages[name],
			TopicQueues: v1alpha1.TopicQueues{ReadQueueNums: cfg.ReadQueueNums, WriteQueueNums: cfg.WriteQueueNums, Perm: cfg.Perm}}
		for _, ns := range st.namesrvs {
			if q, ok := st.routes[ns][name]; ok {
				g.Route = &q
				break
			}
		}
		groups = append(groups, g)
		total += g.Messages
	}
	t.Status.Groups, t.Status.Messages = groups, total
	now := metav1.Now()
	t.Status.StatsUpdatedAt = &now
}

// topicTables caches each broker's topic table briefly, so that the Topics of one Broker
// resyncing together read it once rather than once each (it holds every topic of the
// broker). A write through the controller drops the broker's entry.
type topicTables struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]cachedTable
}

type cachedTable struct {
	at    time.Time
	table map[string]TopicConfig
}

// topicTableTTL bounds how stale a cached topic table may be.
const topicTableTTL = 2 * time.Second

func (r *TopicReconciler) tablesCache() *topicTables {
	r.tablesOnce.Do(func() {
		r.tables = &topicTables{ttl: min(topicTableTTL, r.resync()/4), m: map[string]cachedTable{}}
	})
	return r.tables
}

func (c *topicTables) get(ctx context.Context, admin BrokerAdmin, addr string) (map[string]TopicConfig, error) {
	c.mu.Lock()
	e, ok := c.m[addr]
	c.mu.Unlock()
	if ok && time.Since(e.at) < c.ttl {
		return e.table, nil
	}
	at := time.Now()
	table, err := admin.TopicConfigs(ctx, addr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.m[addr] = cachedTable{at: at, table: table}
	c.mu.Unlock()
	return table, nil
}

func (c *topicTables) forget(addr string) {
	c.mu.Lock()
	delete(c.m, addr)
	c.mu.Unlock()
}

// SetupWithManager reconciles on spec changes (the status writes of each resync must not
// trigger another), on Broker changes that move groups, masters or name servers, on the
// deletion of a Topic with the same name (a duplicate may take over), and on a change of
// a Broker's operator credentials Secret.
func (r *TopicReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Admins == nil {
		r.Admins = NewBrokerAdmins(r.Admin, mgr.GetClient(), mgr.GetAPIReader())
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Topic{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.Broker{}, handler.EnqueueRequestsFromMapFunc(r.topicsOfBroker),
			builder.WithPredicates(brokerTopologyChanged{})).
		Watches(&v1alpha1.Topic{}, handler.EnqueueRequestsFromMapFunc(r.sameNamed),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc: func(event.CreateEvent) bool { return false },
				UpdateFunc: func(e event.UpdateEvent) bool {
					return !e.ObjectNew.GetDeletionTimestamp().IsZero()
				},
				DeleteFunc:  func(event.DeleteEvent) bool { return true },
				GenericFunc: func(event.GenericEvent) bool { return false },
			})).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.topicsOfSecret)).
		Named("topic").
		Complete(r)
}

// brokerTopologyChanged passes Broker updates that can change what a Topic does: the spec,
// the groups and their members, the name servers.
type brokerTopologyChanged struct{ predicate.Funcs }

func (brokerTopologyChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*v1alpha1.Broker)
	n, ok2 := e.ObjectNew.(*v1alpha1.Broker)
	if !ok1 || !ok2 {
		return true
	}
	return o.Generation != n.Generation || o.Status.NameServerAddress != n.Status.NameServerAddress ||
		!equality.Semantic.DeepEqual(o.Status.Groups, n.Status.Groups)
}

func (r *TopicReconciler) topicsOfBroker(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.TopicList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, t := range list.Items {
		if t.Spec.BrokerRef.Name == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&t)})
		}
	}
	return out
}

func (r *TopicReconciler) sameNamed(ctx context.Context, o client.Object) []reconcile.Request {
	gone, ok := o.(*v1alpha1.Topic)
	if !ok {
		return nil
	}
	same, err := r.sameTopic(ctx, gone)
	if err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, t := range same {
		if t.Name != gone.Name {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&t)})
		}
	}
	return out
}

func (r *TopicReconciler) topicsOfSecret(ctx context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, b := range brokersOfSecret(ctx, r.Client, o, true) {
		out = append(out, r.topicsOfBroker(ctx, &b)...)
	}
	return out
}
