package resource

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/version"
)

// restrictedViolations evaluates a pod template against Pod Security "restricted" with
// the admission plugin's own checks.
func restrictedViolations(t *testing.T, tpl corev1.PodTemplateSpec) []string {
	t.Helper()
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range ev.EvaluatePod(psapi.LevelVersion{Level: psapi.LevelRestricted, Version: psapi.LatestVersion()},
		&tpl.ObjectMeta, &tpl.Spec) {
		if !r.Allowed {
			out = append(out, r.ForbiddenReason+": "+r.ForbiddenDetail)
		}
	}
	return out
}

func templates(t *testing.T, ns *v1alpha1.NameServer, br *v1alpha1.Broker) map[string]corev1.PodTemplateSpec {
	out := map[string]corev1.PodTemplateSpec{}
	out["nameserver"] = build(t, (&NameServerBuilder{Instance: ns, Scheme: scheme(t)}).Builders())["StatefulSet/ns"].(*appsv1.StatefulSet).Spec.Template
	out["broker"] = buildSTS(t, br, "StatefulSet/rmq-broker-a").Spec.Template
	return out
}

// TestPodsPassRestricted: namespaces that enforce Pod Security "restricted" admit the
// name-server and broker pods as the operator makes them.
func TestPodsPassRestricted(t *testing.T) {
	for kind, tpl := range templates(t, nameServer(), broker()) {
		if v := restrictedViolations(t, tpl); len(v) > 0 {
			t.Errorf("%s pods violate restricted: %v", kind, v)
		}
		if tpl.Spec.SecurityContext.FSGroup == nil || *tpl.Spec.SecurityContext.FSGroup != nonrootID {
			t.Errorf("%s: fsGroup = %v, want %d (volumes writable by the image's user)", kind, tpl.Spec.SecurityContext.FSGroup, nonrootID)
		}
	}
}

// TestUserSecurityContextMerges: spec.pod.securityContext overrides the defaults field by
// field. Replacing the whole default once dropped fsGroup, and the brokers crash-looped on
// a store they could not write.
func TestUserSecurityContextMerges(t *testing.T) {
	ns, br := nameServer(), broker()
	user := &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), SupplementalGroups: []int64{4}}
	ns.Spec.Pod.SecurityContext, br.Spec.Pod.SecurityContext = user, user.DeepCopy()
	for kind, tpl := range templates(t, ns, br) {
		sc := tpl.Spec.SecurityContext
		if sc.RunAsUser == nil || *sc.RunAsUser != 1000 || len(sc.SupplementalGroups) != 1 {
			t.Errorf("%s: user fields lost: %+v", kind, sc)
		}
		if sc.FSGroup == nil || *sc.FSGroup != nonrootID || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
			sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: defaults lost: %+v", kind, sc)
		}
		if v := restrictedViolations(t, tpl); len(v) > 0 {
			t.Errorf("%s pods violate restricted: %v", kind, v)
		}
	}
	// A field the user sets wins, even against a default.
	ns.Spec.Pod.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}
	if got := templates(t, ns, br)["nameserver"].Spec.SecurityContext.FSGroup; *got != 2000 {
		t.Errorf("fsGroup = %d, want the user's 2000", *got)
	}
}

// TestProbesMeanReady: readiness asks the process (HTTP /readyz: store recovered and
// registered, a slave connected to its master), not a TCP connect that succeeds a second
// after start; a startup probe covers store recovery before liveness applies.
func TestProbesMeanReady(t *testing.T) {
	for kind, tpl := range templates(t, nameServer(), broker()) {
		c := tpl.Spec.Containers[0]
		for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
			if p == nil || p.HTTPGet == nil || p.HTTPGet.Port.StrVal != healthPortName {
				t.Fatalf("%s %s probe = %+v, want HTTP on the %s port", kind, name, p, healthPortName)
			}
		}
		if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.StartupProbe.HTTPGet.Path != "/startupz" || c.LivenessProbe.HTTPGet.Path != "/livez" {
			t.Errorf("%s probe paths: %s %s %s", kind, c.StartupProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Path)
		}
		found := false
		for _, p := range c.Ports {
			found = found || (p.Name == healthPortName && p.ContainerPort == HealthPort)
		}
		if !found {
			t.Errorf("%s: no container port %s/%d", kind, healthPortName, HealthPort)
		}
		if !containsArg(c.Command, "-http") {
			t.Errorf("%s command %v lacks -http", kind, c.Command)
		}
	}
	tpl := templates(t, nameServer(), broker())["broker"]
	if s := tpl.Spec.Containers[0].StartupProbe; s.PeriodSeconds*s.FailureThreshold < 600 {
		t.Errorf("broker startup allows %d s: too short for a store recovery", s.PeriodSeconds*s.FailureThreshold)
	}
}

func TestNameServerRollWaitsARegistrationPeriod(t *testing.T) {
	sts := build(t, (&NameServerBuilder{Instance: nameServer(), Scheme: scheme(t)}).Builders())["StatefulSet/ns"].(*appsv1.StatefulSet)
	if sts.Spec.MinReadySeconds < 30 {
		t.Errorf("minReadySeconds = %d: a roll could replace every name server inside one 30 s registration period", sts.Spec.MinReadySeconds)
	}
}

func TestDefaultImageIsTheOperatorsVersion(t *testing.T) {
	ns, br := nameServer(), broker()
	ns.Spec.Image, br.Spec.Image = "", ""
	for kind, tpl := range templates(t, ns, br) {
		if got := tpl.Spec.Containers[0].Image; got != version.DefaultImage {
			t.Errorf("%s image = %q, want %s", kind, got, version.DefaultImage)
		}
	}
}

func containsArg(args []string, want string) bool {
	for _, a := range args {
		if a == want {
			return true
		}
	}
	return false
}
