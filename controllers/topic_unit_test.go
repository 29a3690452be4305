package controllers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/pkg/names"
)

// TestTopicNameRuleIsPkgNames: the CRD refuses topic names by pkg/names' rules: its
// pattern and length are names.Pattern and names.MaxTopicLength, and it lists every
// system topic. The markers cannot import Go constants; this keeps them in step.
func TestTopicNameRuleIsPkgNames(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "config", "crd", "bases", "rocketmq.openrmq.io_topics.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	at := func(m any, path ...any) any {
		for _, p := range path {
			switch k := p.(type) {
			case string:
				m = m.(map[string]any)[k]
			case int:
				m = m.([]any)[k]
			}
		}
		return m
	}
	field := at(crd, "spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "spec", "properties", "topicName")
	if got := at(field, "pattern"); got != names.Pattern {
		t.Errorf("topicName pattern %v, want names.Pattern %s", got, names.Pattern)
	}
	if got := at(field, "maxLength"); got != float64(names.MaxTopicLength) {
		t.Errorf("topicName maxLength %v, want %d", got, names.MaxTopicLength)
	}
	var rules []string
	for _, r := range at(field, "x-kubernetes-validations").([]any) {
		rules = append(rules, r.(map[string]any)["rule"].(string))
	}
	all := strings.Join(rules, "\n")
	for _, s := range names.SystemTopics {
		if !strings.Contains(all, "'"+s+"'") {
			t.Errorf("the CRD does not refuse system topic %s", s)
		}
	}
	for _, prefix := range []string{strings.ToLower(names.SystemTopicPrefix), names.RetryTopicPrefix, names.DLQTopicPrefix} {
		if !strings.Contains(all, "'"+prefix+"'") {
			t.Errorf("the CRD does not refuse the prefix %s", prefix)
		}
	}
}

func TestTopicQueueNums(t *testing.T) {
	for _, tc := range []struct {
		spec        v1alpha1.TopicSpec
		read, write int32
	}{
		{v1alpha1.TopicSpec{}, 8, 8},
		{v1alpha1.TopicSpec{Queues: ptr.To[int32](3)}, 3, 3},
		{v1alpha1.TopicSpec{ReadQueueNums: ptr.To[int32](16)}, 16, 8},
		{v1alpha1.TopicSpec{ReadQueueNums: ptr.To[int32](4), WriteQueueNums: ptr.To[int32](2)}, 4, 2},
	} {
		tp := &v1alpha1.Topic{Spec: tc.spec}
		if r, w := tp.QueueNums(); r != tc.read || w != tc.write {
			t.Errorf("%+v: %d/%d, want %d/%d", tc.spec, r, w, tc.read, tc.write)
		}
	}
}

func TestOrderConf(t *testing.T) {
	got := orderConf(map[string]TopicConfig{"broker-b": {WriteQueueNums: 4}, "broker-a": {WriteQueueNums: 8}})
	if got != "broker-a:8;broker-b:4" {
		t.Errorf("orderConf = %q", got)
	}
}

func TestPendingTopics(t *testing.T) {
	br := &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Name: "rmq"}, Spec: v1alpha1.BrokerSpec{Groups: 3}}
	on := func(groups ...string) []v1alpha1.TopicGroupStatus {
		var out []v1alpha1.TopicGroupStatus
		for _, g := range groups {
			out = append(out, v1alpha1.TopicGroupStatus{BrokerName: g})
		}
		return out
	}
	topic := func(name string, sel []string, groups ...string) v1alpha1.Topic {
		tp := v1alpha1.Topic{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.TopicSpec{BrokerRef: v1alpha1.LocalObjectReference{Name: "rmq"}}}
		if sel != nil {
			tp.Spec.Groups = &v1alpha1.TopicGroupSelector{Names: sel}
		}
		tp.Status.Groups = on(groups...)
		return tp
	}
	other := topic("elsewhere", nil, "broker-a")
	other.Spec.BrokerRef.Name = "other"
	got := pendingTopics(br, []v1alpha1.Topic{
		topic("orders", nil, "broker-a", "broker-b"),       // broker-c lacks it
		topic("audit", nil, "broker-a"),                    // broker-b and broker-c lack it
		topic("only-a", []string{"broker-a"}, "broker-a"),  // complete
		topic("refused", nil),                              // held nowhere: never holds a group back
		topic("only-bc", []string{"broker-b", "broker-c"}), // held nowhere either
		other,
	})
	want := map[string][]string{"broker-b": {"audit"}, "broker-c": {"audit", "orders"}}
	if len(got) != len(want) || strings.Join(got["broker-b"], ",") != "audit" || strings.Join(got["broker-c"], ",") != "audit,orders" {
		t.Errorf("pendingTopics = %v, want %v", got, want)
	}
}

// TestHoldForTopicsKeepsTransitionTime: a Broker held back by topics keeps the Ready
// condition it had, False, with its transition time; only the reason changes.
func TestHoldForTopicsKeepsTransitionTime(t *testing.T) {
	var conds []metav1.Condition
	meta.SetStatusCondition(&conds, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: "NotAllReplicasReady", LastTransitionTime: metav1.NewTime(time.Unix(1000, 0))})
	before := meta.FindStatusCondition(conds, v1alpha1.ConditionReady).DeepCopy()
	workloadReady := func() {
		meta.SetStatusCondition(&conds, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "AllReplicasReady"})
	}
	workloadReady()
	holdForTopics(&conds, 2, before, "broker-b lacks topic(s) orders")
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonTopicsPending || !c.LastTransitionTime.Equal(&before.LastTransitionTime) {
		t.Errorf("held: %+v", c)
	}
	workloadReady()
	holdForTopics(&conds, 2, c.DeepCopy(), "")
	if !meta.IsStatusConditionTrue(conds, v1alpha1.ConditionReady) {
		t.Error("nothing pending: Ready stays True")
	}
}
