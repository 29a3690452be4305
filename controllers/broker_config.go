package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	brokerconfig "github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/internal/resource"
)

// checkConfig reads every group's master broker.conf with the broker's own parser before
// anything is applied: a value the broker would refuse at start (a duration that is not
// a number, a pool size of 0) stops the reconcile here, with the broker's message in the
// Degraded condition and an Event, instead of rolling pods into a crash loop. The running
// pods keep the last good spec. Unknown keys pass, as the broker only warns about them.
func (r *BrokerReconciler) checkConfig(_ context.Context, br *v1alpha1.Broker, _ *brokerState) (time.Duration, error) {
	for g := range br.Spec.Groups {
		if _, _, err := brokerconfig.Load(strings.NewReader(resource.BrokerPodConf(br, g, 0))); err != nil {
			err = fmt.Errorf("spec.config: the broker would refuse its broker.conf: %w", err)
			r.Recorder.Eventf(br, nil, corev1.EventTypeWarning, "ConfigInvalid", "Validate", "%v", err)
			return time.Hour, err // a spec change, which brings a reconcile of its own, fixes it
		}
	}
	return 0, nil
}
