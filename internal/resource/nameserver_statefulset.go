package resource

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

const kvVolume = "kv"

type nameServerStatefulSet struct{ *NameServerBuilder }

func (b *nameServerStatefulSet) Build() (client.Object, error) {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{
		Name: b.Instance.Name, Namespace: b.Instance.Namespace}}, nil
}

func (b *nameServerStatefulSet) Update(obj client.Object) error {
	sts := obj.(*appsv1.StatefulSet)
	ns := b.Instance
	sts.Labels = merge(sts.Labels, b.labels())
	sts.Spec.Replicas = ptr.To(ns.Spec.Replicas)
	// Selector, service name and claim templates are immutable: set them on create only.
	if sts.CreationTimestamp.IsZero() {
		sts.Spec.Selector = &metav1.LabelSelector{
			MatchLabels: selectorLabels(nameServerComponent, ns.Name)}
		sts.Spec.ServiceName = NameServerHeadlessServiceName(ns)
		// Name servers share nothing, so they may start together; updates still roll one
		// pod at a time (RollingUpdate, maxUnavailable 1).
		sts.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		if p := ns.Spec.Persistence; p != nil {
			sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{
				claimTemplate(kvVolume, b.labels(), p.Size, "1Gi", p.StorageClassName)}
		}
	}
	sts.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{
		Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{
			Partition: ptr.To[int32](0)},
	}

	tpl := &sts.Spec.Template
	tpl.Labels = merge(ns.Spec.Pod.Labels, objectLabels(nameServerComponent, ns.Name))
	tpl.Annotations = merge(ns.Spec.Pod.Annotations,
		map[string]string{ConfigHashAnnotation: Hash(NameServerConf(ns))})
	applyPodOverrides(&tpl.Spec, ns.Spec.ContainerSpec)
	tpl.Spec.Volumes = []corev1.Volume{configVolume("config", NameServerConfigMapName(ns))}
	if ns.Spec.Persistence == nil {
		tpl.Spec.Volumes = append(tpl.Spec.Volumes, corev1.Volume{Name: kvVolume,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	mounts := []corev1.VolumeMount{
		{Name: "config", MountPath: nameServerConfDir, ReadOnly: true},
		{Name: kvVolume, MountPath: nameServerKVDir},
	}
	if ns.Spec.TLS != nil {
		v, m := tlsVolumeFor(ns.Spec.TLS)
		tpl.Spec.Volumes, mounts = append(tpl.Spec.Volumes, v), append(mounts, m)
	}
	probe := tcpProbe("remoting")
	tpl.Spec.Containers = []corev1.Container{{
		Name:            "namesrv",
		Image:           ns.Spec.Image,
		ImagePullPolicy: pullPolicy(ns.Spec.ImagePullPolicy),
		Command:         []string{"/namesrv", "-c", nameServerConfDir + "/" + nameServerConfFile},
		Ports: []corev1.ContainerPort{{Name: "remoting",
			ContainerPort: ns.Spec.Ports.ListenPort, Protocol: corev1.ProtocolTCP},
			metricsContainerPort(DefaultMetricsPort)},
		Resources:      ns.Spec.Resources,
		VolumeMounts:   mounts,
		ReadinessProbe: probe,
		LivenessProbe:  livenessFrom(probe),
	}}
	return controllerutil.SetControllerReference(ns, sts, b.Scheme)
}

func configVolume(name, configMap string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}
}

func tcpProbe(port string) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{
			Port: intstr.FromString(port)}},
		PeriodSeconds: 10, TimeoutSeconds: 3, FailureThreshold: 3, SuccessThreshold: 1,
	}
}

// livenessFrom gives a slow-starting process (store recovery) more time than readiness.
func livenessFrom(p *corev1.Probe) *corev1.Probe {
	l := p.DeepCopy()
	l.InitialDelaySeconds = 60
	l.FailureThreshold = 6
	return l
}
