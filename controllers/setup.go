package controllers

import (
	"context"
	"errors"

	ctrl "sigs.k8s.io/controller-runtime"
)

// SetupAll registers the three controllers with mgr, all sharing one admin client.
func SetupAll(mgr ctrl.Manager, admin BrokerAdmin) error {
	c, s := mgr.GetClient(), mgr.GetScheme()
	rec := mgr.GetEventRecorder("rocketmq-operator")
	if err := (&NameServerReconciler{Client: c, Scheme: s}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&BrokerReconciler{Client: c, Scheme: s, Admin: admin, Recorder: rec}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&ConsumerGroupReconciler{Client: c, Admin: admin, Resolver: StatusResolver{},
		Recorder: rec, APIReader: mgr.GetAPIReader()}).SetupWithManager(mgr)
}

// ErrAdminUnavailable is returned by UnavailableAdmin.
var ErrAdminUnavailable = errors.New("controllers: no broker admin client is configured")

// UnavailableAdmin fails every call; it stands in until a real BrokerAdmin is wired.
type UnavailableAdmin struct{}

func (UnavailableAdmin) UpdateBrokerConfig(context.Context, string, map[string]string) error {
	return ErrAdminUnavailable
}
func (UnavailableAdmin) CreateOrUpdateSubscriptionGroup(context.Context, string, SubscriptionGroup) error {
	return ErrAdminUnavailable
}
func (UnavailableAdmin) DeleteSubscriptionGroup(context.Context, string, string) error {
	return ErrAdminUnavailable
}
func (UnavailableAdmin) ResetOffset(context.Context, string, string, string, int64) ([]QueueOffset, error) {
	return nil, ErrAdminUnavailable
}
func (UnavailableAdmin) CloneGroupOffset(context.Context, string, string, string, string) error {
	return ErrAdminUnavailable
}
func (UnavailableAdmin) ConsumeStats(context.Context, string, string, string) ([]QueueOffset, error) {
	return nil, ErrAdminUnavailable
}
