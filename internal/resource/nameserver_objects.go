package resource

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

type nameServerConfigMap struct{ *NameServerBuilder }

func (b *nameServerConfigMap) Build() (client.Object, error) {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: NameServerConfigMapName(b.Instance), Namespace: b.Instance.Namespace}}, nil
}

func (b *nameServerConfigMap) Update(obj client.Object) error {
	cm := obj.(*corev1.ConfigMap)
	cm.Labels = merge(cm.Labels, b.labels())
	cm.Data = map[string]string{nameServerConfFile: NameServerConf(b.Instance)}
	return controllerutil.SetControllerReference(b.Instance, cm, b.Scheme)
}

type nameServerHeadlessService struct{ *NameServerBuilder }

func (b *nameServerHeadlessService) Build() (client.Object, error) {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{
		Name: NameServerHeadlessServiceName(b.Instance), Namespace: b.Instance.Namespace}}, nil
}

func (b *nameServerHeadlessService) Update(obj client.Object) error {
	svc := obj.(*corev1.Service)
	svc.Labels = merge(svc.Labels, b.labels())
	svc.Spec.ClusterIP = corev1.ClusterIPNone
	svc.Spec.Selector = selectorLabels(NameServerComponent, b.Instance.Name)
	// Brokers must resolve a starting name server before it is ready, or they cannot
	// register during a cold start of the whole cluster.
	svc.Spec.PublishNotReadyAddresses = true
	svc.Spec.Ports = append(nameServerPorts(b.Instance.Spec.Ports.ListenPort), corev1.ServicePort{
		Name: MetricsPortName, Port: DefaultMetricsPort, TargetPort: intstr.FromString(MetricsPortName), Protocol: corev1.ProtocolTCP})
	return controllerutil.SetControllerReference(b.Instance, svc, b.Scheme)
}

// nameServerService is the ensemble's client Service. With expose NodePort it is of type
// NodePort: the name-server port on firstPort and, since a NodePort Service opens every
// port it carries, the address server on firstPort+1 rather than a random port that could
// be a Broker's. With LoadBalancer it is of type LoadBalancer (exposeService): clients
// outside use its ingress IP and listenPort.
type nameServerService struct{ *NameServerBuilder }

func (b *nameServerService) Build() (client.Object, error) {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{
		Name: b.Instance.Name, Namespace: b.Instance.Namespace}}, nil
}

func (b *nameServerService) Update(obj client.Object) error {
	svc := obj.(*corev1.Service)
	svc.Labels = merge(svc.Labels, b.labels())
	svc.Spec.Selector = selectorLabels(NameServerComponent, b.Instance.Name)
	// The address server (NameServerAddressURL) answers on the Service too.
	ports := append(nameServerPorts(b.Instance.Spec.Ports.ListenPort), corev1.ServicePort{
		Name: healthPortName, Port: HealthPort, TargetPort: intstr.FromString(healthPortName),
		Protocol: corev1.ProtocolTCP})
	if np := b.Instance.Spec.Expose.NodePorts(); np != nil {
		for i := range ports {
			ports[i].NodePort = np.FirstPort + int32(i)
		}
	}
	lb, _ := b.Instance.Spec.Expose.LoadBalanced()
	exposeService(svc, b.Instance.Spec.Expose.ServiceType(), lb, ports)
	return controllerutil.SetControllerReference(b.Instance, svc, b.Scheme)
}

func nameServerPorts(port int32) []corev1.ServicePort {
	return []corev1.ServicePort{{
		Name: "remoting", Port: port, TargetPort: intstr.FromString("remoting"),
		Protocol: corev1.ProtocolTCP,
	}}
}

type nameServerPDB struct{ *NameServerBuilder }

func (b *nameServerPDB) Build() (client.Object, error) {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{
		Name: b.Instance.Name, Namespace: b.Instance.Namespace}}, nil
}

func (b *nameServerPDB) Update(obj client.Object) error {
	pdb := obj.(*policyv1.PodDisruptionBudget)
	pdb.Labels = merge(pdb.Labels, b.labels())
	one := intstr.FromInt32(1)
	pdb.Spec.MaxUnavailable = &one
	pdb.Spec.Selector = &metav1.LabelSelector{
		MatchLabels: selectorLabels(NameServerComponent, b.Instance.Name)}
	return controllerutil.SetControllerReference(b.Instance, pdb, b.Scheme)
}
