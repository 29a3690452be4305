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
	"helm.sh/helm/v4/pkg/strvals"
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

// TestChartValuesSchema: values.schema.json refuses a bad value at install with a message
// naming it (`helm install --set replicaCount=abc` once rendered a Deployment the API
// server refused), and admits the defaults and the README's settings.
func TestChartValuesSchema(t *testing.T) {
	chrt, err := loader.Load("rocketmq-operator")
	if err != nil {
		t.Fatal(err)
	}
	validate := func(set string) error {
		vals := map[string]any{}
		if set != "" {
			if err := strvals.ParseInto(set, vals); err != nil {
				t.Fatal(err)
			}
		}
		_, err := chartutil.ToRenderValuesWithSchemaValidation(chrt, vals,
			common.ReleaseOptions{Name: "rmq", Namespace: "ops", IsInstall: true}, common.DefaultCapabilities, false)
		return err
	}
	for _, ok := range []string{"", "image.repository=openrmq/rocketmq-operator,image.tag=0.1.0", "replicaCount=2,leaderElection=false",
		"watchNamespaces={a,b}", "logLevel=3"} {
		if err := validate(ok); err != nil {
			t.Errorf("--set %q refused: %v", ok, err)
		}
	}
	for set, field := range map[string]string{"replicaCount=abc": "replicaCount", "image.pullPolicy=Sometimes": "pullPolicy",
		"metrics.port=0": "port", "leaderElection=maybe": "leaderElection", "replicaCont=2": "replicaCont"} {
		err := validate(set)
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("--set %s: err = %v, want a schema error naming %s", set, err, field)
		}
	}
}

// grants reports whether rules allow verb on resource of group.
func grants(rules any, group, resource, verb string) bool {
	list, _ := rules.([]any)
	for _, r := range list {
		rule := r.(map[string]any)
		in := func(key, want string) bool {
			vals, _ := rule[key].([]any)
			for _, v := range vals {
				if v == want || v == "*" {
					return true
				}
			}
			return false
		}
		if in("apiGroups", group) && in("resources", resource) && in("verbs", verb) {
			return true
		}
	}
	return false
}

// TestChartGrantsWhatIsUsed: controller-runtime's leader election records core Events in
// the operator's namespace (the Role once allowed events.k8s.io only, and every one was
// refused); OpenShift's owner-reference check needs update on the owners' finalizers
// before the operator may create their children.
func TestChartGrantsWhatIsUsed(t *testing.T) {
	objs := render(t, nil)
	role := objs["Role/rmq-rocketmq-operator-leader-election"]["rules"]
	for _, verb := range []string{"create", "patch"} {
		if !grants(role, "", "events", verb) {
			t.Errorf("the leader-election Role does not allow %s on core events", verb)
		}
	}
	if !grants(role, "coordination.k8s.io", "leases", "update") {
		t.Error("the leader-election Role does not allow updating leases")
	}
	cluster := objs["ClusterRole/rmq-rocketmq-operator"]["rules"]
	for _, r := range []string{"nameservers/finalizers", "brokers/finalizers", "consumergroups/finalizers"} {
		if !grants(cluster, "rocketmq.openrmq.io", r, "update") {
			t.Errorf("the ClusterRole does not allow update on %s", r)
		}
	}
	// kustomize's Role says the same.
	data, err := os.ReadFile("../config/rbac/leader_election_role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kust := map[string]any{}
	if err := yaml.Unmarshal(data, &kust); err != nil {
		t.Fatal(err)
	}
	if !grants(kust["rules"], "", "events", "create") {
		t.Error("config/rbac/leader_election_role.yaml does not allow core events")
	}
}
