package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/resource"
)

// A group added to a Broker (scale-out) is not Ready before it holds the topics the other
// groups hold. The Topic controller learns of the group from the Broker's status (it
// watches Brokers) and creates the topic there; the Broker controller reads the Topics'
// status, where each group that holds the topic is listed, and keeps the Broker's Ready
// condition False (reason TopicsPending, naming the groups and topics) until every group
// holds every topic it is selected for. Only Topics that some group already holds count,
// so a Topic every broker refuses (or a duplicate) never holds a Broker back; neither do
// new Topics on a settled Broker, which are the Topic's own Ready to report.

// ReasonTopicsPending is the Broker's Ready reason while a group lacks topics.
const ReasonTopicsPending = "TopicsPending"

// maxPendingListed bounds the topics the Ready message names per group.
const maxPendingListed = 5

// observeTopics finds the groups that lack topics the other groups hold; observeWorkloads
// then keeps Ready False with them.
func (r *BrokerReconciler) observeTopics(ctx context.Context, br *v1alpha1.Broker, st *brokerState) (time.Duration, error) {
	var list v1alpha1.TopicList
	if err := r.List(ctx, &list, client.InNamespace(br.Namespace)); err != nil {
		return 0, err
	}
	pending := pendingTopics(br, list.Items)
	if len(pending) == 0 {
		return 0, nil
	}
	var parts []string
	for _, g := range slices.Sorted(maps.Keys(pending)) {
		names := pending[g]
		more := ""
		if len(names) > maxPendingListed {
			more = fmt.Sprintf(" and %d more", len(names)-maxPendingListed)
			names = names[:maxPendingListed]
		}
		parts = append(parts, fmt.Sprintf("%s lacks topic(s) %s%s", g, strings.Join(names, ", "), more))
	}
	st.topicsPending = strings.Join(parts, "; ") + " that the other groups hold (Topic resources)"
	return 0, nil
}

// holdForTopics sets Ready False with TopicsPending where it would be True, keeping the
// transition time of a Ready that was False already. before is Ready as it was before
// workloadConditions ran.
func holdForTopics(conds *[]metav1.Condition, gen int64, before *metav1.Condition, pending string) {
	if pending == "" || !meta.IsStatusConditionTrue(*conds, v1alpha1.ConditionReady) {
		return
	}
	meta.RemoveStatusCondition(conds, v1alpha1.ConditionReady)
	if before != nil {
		*conds = append(*conds, *before)
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: v1alpha1.ConditionReady,
		Status: metav1.ConditionFalse, Reason: ReasonTopicsPending, ObservedGeneration: gen, Message: pending})
}

// pendingTopics maps each group of br's spec to the topics (sorted) it is selected for and
// lacks while another group holds them, by the Topics' status.
func pendingTopics(br *v1alpha1.Broker, topics []v1alpha1.Topic) map[string][]string {
	out := map[string][]string{}
	for i := range topics {
		t := &topics[i]
		if t.Spec.BrokerRef.Name != br.Name || !t.DeletionTimestamp.IsZero() || len(t.Status.Groups) == 0 {
			continue
		}
		on := map[string]bool{}
		for _, g := range t.Status.Groups {
			on[g.BrokerName] = true
		}
		for i := range br.Spec.Groups {
			name := resource.BrokerName(i)
			if t.SelectsGroup(name) && !on[name] {
				out[name] = append(out[name], t.EffectiveTopicName())
			}
		}
	}
	for g := range out {
		slices.Sort(out[g])
		out[g] = slices.Compact(out[g])
	}
	return out
}

// brokerOfTopic maps a Topic to its Broker.
func brokerOfTopic(_ context.Context, o client.Object) []reconcile.Request {
	t, ok := o.(*v1alpha1.Topic)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: t.Namespace, Name: t.Spec.BrokerRef.Name}}}
}

// topicGroupsChanged passes Topic events that can change a Broker's TopicsPending: the
// groups holding the topic, the selector, deletion.
var topicGroupsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*v1alpha1.Topic)
		n, ok2 := e.ObjectNew.(*v1alpha1.Topic)
		if !ok1 || !ok2 {
			return true
		}
		return o.Generation != n.Generation || !n.DeletionTimestamp.IsZero() ||
			!slices.Equal(groupNames(o.Status.Groups), groupNames(n.Status.Groups))
	},
}

func groupNames(gs []v1alpha1.TopicGroupStatus) []string {
	out := make([]string, 0, len(gs))
	for _, g := range gs {
		out = append(out, g.BrokerName)
	}
	return out
}
