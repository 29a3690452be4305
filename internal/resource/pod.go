package resource

import (
	"encoding/json"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Every name-server and broker container serves HTTP on HealthPort: /livez (the process
// answers), /startupz (the store is recovered and the remoting port listens), /readyz
// (what a client needs: see the binaries' -http flag); a name server also serves its
// ensemble's address list at NameServerAddressPath there.
const (
	HealthPort     = 8080
	healthPortName = "http"

	// NameServerAddressPath is the name-server address server's path, as RocketMQ's
	// clients ask for it: the Java client reads http://<rocketmq.namesrv.domain>:8080
	// plus this path, the Go client's primitive.NewHttpResolver takes the whole URL.
	NameServerAddressPath = "/rocketmq/nsaddr"
)

// nonrootID is the image's user and group (distroless nonroot).
const nonrootID int64 = 65532

// podSecurityContext is the default pod security context, which passes Pod Security
// "restricted", overlaid field by field with the user's spec.pod.securityContext: a user
// who sets only runAsUser keeps fsGroup, without which the store volume is not writable.
func podSecurityContext(user *corev1.PodSecurityContext) *corev1.PodSecurityContext {
	def := &corev1.PodSecurityContext{
		RunAsNonRoot: ptr.To(true),
		// The volumes' group, so the non-root process can write the store and KV file.
		FSGroup:        ptr.To(nonrootID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if user == nil {
		return def
	}
	return overlay(def, user)
}

// containerSecurityContext is what Pod Security "restricted" asks of every container,
// plus a read-only root filesystem (the binaries write only to their volumes).
func containerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// overlay returns def with every field user sets replaced by the user's. Both are plain
// API structs, so their JSON forms merge at the top level without knowing the fields.
func overlay[T any](def, user *T) *T {
	var a, b map[string]json.RawMessage
	da, _ := json.Marshal(def)
	db, _ := json.Marshal(user)
	if json.Unmarshal(da, &a) != nil || json.Unmarshal(db, &b) != nil {
		return user
	}
	maps.Copy(a, b)
	merged, _ := json.Marshal(a)
	out := new(T)
	if json.Unmarshal(merged, out) != nil {
		return user
	}
	return out
}

// healthProbes are the startup, liveness and readiness probes on HealthPort. The startup
// probe allows startupSeconds for recovery (a broker's store after a crash) before
// liveness applies; readiness is checked every 5 s (readinessProbe tightens it).
func healthProbes(startupSeconds int32) (startup, liveness, readiness *corev1.Probe) {
	get := func(path string) corev1.ProbeHandler {
		return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromString(healthPortName), Scheme: corev1.URISchemeHTTP}}
	}
	const period = 5
	startup = &corev1.Probe{ProbeHandler: get("/startupz"), PeriodSeconds: period, TimeoutSeconds: 3,
		FailureThreshold: max(1, startupSeconds/period), SuccessThreshold: 1}
	liveness = &corev1.Probe{ProbeHandler: get("/livez"), PeriodSeconds: 10, TimeoutSeconds: 5,
		FailureThreshold: 3, SuccessThreshold: 1}
	readiness = &corev1.Probe{ProbeHandler: get("/readyz"), PeriodSeconds: period, TimeoutSeconds: 3,
		FailureThreshold: 2, SuccessThreshold: 1}
	return startup, liveness, readiness
}

func healthContainerPort() corev1.ContainerPort {
	return corev1.ContainerPort{Name: healthPortName, ContainerPort: HealthPort, Protocol: corev1.ProtocolTCP}
}
