package controllers

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/resource"
)

// observePods lists the Broker's pods by name.
func (r *BrokerReconciler) observePods(ctx context.Context, br *v1alpha1.Broker, st *brokerState) (time.Duration, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(br.Namespace), client.MatchingLabels{
		resource.InstanceLabel: br.Name, resource.ComponentLabel: resource.BrokerComponent}); err != nil {
		return 0, err
	}
	st.pods = map[string]*corev1.Pod{}
	for i := range pods.Items {
		st.pods[pods.Items[i].Name] = &pods.Items[i]
	}
	return 0, nil
}

// ReasonLoadBalancerPending is the Broker's Ready reason while a pod Service waits for
// its load-balancer IP (expose LoadBalancer), holding its group.
const ReasonLoadBalancerPending = "LoadBalancerPending"

// observeWorkloads fills status.groups (master and slaves with their pods) and the
// Ready/Progressing conditions from the groups' StatefulSets; Ready says which load
// balancers hold groups.
func (r *BrokerReconciler) observeWorkloads(ctx context.Context, br *v1alpha1.Broker, st *brokerState) (time.Duration, error) {
	var sets []*appsv1.StatefulSet
	var ready int32
	groups := make([]v1alpha1.BrokerGroupStatus, 0, br.Spec.Groups)
	for g := range br.Spec.Groups {
		sts := &appsv1.StatefulSet{}
		key := client.ObjectKey{Namespace: br.Namespace, Name: resource.BrokerGroupName(br, g)}
		// Not yet in the cache right after creation: counts as not started.
		if err := r.Get(ctx, key, sts); client.IgnoreNotFound(err) != nil {
			return 0, err
		}
		sets = append(sets, sts)
		ready += sts.Status.ReadyReplicas
		gs := v1alpha1.BrokerGroupStatus{BrokerName: resource.BrokerName(g)}
		if prev := resource.BrokerGroupStatusOf(br, g); prev != nil {
			// The record of failovers: what the pods' roles follow.
			gs.MasterOrdinal, gs.Epoch = prev.MasterOrdinal, prev.Epoch
			gs.MasterUnavailableSince, gs.Failover = prev.MasterUnavailableSince, prev.Failover
		}
		for ordinal := range br.Spec.ReplicasPerGroup {
			m := v1alpha1.BrokerMember{
				BrokerID: resource.BrokerID(br, g, ordinal),
				Pod:      resource.BrokerPodName(br, g, ordinal),
				Address:  resource.BrokerMemberAddress(br, g, ordinal),
			}
			m.Ready = podReady(st.pods[m.Pod])
			if l, ok := st.lag[m.Pod]; ok && l.err == nil {
				m.LagBytes = &l.bytes
			}
			if m.BrokerID == 0 {
				gs.Master = &m
			} else {
				gs.Slaves = append(gs.Slaves, m)
			}
		}
		groups = append(groups, gs)
	}
	want := br.Spec.Groups * br.Spec.ReplicasPerGroup
	br.Status.Groups = groups
	st.roll.record(br)
	br.Status.Replicas = want
	br.Status.ReadyReplicas = ready
	br.Status.ReadySummary = fmt.Sprintf("%d/%d", ready, want)
	before := meta.FindStatusCondition(br.Status.Conditions, v1alpha1.ConditionReady).DeepCopy()
	workloadConditions(&br.Status.Conditions, br.Generation, sets, st.pods, ready, want)
	if st.roll.message != "" {
		if c := meta.FindStatusCondition(br.Status.Conditions, v1alpha1.ConditionProgressing); c != nil && c.Status == metav1.ConditionTrue {
			c.Reason, c.Message = "Rolling", st.roll.message
			// A pod that will not start without the user holds the roll where it is.
			if reason, msg := podProblem(st.pods); reason != "" {
				c.Reason, c.Message = "RollBlocked", fmt.Sprintf("%s; blocked: %s: %s", st.roll.message, reason, msg)
			}
		}
	}
	if st.loadBalancersPending != "" {
		notReady(&br.Status.Conditions, br.Generation, ReasonLoadBalancerPending, st.loadBalancersPending)
	}
	holdForTopics(&br.Status.Conditions, br.Generation, before, st.topicsPending)
	return 0, nil
}

func podReady(p *corev1.Pod) bool {
	if p == nil || !p.DeletionTimestamp.IsZero() {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
