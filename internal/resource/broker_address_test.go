package resource

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// buildApplied runs b's builders as applyAll does, the API server giving each pod Service
// the ClusterIP 10.96.1.<brokerId> before Applied sees it; keyed as build's.
func buildApplied(t *testing.T, b *BrokerBuilder) map[string]client.Object {
	t.Helper()
	return buildWithIngress(t, b, nil)
}

// buildWithIngress is buildApplied with a cloud that wrote ingress[name] to the status of
// each LoadBalancer Service named there; held builders are skipped, as applyAll does.
func buildWithIngress(t *testing.T, b *BrokerBuilder, ingress map[string]corev1.LoadBalancerIngress) map[string]client.Object {
	t.Helper()
	objs := map[string]client.Object{}
	for _, bl := range b.Builders() {
		if h, ok := bl.(Holder); ok && h.Held() {
			continue
		}
		obj, err := bl.Build()
		if err != nil {
			t.Fatal(err)
		}
		if err := bl.Update(obj); err != nil {
			t.Fatal(err)
		}
		if svc, ok := obj.(*corev1.Service); ok && svc.Spec.ClusterIP != corev1.ClusterIPNone {
			svc.Spec.ClusterIP = "10.96.1." + svc.Labels[BrokerIDLabel]
			if in, ok := ingress[svc.Name]; ok && svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
				svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{in}
			}
		}
		if h, ok := bl.(AppliedHook); ok {
			h.Applied(obj)
		}
		objs[kindOf(obj)+"/"+obj.GetName()] = obj
	}
	return objs
}

// Each broker pod gets its own ClusterIP Service; once the API server has given it an IP
// (Applied), the pod's broker.conf announces that IP and the group's pod template names
// it, so a Service that comes back with another IP rolls the group.
func TestBrokerPodServicesAreTheAnnouncedAddresses(t *testing.T) {
	br := broker()
	objs := buildApplied(t, &BrokerBuilder{Instance: br, Scheme: scheme(t), NameServerAddress: "n:9876"})
	svc, ok := objs["Service/rmq-broker-b-2"].(*corev1.Service)
	if !ok {
		t.Fatalf("no Service rmq-broker-b-2")
	}
	if master := objs["Service/rmq-broker-b-0"].(*corev1.Service); master.Spec.PublishNotReadyAddresses {
		t.Error("the master's Service publishes it while it is not Ready: a stopping master's connections would hang")
	}
	ha := objs["Service/rmq-broker-b-ha"].(*corev1.Service)
	// The HA port, and the client ports a slave copies metadata from (over the fast
	// channel, listenPort-2).
	var haPorts []string
	for _, p := range ha.Spec.Ports {
		haPorts = append(haPorts, fmt.Sprintf("%s:%d>%s", p.Name, p.Port, p.TargetPort.String()))
	}
	if !ha.Spec.PublishNotReadyAddresses || ha.Spec.Selector["statefulset.kubernetes.io/pod-name"] != "rmq-broker-b-0" ||
		strings.Join(haPorts, ",") != "remoting:10911>remoting,fast:10909>fast,ha:10912>ha" {
		t.Errorf("HA Service: %+v ports %v", ha.Spec, haPorts)
	}
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || !svc.Spec.PublishNotReadyAddresses ||
		svc.Spec.Selector["statefulset.kubernetes.io/pod-name"] != "rmq-broker-b-2" ||
		svc.Spec.Selector[BrokerNameLabel] != "broker-b" || svc.Labels[BrokerIDLabel] != "2" {
		t.Errorf("pod Service: %+v %v", svc.Spec, svc.Labels)
	}
	var names []string
	for _, p := range svc.Spec.Ports {
		names = append(names, p.Name)
		if p.TargetPort != intstr.FromString(p.Name) {
			t.Errorf("port %s targets %v", p.Name, p.TargetPort)
		}
	}
	if strings.Join(names, ",") != "remoting,fast,ha" {
		t.Errorf("pod Service ports %v: remoting, fast and HA, not metrics (the headless Service's)", names)
	}
	cm := objs["ConfigMap/rmq-broker-b-config"].(*corev1.ConfigMap)
	for id, ip := range []string{"10.96.1.0", "10.96.1.1", "10.96.1.2"} {
		conf := cm.Data["rmq-broker-b-"+string(rune('0'+id))+".conf"]
		if !strings.Contains(conf, "brokerIP1="+ip+"\n") || !strings.Contains(conf, "brokerIP2="+ip+"\n") {
			t.Errorf("pod %d announces not %s:\n%s", id, ip, conf)
		}
		if !strings.Contains(conf, "haMasterAddress=rmq-broker-b-ha.mq.svc:10912\n") {
			t.Errorf("pod %d: the master's HA address is not the group's HA Service:\n%s", id, conf)
		}
	}
	sts := objs["StatefulSet/rmq-broker-b"].(*appsv1.StatefulSet)
	want := "rmq-broker-b-0=10.96.1.0,rmq-broker-b-1=10.96.1.1,rmq-broker-b-2=10.96.1.2"
	if got := sts.Spec.Template.Annotations[BrokerAddressesAnnotation]; got != want {
		t.Errorf("pod template addresses %q, want %q", got, want)
	}
}
