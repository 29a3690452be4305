package controllers

import (
	"context"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/openrmq/rocketmq-operator/internal/resource"
)

// applyAll creates or updates every child in the builders' order, stopping at the first
// error. A conflict (someone else wrote the object between our read and write) is retried
// on a fresh read. Each child created or changed is logged and recorded as an Event on
// owner (rec may be nil: no Events); one already as built is neither. A builder that asks
// (resource.AppliedHook) then sees its object as stored; one that is held
// (resource.Holder) is skipped.
func applyAll(ctx context.Context, c client.Client, rec events.EventRecorder, owner client.Object, builders []resource.Builder) error {
	for _, b := range builders {
		if h, ok := b.(resource.Holder); ok && h.Held() {
			continue
		}
		obj, err := b.Build()
		if err != nil {
			return err
		}
		var op controllerutil.OperationResult
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var err error
			op, err = controllerutil.CreateOrUpdate(ctx, c, obj, func() error { return b.Update(obj) })
			return err
		})
		if err != nil {
			return fmt.Errorf("apply %T %s: %w", obj, obj.GetName(), err)
		}
		recordApplied(ctx, rec, owner, obj, op)
		if h, ok := b.(resource.AppliedHook); ok {
			h.Applied(obj)
		}
	}
	return nil
}

// recordApplied logs and records what CreateOrUpdate did to a child, as the RabbitMQ
// cluster operator's logAndRecordOperationResult does: Normal Events Created and Updated.
func recordApplied(ctx context.Context, rec events.EventRecorder, owner, obj client.Object, op controllerutil.OperationResult) {
	var reason, verb string
	switch op {
	case controllerutil.OperationResultCreated:
		reason, verb = "Created", "created"
	case controllerutil.OperationResultUpdated:
		reason, verb = "Updated", "updated"
	default:
		return
	}
	kind := reflect.TypeOf(obj).Elem().Name() // ConfigMap, StatefulSet, ...
	log.FromContext(ctx).Info(verb+" "+kind, "name", obj.GetName())
	if rec != nil {
		rec.Eventf(owner, obj, corev1.EventTypeNormal, reason, "Apply", "%s %s %s", verb, kind, obj.GetName())
	}
}
