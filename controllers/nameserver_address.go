package controllers

import (
	"context"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/resource"
)

// pods lists the NameServer's pods by name.
func (r *NameServerReconciler) pods(ctx context.Context, ns *v1alpha1.NameServer) (map[string]*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(ns.Namespace), client.MatchingLabels{
		resource.InstanceLabel: ns.Name, resource.ComponentLabel: resource.NameServerComponent}); err != nil {
		return nil, err
	}
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// nameServerPodAddress is status.address: the pod IP and port of every ready name server
// of the ensemble in ordinal order, ';'-separated, as namesrvAddr lists are. Every
// official client accepts it (the Go client refuses host names), and the reconciler
// rewrites it whenever a pod moves, as its pods are watched.
func nameServerPodAddress(ns *v1alpha1.NameServer, pods map[string]*corev1.Pod) string {
	var addrs []string
	for i := range ns.Spec.Replicas {
		p := pods[resource.NameServerPodName(ns, i)]
		if !podReady(p) || p.Status.PodIP == "" {
			continue
		}
		addrs = append(addrs, net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(ns.Spec.Ports.ListenPort))))
	}
	return strings.Join(addrs, ";")
}

func nameServerOfPod(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[resource.ComponentLabel] != resource.NameServerComponent || l[resource.InstanceLabel] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{
		Namespace: o.GetNamespace(), Name: l[resource.InstanceLabel]}}}
}
