package controllers

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// Conditions are pure functions of what was observed; meta.SetStatusCondition keeps
// LastTransitionTime unless the status flips.

// rolledOut says a StatefulSet's controller has seen its spec and every pod runs the
// current revision and is ready.
func rolledOut(sts *appsv1.StatefulSet) bool {
	want := int32(1)
	if sts.Spec.Replicas != nil {
		want = *sts.Spec.Replicas
	}
	s := sts.Status
	return s.ObservedGeneration >= sts.Generation &&
		s.UpdatedReplicas == want && s.ReadyReplicas == want && s.Replicas == want &&
		(s.UpdateRevision == "" || s.CurrentRevision == s.UpdateRevision)
}

// workloadConditions sets Ready and Progressing from the StatefulSets of one resource and
// its pods: a pod that cannot start (image not found, crash loop, unschedulable) names
// the reason in Ready instead of a bare NotAllReplicasReady.
func workloadConditions(conds *[]metav1.Condition, gen int64, sets []*appsv1.StatefulSet, pods map[string]*corev1.Pod, ready, want int32) {
	allRolled := len(sets) > 0
	for _, s := range sets {
		allRolled = allRolled && rolledOut(s)
	}
	readyC := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: gen}
	if allRolled && ready == want {
		readyC.Status, readyC.Reason = metav1.ConditionTrue, "AllReplicasReady"
		readyC.Message = fmt.Sprintf("%d/%d pods ready", ready, want)
	} else {
		readyC.Status, readyC.Reason = metav1.ConditionFalse, "NotAllReplicasReady"
		readyC.Message = fmt.Sprintf("%d/%d pods ready and updated", ready, want)
		if reason, msg := podProblem(pods); reason != "" {
			readyC.Reason = reason
			readyC.Message = fmt.Sprintf("%d/%d pods ready and updated; %s", ready, want, msg)
		}
	}
	meta.SetStatusCondition(conds, readyC)
	progC := metav1.Condition{Type: v1alpha1.ConditionProgressing, ObservedGeneration: gen}
	if allRolled {
		progC.Status, progC.Reason, progC.Message = metav1.ConditionFalse, "RolloutComplete", "every pod runs the current spec"
	} else {
		progC.Status, progC.Reason, progC.Message = metav1.ConditionTrue, "RollingOut", "pods are being created or updated"
	}
	meta.SetStatusCondition(conds, progC)
}

// degraded sets Degraded True with a named reason, or False when err is nil.
func degraded(conds *[]metav1.Condition, gen int64, reason string, err error) {
	c := metav1.Condition{Type: v1alpha1.ConditionDegraded, ObservedGeneration: gen,
		Status: metav1.ConditionFalse, Reason: "ReconcileSucceeded", Message: "last reconcile succeeded"}
	if err != nil {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, reason, err.Error()
	}
	meta.SetStatusCondition(conds, c)
}

// notReady sets Ready False with a reason, for failures that happen before any workload
// can be observed (missing reference, no masters yet).
func notReady(conds *[]metav1.Condition, gen int64, reason, msg string) {
	meta.SetStatusCondition(conds, metav1.Condition{Type: v1alpha1.ConditionReady,
		Status: metav1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: gen})
}
