package controllers

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/resource"
)

// applyNetworkPolicy keeps owner's NetworkPolicy while spec.networkPolicy is enabled and
// deletes it once it is not. A policy of that name the owner does not control is left
// alone (the cache only holds the operator's own, so it reads as not found anyway).
func applyNetworkPolicy(ctx context.Context, c client.Client, rec events.EventRecorder, owner client.Object, enabled bool, b resource.Builder) error {
	if enabled {
		return applyAll(ctx, c, rec, owner, []resource.Builder{b})
	}
	obj, err := b.Build()
	if err != nil {
		return err
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(obj, owner) {
		return nil
	}
	uid := obj.GetUID()
	if err := c.Delete(ctx, obj, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete NetworkPolicy %s: %w", obj.GetName(), err)
	}
	return nil
}

// applyNetworkPolicy is the Broker's first step, so that no broker pod starts before its
// policy exists.
func (r *BrokerReconciler) applyNetworkPolicy(ctx context.Context, br *v1alpha1.Broker, _ *brokerState) (time.Duration, error) {
	b := &resource.BrokerBuilder{Instance: br, Scheme: r.Scheme, OperatorNamespace: r.OperatorNamespace}
	return 0, applyNetworkPolicy(ctx, r.Client, r.Recorder, br, br.Spec.NetworkPolicy.IsEnabled(), b.NetworkPolicy())
}

// applyNetworkPolicy keeps the NameServer's NetworkPolicy, admitting the pods of the Brokers
// that reference it.
func (r *NameServerReconciler) applyNetworkPolicy(ctx context.Context, ns *v1alpha1.NameServer, b *resource.NameServerBuilder) error {
	enabled := ns.Spec.NetworkPolicy.IsEnabled()
	if enabled {
		brokers, err := brokersOf(ctx, r.Client, ns)
		if err != nil {
			return err
		}
		b.Brokers = brokers
	}
	return applyNetworkPolicy(ctx, r.Client, r.Recorder, ns, enabled, b.NetworkPolicy())
}

// brokersOf names the Brokers in ns's namespace whose nameServerRef is ns, sorted.
func brokersOf(ctx context.Context, c client.Reader, ns *v1alpha1.NameServer) ([]string, error) {
	var list v1alpha1.BrokerList
	if err := c.List(ctx, &list, client.InNamespace(ns.Namespace)); err != nil {
		return nil, err
	}
	var out []string
	for _, br := range list.Items {
		if br.Spec.NameServerRef != nil && br.Spec.NameServerRef.Name == ns.Name {
			out = append(out, br.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// nameServerOfBroker maps a Broker to the NameServer it references, whose NetworkPolicy
// admits its pods. An update maps the old object too, so a changed reference reaches both.
func nameServerOfBroker(_ context.Context, o client.Object) []reconcile.Request {
	br, ok := o.(*v1alpha1.Broker)
	if !ok || br.Spec.NameServerRef == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{
		Namespace: br.Namespace, Name: br.Spec.NameServerRef.Name}}}
}
