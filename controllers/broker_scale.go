package controllers

import (
	"context"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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
		idx, ok := resource.BrokerGroupIndex(sts.Labels[resource.BrokerNameLabel])
		if !ok || idx < br.Spec.Groups || !metav1.IsControlledBy(sts, br) || sts.Name != resource.BrokerGroupName(br, idx) {
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
		for _, obj := range resource.BrokerGroupObjects(br, idx) {
			if err := r.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				return 0, err
			}
		}
		r.Recorder.Eventf(br, nil, corev1.EventTypeNormal, "GroupRemoved", "ScaleIn",
			"removed broker group %s (StatefulSet %s)", sts.Labels[resource.BrokerNameLabel], sts.Name)
	}
	return 0, r.removeStalePodServices(ctx, br)
}

// removeStalePodServices deletes the pod Services of groups and ordinals that no longer
// exist (spec.groups or spec.replicasPerGroup lowered).
func (r *BrokerReconciler) removeStalePodServices(ctx context.Context, br *v1alpha1.Broker) error {
	var svcs corev1.ServiceList
	if err := r.List(ctx, &svcs, client.InNamespace(br.Namespace), client.MatchingLabels{
		resource.InstanceLabel: br.Name, resource.ComponentLabel: resource.BrokerComponent}); err != nil {
		return err
	}
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		idLabel, isPodService := svc.Labels[resource.BrokerIDLabel]
		if !isPodService || !metav1.IsControlledBy(svc, br) {
			continue
		}
		idx, ok := resource.BrokerGroupIndex(svc.Labels[resource.BrokerNameLabel])
		id, err := strconv.ParseInt(idLabel, 10, 32)
		if !ok || err != nil || (idx < br.Spec.Groups && int32(id) < br.Spec.ReplicasPerGroup) {
			continue
		}
		if err := r.Delete(ctx, svc); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
