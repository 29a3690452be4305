package resource

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

type brokerNamesrvConfigMap struct{ *BrokerBuilder }

func (b *brokerNamesrvConfigMap) Build() (client.Object, error) {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: BrokerNamesrvConfigMapName(b.Instance), Namespace: b.Instance.Namespace}}, nil
}

func (b *brokerNamesrvConfigMap) Update(obj client.Object) error {
	cm := obj.(*corev1.ConfigMap)
	cm.Labels = merge(cm.Labels, objectLabels(BrokerComponent, b.Instance.Name))
	cm.Data = map[string]string{NamesrvAddrKey: b.NameServerAddress}
	return controllerutil.SetControllerReference(b.Instance, cm, b.Scheme)
}

type brokerConfigMap struct{ brokerGroup }

// Held while a pod Service of the group waits for its load balancer: a pod restarted
// meanwhile reads its file, which must not announce another address.
func (b *brokerConfigMap) Held() bool { return len(b.pendingLoadBalancers()) > 0 }

func (b *brokerConfigMap) Build() (client.Object, error) {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: BrokerGroupConfigMapName(b.Instance, b.index), Namespace: b.Instance.Namespace}}, nil
}

func (b *brokerConfigMap) Update(obj client.Object) error {
	cm := obj.(*corev1.ConfigMap)
	cm.Labels = merge(cm.Labels, b.labels())
	cm.Data = map[string]string{}
	for id := range b.Instance.Spec.ReplicasPerGroup {
		pod := BrokerPodName(b.Instance, b.index, id)
		conf := BrokerPodConf(b.Instance, b.index, id)
		if a := b.PodAddresses[pod]; a.ClusterIP != "" {
			conf += BrokerAddressConf(b.Instance, b.index, id, a)
		}
		cm.Data[pod+".conf"] = conf
	}
	return controllerutil.SetControllerReference(b.Instance, cm, b.Scheme)
}

// brokerPodService is one broker pod's own ClusterIP Service, the address the pod
// announces (BrokerBuilder). It selects the pod by the StatefulSet's pod-name label and
// carries the remoting, fast and HA ports, not metrics (scraped through the headless
// Service).
//
// A slave's Service publishes it while it is not Ready (its master gone): consumers keep
// reading from it. A master's does not. When a master stops, its pod turns not Ready
// (the broker's shutdown delay outlasts a readiness probe) and kube-proxy refuses new
// connections to its ClusterIP at once, rather than forwarding them to a pod address
// that is about to vanish: a connection attempt there hangs until the client's dial
// timeout, and the official Go client makes every request wait behind a dial (15 s).
// Its slaves replicate through the group's HA Service instead, which publishes the
// master while it starts. With expose NodePort it is of type NodePort on
// brokerNodePorts, with LoadBalancer of type LoadBalancer (exposeService).
type brokerPodService struct {
	brokerGroup
	id int32
}

func (b *brokerPodService) pod() string { return BrokerPodName(b.Instance, b.index, b.id) }

func (b *brokerPodService) Build() (client.Object, error) {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: b.pod(), Namespace: b.Instance.Namespace}}, nil
}

func (b *brokerPodService) Update(obj client.Object) error {
	svc := obj.(*corev1.Service)
	svc.Labels = merge(svc.Labels, b.labels())
	svc.Labels[BrokerIDLabel] = fmt.Sprint(b.id)
	fast, ha, remoting, _ := brokerNodePorts(b.Instance, b.index, b.id)
	nodePorts := map[string]int32{"fast": fast, "ha": ha, "remoting": remoting} // all 0 unless NodePort
	sel := b.selector()
	sel[podNameLabel] = b.pod()
	svc.Spec.Selector = sel
	svc.Spec.PublishNotReadyAddresses = BrokerID(b.Instance, b.index, b.id) != 0
	var ports []corev1.ServicePort
	for _, p := range brokerContainerPorts(b.Instance) {
		if p.Name == MetricsPortName {
			continue
		}
		ports = append(ports, corev1.ServicePort{Name: p.Name, Port: p.ContainerPort,
			TargetPort: intstr.FromString(p.Name), Protocol: corev1.ProtocolTCP, NodePort: nodePorts[p.Name]})
	}
	lb, _ := b.Instance.Spec.Expose.LoadBalanced()
	exposeService(svc, b.Instance.Spec.Expose.ServiceType(), lb, ports)
	return controllerutil.SetControllerReference(b.Instance, svc, b.Scheme)
}

// Applied records the ClusterIP the API server gave the Service and, with expose
// LoadBalancer, the ingress the cloud's load-balancer controller wrote to its status.
func (b *brokerPodService) Applied(obj client.Object) {
	if b.PodAddresses == nil {
		b.PodAddresses = map[string]PodAddress{}
	}
	svc := obj.(*corev1.Service)
	var a PodAddress
	if ip := svc.Spec.ClusterIP; ip != corev1.ClusterIPNone {
		a.ClusterIP = ip
	}
	a.LoadBalancerIP, a.LoadBalancerHostname = loadBalancerIngress(svc)
	b.PodAddresses[b.pod()] = a
}

// brokerHAService is the group's master for its slaves, published while the master is
// not Ready: a starting master takes its slaves' connections before it is registered, so
// replication resumes as soon as the master listens. It carries the HA port and the
// client ports: a slave copies topics, offsets and groups from the remoting port one
// below HA (broker.metadataAddrOfHA), over its fast channel (listenPort-2), as 4.9.7's
// slave synchronizer does.
type brokerHAService struct{ brokerGroup }

func (b *brokerHAService) Build() (client.Object, error) {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{
		Name: BrokerGroupHAServiceName(b.Instance, b.index), Namespace: b.Instance.Namespace}}, nil
}

func (b *brokerHAService) Update(obj client.Object) error {
	svc := obj.(*corev1.Service)
	svc.Labels = merge(svc.Labels, b.labels())
	svc.Spec.Type = corev1.ServiceTypeClusterIP
	sel := b.selector()
	sel[podNameLabel] = BrokerPodName(b.Instance, b.index, BrokerMasterOrdinal(b.Instance, b.index))
	svc.Spec.Selector = sel
	svc.Spec.PublishNotReadyAddresses = true
	svc.Spec.Ports = nil
	for _, p := range brokerContainerPorts(b.Instance) {
		if p.Name != MetricsPortName {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.Name, Port: p.ContainerPort,
				TargetPort: intstr.FromString(p.Name), Protocol: corev1.ProtocolTCP})
		}
	}
	return controllerutil.SetControllerReference(b.Instance, svc, b.Scheme)
}

type brokerHeadlessService struct{ brokerGroup }

func (b *brokerHeadlessService) Build() (client.Object, error) {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{
		Name: BrokerGroupServiceName(b.Instance, b.index), Namespace: b.Instance.Namespace}}, nil
}

func (b *brokerHeadlessService) Update(obj client.Object) error {
	svc := obj.(*corev1.Service)
	svc.Labels = merge(svc.Labels, b.labels())
	svc.Spec.ClusterIP = corev1.ClusterIPNone
	svc.Spec.Selector = b.selector()
	// A slave must reach its master's HA port while the master is still starting.
	svc.Spec.PublishNotReadyAddresses = true
	svc.Spec.Ports = nil
	for _, p := range brokerContainerPorts(b.Instance) {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.Name, Port: p.ContainerPort,
			TargetPort: intstr.FromString(p.Name), Protocol: corev1.ProtocolTCP})
	}
	return controllerutil.SetControllerReference(b.Instance, svc, b.Scheme)
}

type brokerPDB struct{ brokerGroup }

func (b *brokerPDB) Build() (client.Object, error) {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{
		Name: b.name(), Namespace: b.Instance.Namespace}}, nil
}

func (b *brokerPDB) Update(obj client.Object) error {
	pdb := obj.(*policyv1.PodDisruptionBudget)
	pdb.Labels = merge(pdb.Labels, b.labels())
	one := intstr.FromInt32(1)
	pdb.Spec.MaxUnavailable = &one
	pdb.Spec.Selector = &metav1.LabelSelector{MatchLabels: b.selector()}
	return controllerutil.SetControllerReference(b.Instance, pdb, b.Scheme)
}

// brokerContainerPorts: the remoting port, the fast channel (listenPort-2) some Java clients
// use, the HA port (listenPort+1) slaves replicate from, and the metrics port when on.
// brokerHAPortName names the HA port (listenPort+1) in the pods and Services.
const brokerHAPortName = "ha"

func brokerContainerPorts(br *v1alpha1.Broker) []corev1.ContainerPort {
	listen := br.Spec.ListenPort
	ports := []corev1.ContainerPort{
		{Name: "remoting", ContainerPort: listen, Protocol: corev1.ProtocolTCP},
		{Name: "fast", ContainerPort: listen - 2, Protocol: corev1.ProtocolTCP},
		{Name: brokerHAPortName, ContainerPort: listen + 1, Protocol: corev1.ProtocolTCP},
	}
	if port, ok := BrokerMetricsPort(br); ok {
		ports = append(ports, metricsContainerPort(port))
	}
	return ports
}
