package controllers

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/tools/events"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// A spec.config value the broker would refuse stops the reconcile before anything is
// applied, naming the key; the operator's own keys and a valid spec pass.
func TestCheckConfigUsesTheBrokersParser(t *testing.T) {
	r := &BrokerReconciler{Recorder: events.NewFakeRecorder(10)}
	br := newBroker("mq", "rmq")
	br.Spec.ListenPort, br.Spec.ClusterName = 10911, "DefaultCluster"
	br.Spec.FlushDiskType, br.Spec.BrokerRole = v1alpha1.AsyncFlush, v1alpha1.SyncMaster
	if _, err := r.checkConfig(context.Background(), br, &brokerState{}); err != nil {
		t.Fatalf("a valid spec refused: %v", err)
	}
	for key, bad := range map[string]string{
		"sendMessageThreadPoolNums": "0",
		"waitTimeMillsInSendQueue":  "soon",
		"deleteWhen":                "25",
	} {
		br.Spec.Config = map[string]string{key: bad}
		_, err := r.checkConfig(context.Background(), br, &brokerState{})
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: %v, want the broker's refusal naming the key", key, bad, err)
		}
	}
	br.Spec.Config = map[string]string{"someFutureKey": "x"}
	if _, err := r.checkConfig(context.Background(), br, &brokerState{}); err != nil {
		t.Errorf("an unknown key refused (the broker only warns): %v", err)
	}
}
