package controllers

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/internal/resource"
)

// SetupAll registers the controllers with mgr (NameServer, Broker, ConsumerGroup, Topic,
// User), all sharing one admin client, and one set of signing clients made from it for
// Brokers with ACL credentials (admin must be a CredentialedAdmin, as RemotingAdmin is, for
// those, and an AccountProber for Users to report whether the brokers loaded them).
// operatorNamespace is where the operator runs: the NetworkPolicies admit admin traffic
// from it ("" admits none).
func SetupAll(mgr ctrl.Manager, admin BrokerAdmin, operatorNamespace string) error {
	c, s := mgr.GetClient(), mgr.GetScheme()
	rec := mgr.GetEventRecorder("rocketmq-operator")
	admins := NewBrokerAdmins(admin, c, mgr.GetAPIReader())
	if err := (&NameServerReconciler{Client: c, Scheme: s, Recorder: rec, OperatorNamespace: operatorNamespace}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&BrokerReconciler{Client: c, Scheme: s, Admin: admin, Admins: admins, Recorder: rec,
		OperatorNamespace: operatorNamespace, APIReader: mgr.GetAPIReader()}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&ConsumerGroupReconciler{Client: c, Admin: admin, Admins: admins, Resolver: StatusResolver{},
		Recorder: rec, APIReader: mgr.GetAPIReader()}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&TopicReconciler{Client: c, Admin: admin, Admins: admins, Resolver: StatusResolver{},
		Recorder: rec}).SetupWithManager(mgr); err != nil {
		return err
	}
	prober, ok := admin.(AccountProber)
	if !ok {
		return fmt.Errorf("the admin client (%T) cannot probe accounts, which the User controller needs", admin)
	}
	return (&UserReconciler{Client: c, APIReader: mgr.GetAPIReader(), Prober: prober, Members: StatusResolver{},
		Recorder: rec}).SetupWithManager(mgr)
}

// CacheByObject limits the manager's cache of child kinds to the operator's own objects, so
// it does not mirror every pod, ConfigMap and Service of the cluster.
func CacheByObject() map[client.Object]cache.ByObject {
	managed := cache.ByObject{Label: labels.SelectorFromSet(resource.ManagedBy)}
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}:                   managed,
		&corev1.ConfigMap{}:             managed,
		&corev1.Service{}:               managed,
		&appsv1.StatefulSet{}:           managed,
		&policyv1.PodDisruptionBudget{}: managed,
		&networkingv1.NetworkPolicy{}:   managed,
	}
}
