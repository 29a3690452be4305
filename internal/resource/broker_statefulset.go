package resource

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// brokerStartupSeconds bounds a broker's start: store recovery after a crash checks every
// record of the last segments and rebuilds the consume queues, minutes on a large store.
// Liveness applies only after it.
const brokerStartupSeconds = 1800

// brokerShutdownDelay is how long a stopping master keeps serving, not Ready, before it
// unregisters and stops: a readiness probe (1 s), the EndpointSlice update and
// kube-proxy's next sync (at most 1 s apart) fit in it.
const brokerShutdownDelay = 4 * time.Second

type brokerStatefulSet struct{ brokerGroup }

// Held while a pod Service of the group waits for its load balancer: no pod of the group
// is created or replaced before it can announce the load balancer's IP.
func (b *brokerStatefulSet) Held() bool { return len(b.pendingLoadBalancers()) > 0 }

func (b *brokerStatefulSet) Build() (client.Object, error) {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{
		Name: b.name(), Namespace: b.Instance.Namespace}}, nil
}

// Update shapes one group's StatefulSet. The pod ordinal is the brokerId, and a
// RollingUpdate StatefulSet replaces pods from the highest ordinal down, one at a time,
// each only after the previous one is Ready (OrderedReady also starts them 0 first, so
// the master is up before its slaves). Only ordinals >= the partition are replaced: the
// operator holds a group at partition=replicas until its turn, lowers it to 1 for the
// slaves and to 0 for the master once it stepped aside (BrokerBuilder.Partitions).
func (b *brokerStatefulSet) Update(obj client.Object) error {
	sts := obj.(*appsv1.StatefulSet)
	br := b.Instance
	sts.Labels = merge(sts.Labels, b.labels())
	sts.Spec.Replicas = ptr.To(br.Spec.ReplicasPerGroup)
	if sts.CreationTimestamp.IsZero() {
		sts.Spec.Selector = &metav1.LabelSelector{MatchLabels: b.selector()}
		sts.Spec.ServiceName = BrokerGroupServiceName(b.Instance, b.index)
		sts.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
		sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claimTemplate(
			brokerStoreClaim, b.labels(), br.Spec.Storage.Size, "20Gi", br.Spec.Storage.StorageClassName)}
	}
	sts.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{
		Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{
			Partition: ptr.To(b.Partitions[b.index])},
	}
	sts.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenScaled:  retention(br.Spec.Storage.WhenScaled),
		WhenDeleted: retention(br.Spec.Storage.WhenDeleted),
	}

	tpl := &sts.Spec.Template
	tpl.Labels = merge(br.Spec.Pod.Labels, b.labels())
	tpl.Annotations = merge(br.Spec.Pod.Annotations, map[string]string{
		ConfigHashAnnotation:      BrokerConfigHash(br, b.index),
		BrokerAddressesAnnotation: b.podAddresses(),
	})
	applyPodOverrides(&tpl.Spec, br.Spec.ContainerSpec)
	tpl.Spec.Volumes = []corev1.Volume{
		configVolume("config", BrokerGroupConfigMapName(b.Instance, b.index)),
	}
	mounts := []corev1.VolumeMount{
		{Name: "config", MountPath: brokerConfDir, ReadOnly: true},
		{Name: brokerStoreClaim, MountPath: brokerStoreDir},
	}
	if acl := br.Spec.ACL; acl != nil {
		tpl.Spec.Volumes = append(tpl.Spec.Volumes, aclVolume(br, acl))
		mounts = append(mounts, corev1.VolumeMount{Name: brokerACLVolume, MountPath: BrokerACLDir, ReadOnly: true})
	}
	if br.Spec.TLS != nil {
		v, m := tlsVolumeFor(br.Spec.TLS)
		tpl.Spec.Volumes, mounts = append(tpl.Spec.Volumes, v), append(mounts, m)
	}
	// The kubelet expands $(VAR) from the container's env: each pod reads its own file.
	command := []string{"/broker", "-c", brokerConfDir + "/$(POD_NAME).conf", "-n", "$(NAMESRV_ADDR)",
		"-http", fmt.Sprintf(":%d", HealthPort), "-shutdown-delay", brokerShutdownDelay.String()}
	env := []corev1.EnvVar{
		fieldEnv("POD_NAME", "metadata.name"),
		{Name: "NAMESRV_ADDR", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: BrokerNamesrvConfigMapName(br)},
				Key:                  NamesrvAddrKey}}},
	}
	if ip1, ok := brokerIP1Env(br); ok {
		command, env = append(command, "-brokerIP1", "$(BROKER_IP1)"), append(env, ip1)
	}
	startup, liveness, readiness := healthProbes(brokerStartupSeconds)
	// A stopping master must turn not Ready within its shutdown delay, so that kube-proxy
	// stops sending it new connections before it exits (brokerPodService).
	readiness.PeriodSeconds, readiness.FailureThreshold = 1, 1
	tpl.Spec.Containers = []corev1.Container{{
		Name:            "broker",
		Image:           image(br.Spec.ContainerSpec),
		ImagePullPolicy: pullPolicy(br.Spec.ImagePullPolicy),
		Command:         command,
		Env:             env,
		Ports:           append(brokerContainerPorts(br), healthContainerPort()),
		Resources:       br.Spec.Resources,
		VolumeMounts:    mounts,
		StartupProbe:    startup,
		LivenessProbe:   liveness,
		ReadinessProbe:  readiness,
		SecurityContext: containerSecurityContext(),
	}}
	// A broker waits out its shutdown delay, then unregisters and flushes on SIGTERM;
	// give it time.
	tpl.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60)
	return controllerutil.SetControllerReference(br, sts, b.Scheme)
}

// aclVolume projects the one key of the ACL Secret (spec.acl's, or the one the operator
// renders from User resources) that holds plain_acl.yml. Only the
// Secret's name and key are in the pod template, never its content: the kubelet updates
// the mounted file in place and the broker re-reads it, so editing the rules restarts
// nothing. A missing Secret or key keeps the pod from starting rather than let a broker run
// with no rules. The mode is readable by the broker's non-root user even when
// spec.pod.securityContext drops the fsGroup; it is set, not defaulted, so the template does
// not differ from what the API server stores.
func aclVolume(br *v1alpha1.Broker, acl *v1alpha1.BrokerACL) corev1.Volume {
	key := ACLKey(acl)
	return corev1.Volume{Name: brokerACLVolume, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{
			SecretName:  ACLSecretName(br),
			Items:       []corev1.KeyToPath{{Key: key, Path: key}},
			DefaultMode: ptr.To[int32](0o444),
			Optional:    ptr.To(false),
		}}}
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
}

func retention(p v1alpha1.ReclaimPolicy) appsv1.PersistentVolumeClaimRetentionPolicyType {
	if p == v1alpha1.ReclaimDelete {
		return appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}
	return appsv1.RetainPersistentVolumeClaimRetentionPolicyType
}
