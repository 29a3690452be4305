// Package charts_test renders the Helm chart client-side with Helm's own engine (no
// cluster, no helm binary) and checks the objects it produces.
package charts_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"sigs.k8s.io/yaml"
)

// render renders the chart with overrides and returns the documents by "Kind/name".
func render(t *testing.T, overrides map[string]any) map[string]map[string]any {
	t.Helper()
	return renderWith(t, overrides)
}

// renderWith renders as render does, on a cluster that also serves apiVersions
// ("monitoring.coreos.com/v1/ServiceMonitor").
func renderWith(t *testing.T, overrides map[string]any, apiVersions ...string) map[string]map[string]any {
	t.Helper()
	chrt, err := loader.Load("rocketmq-operator")
	if err != nil {
		t.Fatal(err)
	}
	caps := common.DefaultCapabilities.Copy()
	caps.APIVersions = append(append(common.VersionSet{}, caps.APIVersions...), apiVersions...)
	vals, err := chartutil.ToRenderValues(chrt, overrides,
		common.ReleaseOptions{Name: "rmq", Namespace: "ops", IsInstall: true}, caps)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(chrt, vals)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for name, text := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		for _, doc := range strings.Split(text, "\n---\n") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			obj := map[string]any{}
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
			if len(obj) == 0 {
				continue
			}
			meta := obj["metadata"].(map[string]any)
			out[obj["kind"].(string)+"/"+meta["name"].(string)] = obj
		}
	}
	return out
}

func TestChartRendersDefaults(t *testing.T) {
	objs := render(t, nil)
	for _, want := range []string{"ServiceAccount/rmq-rocketmq-operator", "ClusterRole/rmq-rocketmq-operator",
		"ClusterRoleBinding/rmq-rocketmq-operator", "Role/rmq-rocketmq-operator-leader-election",
		"RoleBinding/rmq-rocketmq-operator-leader-election", "Deployment/rmq-rocketmq-operator"} {
		if _, ok := objs[want]; !ok {
			t.Errorf("missing %s; rendered %d objects", want, len(objs))
		}
	}
	args := containerArgs(t, objs["Deployment/rmq-rocketmq-operator"])
	for _, want := range []string{"--leader-elect=true", "--watch-namespaces=", "--metrics-bind-address=:8443", "--metrics-secure=true"} {
		if !contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
}

// TestChartPassesPodNamespace: the manager learns its namespace, which the NetworkPolicies
// admit, from POD_NAMESPACE.
func TestChartPassesPodNamespace(t *testing.T) {
	dep := render(t, nil)["Deployment/rmq-rocketmq-operator"]
	if dep == nil {
		t.Fatal("no Deployment rendered")
	}
	spec := dep["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	c := spec["containers"].([]any)[0].(map[string]any)
	want := map[string]any{"name": "POD_NAMESPACE", "valueFrom": map[string]any{
		"fieldRef": map[string]any{"fieldPath": "metadata.namespace"}}}
	env, _ := c["env"].([]any)
	for _, e := range env {
		if reflect.DeepEqual(e, want) {
			return
		}
	}
	t.Errorf("env %v lacks %v", env, want)
}

func TestChartWatchNamespacesAndNoLeaderElection(t *testing.T) {
	objs := render(t, map[string]any{"watchNamespaces": []any{"a", "b"}, "leaderElection": false})
	args := containerArgs(t, objs["Deployment/rmq-rocketmq-operator"])
	if !contains(args, "--watch-namespaces=a,b") || !contains(args, "--leader-elect=false") {
		t.Errorf("args = %v", args)
	}
	if _, ok := objs["Role/rmq-rocketmq-operator-leader-election"]; ok {
		t.Error("no leader election, no lease Role")
	}
}

// TestChartRulesMatchGenerated: the ClusterRole carries the rules controller-gen wrote.
func TestChartRulesMatchGenerated(t *testing.T) {
	data, err := os.ReadFile("../config/rbac/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	generated := map[string]any{}
	if err := yaml.Unmarshal(data, &generated); err != nil {
		t.Fatal(err)
	}
	got := render(t, nil)["ClusterRole/rmq-rocketmq-operator"]["rules"]
	if !reflect.DeepEqual(got, generated["rules"]) {
		t.Errorf("chart rules differ from config/rbac/role.yaml:\n%v\n%v", got, generated["rules"])
	}
}

func TestChartCarriesCRDs(t *testing.T) {
	chrt, err := loader.Load("rocketmq-operator")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(chrt.CRDObjects()); n != 5 {
		t.Errorf("chart has %d CRDs, want 5", n)
	}
}

func containerArgs(t *testing.T, dep map[string]any) []string {
	t.Helper()
	if dep == nil {
		t.Fatal("no Deployment rendered")
	}
	spec := dep["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	c := spec["containers"].([]any)[0].(map[string]any)
	var out []string
	for _, a := range c["args"].([]any) {
		out = append(out, a.(string))
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
