package resource

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

const kvVolume = "kv"

type nameServerStatefulSet struct{ *NameServerBuilder }

func (b *nameServerStatefulSet) Build() (client.Object, error) {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{
		Name: NameServerStatefulSetName(b.Instance), Namespace: b.Instance.Namespace}}, nil
}

func (b *nameServerStatefulSet) Update(obj client.Object) error {
	sts := obj.(*appsv1.StatefulSet)
	ns := b.Instance
	sts.Labels = merge(sts.Labels, b.labels())
	sts.Spec.Replicas = ptr.To(ns.Spec.Replicas)
	// Selector, service name and claim templates are immutable: set them on create only.
	if sts.CreationTimestamp.IsZero() {
		sts.Spec.Selector = &metav1.LabelSelector{
			MatchLabels: selectorLabels(NameServerComponent, ns.Name)}
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
	tpl.Labels = merge(ns.Spec.Pod.Labels, objectLabels(NameServerComponent, ns.Name))
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
	startup, liveness, readiness := healthProbes(nameServerStartupSeconds)
	tpl.Spec.Containers = []corev1.Container{{
		Name:            "namesrv",
		Image:           image(ns.Spec.ContainerSpec),
		ImagePullPolicy: pullPolicy(ns.Spec.ImagePullPolicy),
		Command: []string{"/namesrv", "-c", nameServerConfDir + "/" + nameServerConfFile,
			"-http", fmt.Sprintf(":%d", HealthPort), "-peers", NameServerPeersName(ns)},
		Ports: []corev1.ContainerPort{{Name: "remoting",
			ContainerPort: ns.Spec.Ports.ListenPort, Protocol: corev1.ProtocolTCP},
			metricsContainerPort(DefaultMetricsPort), healthContainerPort()},
		Resources:       ns.Spec.Resources,
		VolumeMounts:    mounts,
		StartupProbe:    startup,
		LivenessProbe:   liveness,
		ReadinessProbe:  readiness,
		SecurityContext: containerSecurityContext(),
	}}
	// A name server that restarts knows no broker until each registers again. Brokers do
	// so within seconds of losing the connection, but brokers that only re-register every
	// registration period (30 s; a Java broker) would find every name server of a roll
	// empty at once: each replaced pod must stay Ready for one period before the next goes.
	sts.Spec.MinReadySeconds = nameServerMinReadySeconds
	return controllerutil.SetControllerReference(ns, sts, b.Scheme)
}

func configVolume(name, configMap string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}
}

const (
	// nameServerStartupSeconds: a name server only loads its KV file before it listens.
	nameServerStartupSeconds = 120
	// nameServerMinReadySeconds is one broker registration period (registerNameServerPeriod).
	nameServerMinReadySeconds = 30
)
