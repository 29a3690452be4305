package resource

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Metrics: brokers and name servers serve Prometheus metrics on their own port
// (docs/metrics.md), on by default. The keys are defaults in broker.conf and
// namesrv.conf that a Broker's spec.config may override: metricsExporterType=DISABLE
// turns them off, metricsPromExporterPort moves the port. The pods name the port
// "metrics", the headless Services carry it (a ServiceMonitor selects them by the
// component label and scrapes that port; the chart has one), and a NetworkPolicy admits
// it from every namespace of the cluster, where Prometheus may run.
const (
	DefaultMetricsPort = 5557 // RocketMQ 5's metricsPromExporterPort
	MetricsPortName    = "metrics"
)

// metricsConf are the metrics keys' defaults: on, on every interface (so that
// kubectl port-forward reaches it too, not only the pod IP), on DefaultMetricsPort.
func metricsConf() map[string]string {
	return map[string]string{
		"metricsExporterType":     "PROM",
		"metricsPromExporterHost": "0.0.0.0",
		"metricsPromExporterPort": strconv.Itoa(DefaultMetricsPort),
	}
}

// metricsPort is the metrics port conf sets, and whether metrics are on.
func metricsPort(conf map[string]string) (int32, bool) {
	if t, ok := conf["metricsExporterType"]; ok && t != "PROM" {
		return 0, false
	}
	p, err := strconv.ParseInt(conf["metricsPromExporterPort"], 10, 32)
	if err != nil || p <= 0 || p > 65535 {
		return DefaultMetricsPort, true
	}
	return int32(p), true
}

func metricsContainerPort(port int32) corev1.ContainerPort {
	return corev1.ContainerPort{Name: MetricsPortName, ContainerPort: port, Protocol: corev1.ProtocolTCP}
}

// metricsIngress admits the metrics port from every pod of the cluster.
func metricsIngress(port int32) networkingv1.NetworkPolicyIngressRule {
	return networkingv1.NetworkPolicyIngressRule{Ports: tcpPorts(port),
		From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}}
}
