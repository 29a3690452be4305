package resource

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// build runs every builder like CreateOrUpdate would on a fresh object, keyed by kind/name.
func build(t *testing.T, builders []Builder) map[string]client.Object {
	t.Helper()
	out := map[string]client.Object{}
	for _, b := range builders {
		obj, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Update(obj); err != nil {
			t.Fatal(err)
		}
		out[kindOf(obj)+"/"+obj.GetName()] = obj
	}
	return out
}

func kindOf(o client.Object) string {
	switch o.(type) {
	case *corev1.ConfigMap:
		return "ConfigMap"
	case *corev1.Service:
		return "Service"
	case *appsv1.StatefulSet:
		return "StatefulSet"
	case *policyv1.PodDisruptionBudget:
		return "PodDisruptionBudget"
	}
	return "Unknown"
}

func nameServer() *v1alpha1.NameServer {
	return &v1alpha1.NameServer{
		ObjectMeta: metav1.ObjectMeta{Name: "ns", Namespace: "mq", UID: "u1"},
		Spec: v1alpha1.NameServerSpec{
			ContainerSpec: v1alpha1.ContainerSpec{Image: "img:1",
				Pod: v1alpha1.PodOverrides{
					Labels:            map[string]string{"team": "mq", InstanceLabel: "spoof"},
					PriorityClassName: "high",
					NodeSelector:      map[string]string{"disk": "ssd"},
				}},
			Replicas: 3,
			Ports:    v1alpha1.NameServerPorts{ListenPort: 9876},
		},
	}
}

func TestNameServerObjects(t *testing.T) {
	ns := nameServer()
	objs := build(t, (&NameServerBuilder{Instance: ns, Scheme: scheme(t)}).Builders())
	for _, want := range []string{"ConfigMap/ns-config", "Service/ns-headless", "Service/ns",
		"StatefulSet/ns", "PodDisruptionBudget/ns"} {
		obj, ok := objs[want]
		if !ok {
			t.Fatalf("missing %s; have %v", want, objs)
		}
		if len(obj.GetOwnerReferences()) != 1 || obj.GetOwnerReferences()[0].UID != "u1" {
			t.Errorf("%s: owner reference = %v", want, obj.GetOwnerReferences())
		}
	}
	sts := objs["StatefulSet/ns"].(*appsv1.StatefulSet)
	tpl := sts.Spec.Template
	if tpl.Labels["team"] != "mq" || tpl.Labels[InstanceLabel] != "ns" {
		t.Errorf("pod labels = %v: user labels kept, ours win", tpl.Labels)
	}
	if tpl.Spec.PriorityClassName != "high" || tpl.Spec.NodeSelector["disk"] != "ssd" {
		t.Errorf("pod overrides not applied: %+v", tpl.Spec)
	}
	if got := NameServerAddress(ns); got != "ns-0.ns-headless.mq.svc:9876;ns-1.ns-headless.mq.svc:9876;ns-2.ns-headless.mq.svc:9876" {
		t.Errorf("address = %q", got)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 0 {
		t.Error("no persistence: no claim template expected")
	}
	if !objs["Service/ns-headless"].(*corev1.Service).Spec.PublishNotReadyAddresses {
		t.Error("headless service must publish not-ready pods")
	}
}

func TestNameServerHashFollowsConfig(t *testing.T) {
	ns := nameServer()
	h1 := Hash(NameServerConf(ns))
	ns.Spec.Replicas = 5
	if Hash(NameServerConf(ns)) != h1 {
		t.Error("replicas must not change the config hash")
	}
	ns.Spec.Ports.ListenPort = 9000
	if Hash(NameServerConf(ns)) == h1 {
		t.Error("listenPort must change the config hash")
	}
}

// TestUpdateKeepsImmutableFields checks that Update on an existing StatefulSet leaves the
// selector and claim templates alone (the API server refuses changes to them).
func TestUpdateKeepsImmutableFields(t *testing.T) {
	br := broker()
	b := &brokerStatefulSet{brokerGroup{BrokerBuilder: &BrokerBuilder{Instance: br, Scheme: scheme(t)}}}
	existing := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "mq",
		CreationTimestamp: metav1.Now()}, Spec: appsv1.StatefulSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"old": "sel"}}}}
	if err := b.Update(existing); err != nil {
		t.Fatal(err)
	}
	if existing.Spec.Selector.MatchLabels["old"] != "sel" || existing.Spec.VolumeClaimTemplates != nil {
		t.Errorf("immutable fields changed: %+v", existing.Spec)
	}
}
