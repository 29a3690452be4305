package controllers

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// Admin calls count by request code and outcome; offset changes by kind and result.
func TestOperatorMetrics(t *testing.T) {
	ok := remoting.NewRequest(remoting.HeartBeat, nil, nil).NewResponse(remoting.Success, "")
	refused := remoting.NewRequest(remoting.HeartBeat, nil, nil).NewResponse(remoting.NoPermission, "")
	before := testutil.ToFloat64(adminCalls.WithLabelValues("invoke_broker_to_reset_offset", "success"))
	ObserveAdminCall(remoting.InvokeBrokerToResetOffset, ok, nil)
	ObserveAdminCall(remoting.InvokeBrokerToResetOffset, refused, nil)
	ObserveAdminCall(remoting.InvokeBrokerToResetOffset, nil, errors.New("timeout"))
	if got := testutil.ToFloat64(adminCalls.WithLabelValues("invoke_broker_to_reset_offset", "success")); got != before+1 {
		t.Errorf("success calls %v", got)
	}
	if got := testutil.ToFloat64(adminCalls.WithLabelValues("invoke_broker_to_reset_offset", "no_permission")); got < 1 {
		t.Errorf("refused calls %v", got)
	}
	if got := testutil.ToFloat64(adminCalls.WithLabelValues("invoke_broker_to_reset_offset", "error")); got < 1 {
		t.Errorf("failed calls %v", got)
	}
	applied := testutil.ToFloat64(offsetChanges.WithLabelValues("reset", "applied"))
	offsetChanged("reset", nil)
	offsetChanged("reset", errors.New("x"))
	if got := testutil.ToFloat64(offsetChanges.WithLabelValues("reset", "applied")); got != applied+1 {
		t.Errorf("applied resets %v", got)
	}
	problems, err := testutil.CollectAndLint(adminCalls)
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
