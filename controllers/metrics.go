package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// The manager's secure metrics endpoint (cmd/manager, --metrics-secure) asks the API
// server who a scraper is and whether it may get /metrics:
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// The operator's own metrics, beside controller-runtime's (reconcile counts and times,
// work queues, REST client calls), on the manager's metrics endpoint.
var (
	adminCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rocketmq_operator_admin_calls_total",
		Help: "Admin calls the operator made to brokers and name servers, by request code and result: the response code's name (success, no_permission, ...), or error when no response came (connection, timeout).",
	}, []string{"request_code", "result"})
	offsetChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rocketmq_operator_offset_resets_total",
		Help: "ConsumerGroup offset changes, by kind (reset: spec.offsetReset, migration: spec.offsetMigration) and result (applied once per id, or failed: an attempt that will be retried).",
	}, []string{"kind", "result"})
)

func init() {
	metrics.Registry.MustRegister(adminCalls, offsetChanges)
	for _, kind := range []string{"reset", "migration"} {
		for _, result := range []string{"applied", "failed"} {
			offsetChanges.WithLabelValues(kind, result)
		}
	}
}

// ObserveAdminCall counts one admin call (pkg/admin's Client.OnCall).
func ObserveAdminCall(code int16, resp *remoting.Command, err error) {
	result := "error"
	if err == nil && resp != nil {
		result = remoting.ResponseCodeName(resp.Code)
	}
	adminCalls.WithLabelValues(remoting.RequestCodeName(code), result).Inc()
}

func offsetChanged(kind string, err error) {
	result := "applied"
	if err != nil {
		result = "failed"
	}
	offsetChanges.WithLabelValues(kind, result).Inc()
}

// MetricNames lists the operator's own metric families (rocketmq_operator_*).
func MetricNames() []string {
	return []string{"rocketmq_operator_admin_calls_total", "rocketmq_operator_offset_resets_total"}
}
