package controllers

import (
	"context"
	"fmt"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/openrmq/rocketmq-operator/internal/resource"
)

// applyAll creates or updates every child in the builders' order, stopping at the first
// error. A conflict (someone else wrote the object between our read and write) is retried
// on a fresh read.
func applyAll(ctx context.Context, c client.Client, builders []resource.Builder) error {
	for _, b := range builders {
		obj, err := b.Build()
		if err != nil {
			return err
		}
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			_, err := controllerutil.CreateOrUpdate(ctx, c, obj, func() error { return b.Update(obj) })
			return err
		})
		if err != nil {
			return fmt.Errorf("apply %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}
