package resource

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// NameServerComponent is the component label value of name-server objects.
const NameServerComponent = "nameserver"

// Paths inside a name server pod.
const (
	nameServerConfDir  = "/etc/rocketmq"
	nameServerConfFile = "namesrv.conf"
	nameServerKVDir    = "/home/rocketmq/namesrv"
)

// NameServerBuilder builds the children of one NameServer; the NetworkPolicy of
// spec.networkPolicy is built apart from Builders.
type NameServerBuilder struct {
	Instance *v1alpha1.NameServer
	Scheme   *runtime.Scheme
	// OperatorNamespace is admitted by the NetworkPolicy; empty admits no namespace.
	OperatorNamespace string
	// Brokers names the Brokers whose nameServerRef is this NameServer: the NetworkPolicy
	// admits their pods.
	Brokers []string
}

// Builders lists the children in apply order: the config first so the pods find it, the
// services before the StatefulSet so the pods' DNS names exist when they start.
func (b *NameServerBuilder) Builders() []Builder {
	return []Builder{
		&nameServerConfigMap{b},
		&nameServerHeadlessService{b},
		&nameServerService{b},
		&nameServerStatefulSet{b},
		&nameServerPDB{b},
	}
}

// NameServerHeadlessServiceName gives each pod a stable DNS name <pod>.<headless>.<ns>.svc.
func NameServerHeadlessServiceName(ns *v1alpha1.NameServer) string { return ns.Name + "-headless" }

// NameServerStatefulSetName is the ensemble's StatefulSet: the NameServer's own name.
func NameServerStatefulSetName(ns *v1alpha1.NameServer) string { return ns.Name }

// NameServerPodName is the StatefulSet's pod of ordinal i.
func NameServerPodName(ns *v1alpha1.NameServer, i int32) string {
	return fmt.Sprintf("%s-%d", NameServerStatefulSetName(ns), i)
}

// NameServerConfigMapName holds namesrv.conf.
func NameServerConfigMapName(ns *v1alpha1.NameServer) string { return ns.Name + "-config" }

// NameServerPeersName is the headless Service's DNS name and the listen port: it resolves to
// every name-server pod's IP, which is what the pods' address server answers.
func NameServerPeersName(ns *v1alpha1.NameServer) string {
	return fmt.Sprintf("%s.%s.svc:%d", NameServerHeadlessServiceName(ns), ns.Namespace, ns.Spec.Ports.ListenPort)
}

// NameServerAddressURL is the ensemble's address server behind its Service, in the form
// the Go client's primitive.NewHttpResolver takes; the Java client reads the same with
// -Drocketmq.namesrv.domain=<name>.<namespace>.svc (port 8080 is its default).
func NameServerAddressURL(ns *v1alpha1.NameServer) string {
	return fmt.Sprintf("http://%s.%s.svc:%d%s", ns.Name, ns.Namespace, HealthPort, NameServerAddressPath)
}

// NameServerAddress is the namesrvAddr list the brokers get: every pod's stable DNS name,
// ';'-separated. Our broker resolves a name at each connection, so the list stays right
// when pods move; clients, which want IPs, get status.address instead.
func NameServerAddress(ns *v1alpha1.NameServer) string {
	addrs := make([]string, 0, ns.Spec.Replicas)
	for i := range ns.Spec.Replicas {
		addrs = append(addrs, fmt.Sprintf("%s.%s.%s.svc:%d", NameServerPodName(ns, i),
			NameServerHeadlessServiceName(ns), ns.Namespace, ns.Spec.Ports.ListenPort))
	}
	return strings.Join(addrs, ";")
}

// NameServerConf renders namesrv.conf with RocketMQ's key names, metrics on (metrics.go);
// spec.tls adds the tls.server.* keys of the mounted Secret's files (sorted, after the
// others).
func NameServerConf(ns *v1alpha1.NameServer) string {
	m := metricsConf()
	conf := fmt.Sprintf("listenPort=%d\nkvConfigPath=%s/kvConfig.json\n", ns.Spec.Ports.ListenPort, nameServerKVDir) +
		fmt.Sprintf("metricsExporterType=%s\nmetricsPromExporterHost=%s\nmetricsPromExporterPort=%s\n",
			m["metricsExporterType"], m["metricsPromExporterHost"], m["metricsPromExporterPort"])
	kv := tlsConf(ns.Spec.TLS, false)
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		conf += k + "=" + kv[k] + "\n"
	}
	return conf
}

func (b *NameServerBuilder) labels() map[string]string {
	return objectLabels(NameServerComponent, b.Instance.Name)
}
