package controllers

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// Plain unit tests of the pure parts; they need no apiserver.

func TestRolledOut(t *testing.T) {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 2},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)}}
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3,
		UpdatedReplicas: 3, CurrentRevision: "a", UpdateRevision: "a"}
	if !rolledOut(sts) {
		t.Error("all updated and ready: rolled out")
	}
	sts.Status.UpdateRevision = "b"
	if rolledOut(sts) {
		t.Error("revision mid-roll: not rolled out")
	}
	sts.Status.UpdateRevision, sts.Status.ObservedGeneration = "a", 1
	if rolledOut(sts) {
		t.Error("spec not yet observed: not rolled out")
	}
}

func TestConditionsKeepTransitionTime(t *testing.T) {
	var conds []metav1.Condition
	workloadConditions(&conds, 1, nil, nil, 0, 1)
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
	if c.Status != metav1.ConditionFalse || c.Reason != "NotAllReplicasReady" {
		t.Fatalf("ready = %+v", c)
	}
	first := c.LastTransitionTime
	time.Sleep(1100 * time.Millisecond) // condition times have second precision
	workloadConditions(&conds, 2, nil, nil, 0, 1)
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady); !c.LastTransitionTime.Equal(&first) || c.ObservedGeneration != 2 {
		t.Errorf("unchanged status must keep its transition time: %+v", c)
	}
}

func TestDegraded(t *testing.T) {
	var conds []metav1.Condition
	degraded(&conds, 1, "ApplyFailed", errString("boom"))
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionDegraded); c.Status != metav1.ConditionTrue || c.Message != "boom" {
		t.Errorf("%+v", c)
	}
	degraded(&conds, 1, "", nil)
	if !meta.IsStatusConditionFalse(conds, v1alpha1.ConditionDegraded) {
		t.Error("success clears Degraded")
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestAppliedChangeSortsAndCaps(t *testing.T) {
	before := map[queueKey]int64{{"t", "broker-b", 0}: 5, {"t", "broker-a", 1}: 7}
	after := map[queueKey]int64{{"t", "broker-a", 1}: 0}
	c := appliedChange("id", before, after)
	want := []v1alpha1.QueueOffsetChange{
		{Topic: "t", BrokerName: "broker-a", QueueID: 1, Before: 7, After: 0},
		{Topic: "t", BrokerName: "broker-b", QueueID: 0, Before: 5, After: 5},
	}
	if len(c.Queues) != 2 || c.Queues[0] != want[0] || c.Queues[1] != want[1] {
		t.Errorf("queues = %+v", c.Queues)
	}
	many := map[queueKey]int64{}
	for i := range int32(300) {
		many[queueKey{"t", "b", i}] = 1
	}
	if c := appliedChange("id", many, nil); len(c.Queues) != maxRecordedQueues || c.QueuesOmitted != 44 {
		t.Errorf("cap: %d queues, %d omitted", len(c.Queues), c.QueuesOmitted)
	}
}

func TestResetTimestamp(t *testing.T) {
	at := metav1.NewTime(time.UnixMilli(1700000000123))
	cases := map[int64]*v1alpha1.OffsetReset{
		ResetTimestampEarliest: {Earliest: true},
		ResetTimestampLatest:   {Latest: true},
		1700000000123:          {Timestamp: &at},
	}
	for want, rs := range cases {
		if got := resetTimestamp(rs); got != want {
			t.Errorf("%+v: %d, want %d", rs, got, want)
		}
	}
}

func TestStatusResolver(t *testing.T) {
	br := &v1alpha1.Broker{Status: v1alpha1.BrokerStatus{Groups: []v1alpha1.BrokerGroupStatus{
		{BrokerName: "broker-a", Master: &v1alpha1.BrokerMember{Address: "a:1"}},
		{BrokerName: "broker-b"},
	}}}
	m, err := StatusResolver{}.Masters(t.Context(), br)
	if err != nil || len(m) != 1 || m["broker-a"] != "a:1" {
		t.Errorf("%v %v", m, err)
	}
}

func TestConsumerGroupProgressing(t *testing.T) {
	cg := &v1alpha1.ConsumerGroup{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	cg.Status.ObservedGeneration = 2
	cg.Spec.OffsetReset = &v1alpha1.OffsetReset{ID: "r2", Earliest: true}
	cg.Status.LastOffsetReset = &v1alpha1.AppliedOffsetChange{ID: "r1"}
	cgProgressing(cg)
	if c := meta.FindStatusCondition(cg.Status.Conditions, v1alpha1.ConditionProgressing); c.Reason != "OffsetResetPending" {
		t.Errorf("%+v", c)
	}
	cg.Status.LastOffsetReset.ID = "r2"
	cgProgressing(cg)
	if !meta.IsStatusConditionFalse(cg.Status.Conditions, v1alpha1.ConditionProgressing) {
		t.Error("applied reset and observed spec: not progressing")
	}
}

// TestReadyNamesAStuckPod: a Broker whose image does not exist says so in Ready, with the
// kubelet's message, instead of a bare NotAllReplicasReady while it waits forever.
func TestReadyNamesAStuckPod(t *testing.T) {
	pods := map[string]*corev1.Pod{
		"rmq-broker-a-1": {Status: corev1.PodStatus{}},
		"rmq-broker-a-0": {Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "broker", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "ImagePullBackOff", Message: `Back-off pulling image "openrmq/nope:1"`}}}}}},
	}
	var conds []metav1.Condition
	workloadConditions(&conds, 1, nil, pods, 0, 2)
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
	if c.Reason != "ImagePullBackOff" || !strings.Contains(c.Message, "rmq-broker-a-0") || !strings.Contains(c.Message, "openrmq/nope:1") {
		t.Errorf("ready = %+v", c)
	}
	pods["rmq-broker-a-0"].Status = corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
		Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu."}}}
	workloadConditions(&conds, 1, nil, pods, 0, 2)
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady); c.Reason != "Unschedulable" || !strings.Contains(c.Message, "Insufficient cpu") {
		t.Errorf("ready = %+v", c)
	}
}

// TestNameServerAddressIsPodIPs: status.address lists the ready pods' IPs in ordinal
// order; the Go client refuses the DNS names it used to hold ("IP addr error").
func TestNameServerAddressIsPodIPs(t *testing.T) {
	ns := &v1alpha1.NameServer{ObjectMeta: metav1.ObjectMeta{Name: "ns"},
		Spec: v1alpha1.NameServerSpec{Replicas: 3, Ports: v1alpha1.NameServerPorts{ListenPort: 9876}}}
	ready := func(ip string, ok bool) *corev1.Pod {
		st := corev1.ConditionFalse
		if ok {
			st = corev1.ConditionTrue
		}
		return &corev1.Pod{Status: corev1.PodStatus{PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}}
	}
	pods := map[string]*corev1.Pod{"ns-2": ready("10.244.0.9", true), "ns-0": ready("10.244.0.12", true),
		"ns-1": ready("10.244.0.3", false), "ns-7": ready("10.244.0.4", true)}
	if got := nameServerPodAddress(ns, pods); got != "10.244.0.12:9876;10.244.0.9:9876" {
		t.Errorf("address = %q", got)
	}
}
