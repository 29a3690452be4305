package resource

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

func containerPort(c corev1.Container, name string) (int32, bool) {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

func servicePort(svc *corev1.Service, name string) (int32, bool) {
	for _, p := range svc.Spec.Ports {
		if p.Name == name {
			return p.Port, true
		}
	}
	return 0, false
}

// Brokers serve metrics by default on 5557, named "metrics" in the pod and the headless
// Service; spec.config moves the port or turns them off.
func TestBrokerMetricsPort(t *testing.T) {
	for _, c := range []struct {
		name   string
		config map[string]string
		port   int32
		on     bool
	}{
		{"default", nil, DefaultMetricsPort, true},
		{"moved", map[string]string{"metricsPromExporterPort": "6000"}, 6000, true},
		{"off", map[string]string{"metricsExporterType": "DISABLE"}, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			br := broker()
			br.Spec.Config = c.config
			objs := build(t, (&BrokerBuilder{Instance: br, Scheme: scheme(t), NameServerAddress: "n:9876"}).Builders())
			sts := objs["StatefulSet/rmq-broker-a"].(*appsv1.StatefulSet)
			port, ok := containerPort(sts.Spec.Template.Spec.Containers[0], MetricsPortName)
			svcPort, svcOK := servicePort(objs["Service/rmq-broker-a-headless"].(*corev1.Service), MetricsPortName)
			if ok != c.on || port != c.port || svcOK != c.on || svcPort != c.port {
				t.Errorf("container port %d %v, service port %d %v; want %d %v", port, ok, svcPort, svcOK, c.port, c.on)
			}
			conf := BrokerConf(br, 0)
			if c.on != strings.Contains(conf, "metricsExporterType=PROM\n") {
				t.Errorf("broker.conf:\n%s", conf)
			}
		})
	}
}

func TestNameServerMetricsPort(t *testing.T) {
	objs := build(t, (&NameServerBuilder{Instance: nameServer(), Scheme: scheme(t)}).Builders())
	var sts *appsv1.StatefulSet
	var headless *corev1.Service
	for k, o := range objs {
		switch {
		case strings.HasPrefix(k, "StatefulSet/"):
			sts = o.(*appsv1.StatefulSet)
		case strings.HasPrefix(k, "Service/") && strings.HasSuffix(k, "-headless"):
			headless = o.(*corev1.Service)
		}
	}
	if p, ok := containerPort(sts.Spec.Template.Spec.Containers[0], MetricsPortName); !ok || p != DefaultMetricsPort {
		t.Errorf("container metrics port %d %v", p, ok)
	}
	if p, ok := servicePort(headless, MetricsPortName); !ok || p != DefaultMetricsPort {
		t.Errorf("headless service metrics port %d %v", p, ok)
	}
	if conf := NameServerConf(nameServer()); !strings.Contains(conf, "metricsExporterType=PROM\n") || !strings.Contains(conf, "metricsPromExporterPort=5557\n") {
		t.Errorf("namesrv.conf:\n%s", conf)
	}
}
