package controllers

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/resource"
)

// removeScaledInGroups deletes the objects of groups at or beyond spec.groups. Their claims
// follow storage.whenScaled, not whenDeleted: before deleting the StatefulSet its
// whenDeleted retention is set to the whenScaled policy, because the StatefulSet controller
// applies whenDeleted when the StatefulSet itself goes.
func (r *BrokerReconciler) removeScaledInGroups(ctx context.Context, br *v1alpha1.Broker, _ *brokerState) (time.Duration, error) {
	var sets appsv1.StatefulSetList
	if err := r.List(ctx, &sets, client.InNamespace(br.Namespace), client.MatchingLabels{
		resource.InstanceLabel: br.Name, resource.ComponentLabel: resource.BrokerComponent}); err != nil {
		return 0, err
	}
	for i := range sets.Items {
		sts := &sets.Items[i]
		idx, ok := groupIndex(sts.Labels[resource.BrokerNameLabel])
		if !ok || idx < br.Spec.Groups || !metav1.IsControlledBy(sts, br) {
			continue
		}
		if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, sts, func() error {
			if sts.Spec.PersistentVolumeClaimRetentionPolicy == nil {
				sts.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
			}
			sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted =
				sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled
			return nil
		}); err != nil {
			return 0, err
		}
		ns := br.Namespace
		for _, obj := range []client.Object{
			sts,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sts.Name + "-config"}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sts.Name + "-headless"}},
			&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sts.Name}},
		} {
			if err := r.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				return 0, err
			}
		}
		r.Recorder.Eventf(br, nil, corev1.EventTypeNormal, "GroupRemoved", "ScaleIn",
			"removed broker group %s (StatefulSet %s)", sts.Labels[resource.BrokerNameLabel], sts.Name)
	}
	return 0, nil
}

// groupIndex parses "broker-c" into 2.
func groupIndex(brokerName string) (int32, bool) {
	if len(brokerName) != len("broker-a") || brokerName[:7] != "broker-" {
		return 0, false
	}
	c := brokerName[7]
	if c < 'a' || c > 'z' {
		return 0, false
	}
	return int32(c - 'a'), true
}
