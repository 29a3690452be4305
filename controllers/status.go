package controllers

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// patchStatus writes obj's status, when changed, as a merge patch against orig; a
// resource deleted meanwhile is not an error. It patches a copy: the answer is the stored
// object, whose spec may be newer than the one this reconcile applies, and taking it over
// would let the last step record that newer generation as observed without its steps
// having run.
func patchStatus(ctx context.Context, c client.Client, obj, orig client.Object, changed bool) error {
	if !changed {
		return nil
	}
	err := c.Status().Patch(ctx, obj.DeepCopyObject().(client.Object), client.MergeFrom(orig))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// syncFinalizer adds finalizer under deletionPolicy Delete and drops it under Retain. The
// reconcile goes on afterwards: the update does not change the generation, so no watch
// event would bring it back.
func syncFinalizer(ctx context.Context, c client.Client, obj client.Object, policy v1alpha1.DeletionPolicy, finalizer string) error {
	var changed bool
	if policy == v1alpha1.DeletionDelete {
		changed = controllerutil.AddFinalizer(obj, finalizer)
	} else {
		changed = controllerutil.RemoveFinalizer(obj, finalizer)
	}
	if !changed {
		return nil
	}
	return c.Update(ctx, obj)
}
