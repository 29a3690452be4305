//go:build k8s

package e2ek8s

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/openrmq/rocketmq-operator/test/internal/procs"
)

// The chart's monitoring objects checked with a real Prometheus (built from its Go module
// by hack/prometheus.sh) on this host: the ServiceMonitors the chart renders are turned
// into the scrape configuration prometheus-operator would generate for them, the
// dashboard's queries and the PrometheusRule's expressions run against what it scraped.

// scrapeInterval is the chart value metrics.serviceMonitor.interval the suite renders
// with (the default, 30s, would make the spec wait minutes for two samples).
const scrapeInterval = 2 * time.Second

// rateInterval replaces Grafana's $__rate_interval: a window that holds the traffic the
// spec has just made (Grafana picks at least four scrape intervals).
const rateInterval = "1m"

// monitoringObjects renders the installed chart, with the suite's values plus the
// monitoring switches, on a cluster that serves prometheus-operator's CRDs, and returns
// the documents by "Kind/name".
func monitoringObjects() map[string]map[string]any {
	chrt, err := loader.Load(filepath.Join(repo, "charts", "rocketmq-operator"))
	Expect(err).NotTo(HaveOccurred())
	vals := chartValues()
	vals["metrics"] = map[string]any{
		"serviceMonitor":   map[string]any{"enabled": true, "interval": scrapeInterval.String(), "scrapeTimeout": scrapeInterval.String()},
		"prometheusRule":   map[string]any{"enabled": true},
		"grafanaDashboard": map[string]any{"enabled": true},
	}
	caps := common.DefaultCapabilities.Copy()
	caps.APIVersions = append(append(common.VersionSet{}, caps.APIVersions...),
		"monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule")
	rv, err := chartutil.ToRenderValues(chrt, vals, common.ReleaseOptions{Name: releaseName, Namespace: operatorNS, IsInstall: true}, caps)
	Expect(err).NotTo(HaveOccurred())
	files, err := engine.Render(chrt, rv)
	Expect(err).NotTo(HaveOccurred())
	out := map[string]map[string]any{}
	for name, text := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		for _, doc := range strings.Split(text, "\n---\n") {
			obj := map[string]any{}
			Expect(yaml.Unmarshal([]byte(doc), &obj)).To(Succeed(), "%s", name)
			if len(obj) == 0 {
				continue
			}
			out[obj["kind"].(string)+"/"+obj["metadata"].(map[string]any)["name"].(string)] = obj
		}
	}
	return out
}

// serviceMonitor is the part of monitoring.coreos.com/v1 ServiceMonitor the chart uses.
// Decoding with DisallowUnknownFields makes a field the template gains and this
// translation does not know fail the spec instead of being scraped differently.
type serviceMonitor struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		NamespaceSelector struct {
			Any        bool     `json:"any"`
			MatchNames []string `json:"matchNames"`
		} `json:"namespaceSelector"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Interval      string `json:"interval"`
			ScrapeTimeout string `json:"scrapeTimeout"`
			Scheme        string `json:"scheme"`
			TLSConfig     *struct {
				InsecureSkipVerify bool `json:"insecureSkipVerify"`
			} `json:"tlsConfig"`
			BearerTokenFile string `json:"bearerTokenFile"`
			Relabelings     []struct {
				SourceLabels []string `json:"sourceLabels"`
				Separator    *string  `json:"separator"`
				TargetLabel  string   `json:"targetLabel"`
				Regex        string   `json:"regex"`
				Replacement  *string  `json:"replacement"`
				Action       string   `json:"action"`
			} `json:"relabelings"`
		} `json:"endpoints"`
	} `json:"spec"`
}

var invalidLabelChars = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// scrapeConfigs is what prometheus-operator generates for a ServiceMonitor with the
// endpoints role (pkg/prometheus/promcfg.go, generateServiceMonitorConfig): one job per
// endpoint; keep the Services whose labels match, keep the named port, label targets
// with namespace, service, pod, container, job and endpoint, drop finished pods, then the
// endpoint's own relabelings. The differences are where the scraper runs: service
// discovery reads kubeconfig, and tokenFile stands in for the pod's service-account token.
func scrapeConfigs(obj map[string]any, kubeconfig, tokenFile string) []map[string]any {
	raw, err := json.Marshal(obj)
	Expect(err).NotTo(HaveOccurred())
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	var sm serviceMonitor
	Expect(dec.Decode(&sm)).To(Succeed(), "a ServiceMonitor field this translation does not know")
	sd := map[string]any{"role": "endpoints", "kubeconfig_file": kubeconfig}
	switch {
	case sm.Spec.NamespaceSelector.Any:
	case len(sm.Spec.NamespaceSelector.MatchNames) > 0:
		sd["namespaces"] = map[string]any{"names": sm.Spec.NamespaceSelector.MatchNames}
	default:
		sd["namespaces"] = map[string]any{"names": []string{sm.Metadata.Namespace}}
	}
	var jobs []map[string]any
	for i, ep := range sm.Spec.Endpoints {
		Expect(ep.Port).NotTo(BeEmpty(), "ServiceMonitor %s: an endpoint without a port name", sm.Metadata.Name)
		relabel := []map[string]any{{"source_labels": []string{"job"}, "target_label": "__tmp_prometheus_job_name"}}
		keys := make([]string, 0, len(sm.Spec.Selector.MatchLabels))
		for k := range sm.Spec.Selector.MatchLabels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			l := invalidLabelChars.ReplaceAllString(k, "_")
			relabel = append(relabel, map[string]any{"action": "keep",
				"source_labels": []string{"__meta_kubernetes_service_label_" + l, "__meta_kubernetes_service_labelpresent_" + l},
				"regex":         "(" + sm.Spec.Selector.MatchLabels[k] + ");true"})
		}
		target := []string{"__meta_kubernetes_endpoint_address_target_kind", "__meta_kubernetes_endpoint_address_target_name"}
		relabel = append(relabel,
			map[string]any{"action": "keep", "source_labels": []string{"__meta_kubernetes_endpoint_port_name"}, "regex": ep.Port},
			map[string]any{"source_labels": target, "separator": ";", "regex": "Node;(.*)", "replacement": "${1}", "target_label": "node"},
			map[string]any{"source_labels": target, "separator": ";", "regex": "Pod;(.*)", "replacement": "${1}", "target_label": "pod"},
			map[string]any{"source_labels": []string{"__meta_kubernetes_namespace"}, "target_label": "namespace"},
			map[string]any{"source_labels": []string{"__meta_kubernetes_service_name"}, "target_label": "service"},
			map[string]any{"source_labels": []string{"__meta_kubernetes_pod_name"}, "target_label": "pod"},
			map[string]any{"source_labels": []string{"__meta_kubernetes_pod_container_name"}, "target_label": "container"},
			map[string]any{"action": "drop", "source_labels": []string{"__meta_kubernetes_pod_phase"}, "regex": "(Failed|Succeeded)"},
			map[string]any{"source_labels": []string{"__meta_kubernetes_service_name"}, "target_label": "job", "replacement": "${1}"},
			map[string]any{"target_label": "endpoint", "replacement": ep.Port},
		)
		for _, r := range ep.Relabelings {
			c := map[string]any{}
			if len(r.SourceLabels) > 0 {
				c["source_labels"] = r.SourceLabels
			}
			if r.Separator != nil {
				c["separator"] = *r.Separator
			}
			if r.TargetLabel != "" {
				c["target_label"] = r.TargetLabel
			}
			if r.Regex != "" {
				c["regex"] = r.Regex
			}
			if r.Replacement != nil {
				c["replacement"] = *r.Replacement
			}
			if r.Action != "" {
				c["action"] = strings.ToLower(r.Action)
			}
			relabel = append(relabel, c)
		}
		job := map[string]any{
			"job_name":              fmt.Sprintf("serviceMonitor/%s/%s/%d", sm.Metadata.Namespace, sm.Metadata.Name, i),
			"honor_labels":          false,
			"kubernetes_sd_configs": []any{sd},
			"relabel_configs":       relabel,
		}
		for k, v := range map[string]string{"scrape_interval": ep.Interval, "scrape_timeout": ep.ScrapeTimeout, "metrics_path": ep.Path, "scheme": ep.Scheme} {
			if v != "" {
				job[k] = v
			}
		}
		if ep.TLSConfig != nil {
			job["tls_config"] = map[string]any{"insecure_skip_verify": ep.TLSConfig.InsecureSkipVerify}
		}
		if ep.BearerTokenFile != "" {
			job["authorization"] = map[string]any{"credentials_file": tokenFile}
		}
		jobs = append(jobs, job)
	}
	return jobs
}

// scraperToken is what a Prometheus in the cluster scrapes the operator with: a
// ServiceAccount's token, the account bound to the chart's metrics-reader ClusterRole.
func scraperToken(path string) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "e2e-prometheus", Namespace: operatorNS}}
	Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, sa))).To(Succeed())
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-prometheus-metrics-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: releaseName + "-metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: operatorNS}}}
	Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, crb))).To(Succeed())
	DeferCleanup(func() { _ = k8s.Delete(ctx, crb) })
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts(operatorNS).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(path, []byte(tr.Status.Token), 0o600)).To(Succeed())
}

// promAPI is a Prometheus server's HTTP API on loopback.
type promAPI struct{ base string }

func (p promAPI) get(path string, q url.Values, out any) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, p.base+path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("%s: HTTP %d: %s", path, resp.StatusCode, body)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s %s: %s", path, q.Encode(), env.Error)
	}
	return json.Unmarshal(env.Data, out)
}

type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s sample) float() float64 {
	f, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
	return f
}

// query runs an instant query; an error is a query Prometheus refused (it does not parse).
func (p promAPI) query(expr string) ([]sample, error) {
	var data struct {
		ResultType string   `json:"resultType"`
		Result     []sample `json:"result"`
	}
	if err := p.get("/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: result type %s", expr, data.ResultType)
	}
	return data.Result, nil
}

// sum is the one value of a sum(...) query, -1 when it has none.
func (p promAPI) sum(expr string) float64 {
	r, err := p.query(expr)
	if err != nil || len(r) != 1 {
		return -1
	}
	return r[0].float()
}

type target struct {
	Labels     map[string]string `json:"labels"`
	ScrapeURL  string            `json:"scrapeUrl"`
	Health     string            `json:"health"`
	LastError  string            `json:"lastError"`
	LastScrape time.Time         `json:"lastScrape"`
}

func (p promAPI) targets() ([]target, error) {
	var data struct {
		ActiveTargets []target `json:"activeTargets"`
	}
	err := p.get("/api/v1/targets", url.Values{"state": {"active"}}, &data)
	return data.ActiveTargets, err
}

// startPrometheus runs the server on loopback with its own data folder, stopped by PID
// when the spec ends.
func startPrometheus(config map[string]any) promAPI {
	dir := filepath.Join(workDir, "prometheus")
	Expect(os.MkdirAll(filepath.Join(dir, "data"), 0o755)).To(Succeed())
	text, err := yaml.Marshal(config)
	Expect(err).NotTo(HaveOccurred())
	cfgPath := filepath.Join(dir, "prometheus.yml")
	Expect(os.WriteFile(cfgPath, text, 0o644)).To(Succeed())
	port, err := procs.FreePort()
	Expect(err).NotTo(HaveOccurred())
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p, err := procs.Start(procs.Spec{Name: "prometheus", Path: prometheusBin, Dir: dir, LogPath: filepath.Join(dir, "prometheus.log"),
		Args: []string{"--config.file=" + cfgPath, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
			"--web.listen-address=" + addr, "--storage.tsdb.retention.time=1h", "--log.level=warn"}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { p.Stop(10 * time.Second) })
	api := promAPI{base: "http://" + addr}
	Eventually(func() error {
		if done, err := p.Exited(); done {
			return StopTrying(fmt.Sprintf("prometheus exited (%v):\n%s", err, p.Tail(30)))
		}
		var b struct{}
		return api.get("/api/v1/status/buildinfo", nil, &b)
	}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	report("prometheus (pid %d) serves on %s with %s", p.Pid(), addr, cfgPath)
	return api
}

// dashboard is what the spec reads of the Grafana dashboard JSON.
type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
			AllValue   string `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
}

var labelValuesRE = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// substitute puts the variables' values into a query the way Grafana formats a
// multi-value variable inside a regex matcher: (a|b).
func substitute(expr string, vars map[string][]string) string {
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		vals := make([]string, len(vars[name]))
		for i, v := range vars[name] {
			vals[i] = regexp.QuoteMeta(v)
		}
		v := strings.Join(vals, "|")
		if len(vals) > 1 {
			v = "(" + v + ")"
		}
		expr = strings.ReplaceAll(expr, "${"+name+"}", v)
		expr = strings.ReplaceAll(expr, "$"+name, v)
	}
	return expr
}

// emptyAllowed are the dashboard queries and alerts that need traffic the suite does not
// make, with why. They must still parse; each one is printed.
var emptyAllowed = map[string]string{
	`response_code="system_busy"`: "SYSTEM_BUSY needs a full worker pool; the 2-CPU node cannot overload a broker without starving the suite",
	"rocketmq_acl_refused_total":  "the samples' Broker runs without ACL (config/samples), so nothing can be refused",
}

// panelValues are figures some panels must show exactly after the spec's traffic, by
// consumer group: nothing left to consume of the 200, and the 20 dead-lettered messages
// in the DLQ once (not once per replica).
var panelValues = map[string]func(group, dlqGroup string, dead int) map[string]float64{
	"Lag (messages)": func(group, _ string, _ int) map[string]float64 { return map[string]float64{group: 0} },
	"DLQ depth (messages)": func(_, dlqGroup string, dead int) map[string]float64 {
		return map[string]float64{dlqGroup: float64(dead)}
	},
}

func allowedEmpty(expr string) (string, bool) {
	for k, why := range emptyAllowed {
		if strings.Contains(expr, k) {
			return why, true
		}
	}
	return "", false
}

var metricName = regexp.MustCompile(`\b(rocketmq_[a-z0-9_]+)`)

// checkPrometheus is the spec: scrape through the chart's ServiceMonitors, make traffic
// (messages sent and consumed, messages dead-lettered), then the dashboard's queries and
// the alerts' expressions.
func checkPrometheus(nsAddrs []string) {
	t0 := time.Now()
	objs := monitoringObjects()
	tokenFile := filepath.Join(workDir, "prometheus-token")
	scraperToken(tokenFile)
	var jobs []any
	var monitors []string
	for name, obj := range objs {
		if strings.HasPrefix(name, "ServiceMonitor/") {
			monitors = append(monitors, name)
			for _, j := range scrapeConfigs(obj, kubeconfig, tokenFile) {
				jobs = append(jobs, j)
			}
		}
	}
	sort.Strings(monitors)
	Expect(monitors).To(HaveLen(3), "the operator's, the brokers' and the name servers' ServiceMonitors")
	api := startPrometheus(map[string]any{"global": map[string]any{"evaluation_interval": scrapeInterval.String()}, "scrape_configs": jobs})

	// Every broker and name server pod of the samples, and the operator, up.
	var pods corev1.PodList
	Expect(k8s.List(ctx, &pods, client.InNamespace(samplesNS), client.MatchingLabels{"app.kubernetes.io/managed-by": "rocketmq-operator"})).To(Succeed())
	want := map[string]bool{}
	for _, p := range pods.Items {
		if c := p.Labels["app.kubernetes.io/component"]; (c == "broker" || c == "nameserver") && p.DeletionTimestamp == nil {
			want[p.Name] = true
		}
	}
	Expect(want).To(HaveLen(6), "4 broker pods and 2 name server pods")
	want[waitOperatorReady()] = true
	var up, total int
	Eventually(func(g Gomega) {
		ts, err := api.targets()
		g.Expect(err).NotTo(HaveOccurred())
		up, total = 0, len(ts)
		seen := map[string]bool{}
		var down []string
		for _, t := range ts {
			if t.Health == "up" {
				up++
				seen[t.Labels["pod"]] = true
			} else {
				down = append(down, fmt.Sprintf("%s %s (%s)", t.Labels["pod"], t.ScrapeURL, t.LastError))
			}
		}
		for p := range want {
			g.Expect(seen[p]).To(BeTrue(), "pod %s not scraped; down: %v", p, down)
		}
		g.Expect(up).To(Equal(total), "targets down: %v", down)
	}).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	report("prometheus: %d targets up through %v (%s after the start)", up, monitors, since(t0))

	// Traffic: 200 messages sent and consumed; 20 more that a group fails to consume
	// twice with maxReconsumeTimes 1: once redelivered through its %RETRY% topic (10 s
	// later, delay level 3), then moved to its dead letter queue.
	mtopic := "E2EMetrics"
	createTopic(strings.Join(nsAddrs, ";"), mtopic, 4)
	keys := produceGo(nsAddrs, mtopic, "metrics", 200)
	group := "e2e-metrics-" + runID
	Expect(consumeGo(nsAddrs, group, mtopic, keys, consumer.ConsumeFromFirstOffset, 2*time.Minute)).To(Equal(len(keys)))
	dtopic := "E2EDeadLetter"
	createTopic(strings.Join(nsAddrs, ";"), dtopic, 2)
	dead := produceGo(nsAddrs, dtopic, "dead", 20)
	dlqGroup := "e2e-dlq-" + runID
	dc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver(nsAddrs)),
		consumer.WithGroupName(dlqGroup), consumer.WithInstance(dlqGroup), consumer.WithMaxReconsumeTimes(1),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	Expect(err).NotTo(HaveOccurred())
	Expect(dc.Subscribe(dtopic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		return consumer.ConsumeRetryLater, nil
	})).To(Succeed())
	Expect(dc.Start()).To(Succeed())
	defer func() { _ = dc.Shutdown() }()

	// The counters Prometheus scraped move by exactly what the clients did.
	Eventually(func() float64 { return api.sum(fmt.Sprintf(`sum(rocketmq_messages_in_total{topic=%q})`, mtopic)) }).
		WithTimeout(time.Minute).WithPolling(time.Second).Should(Equal(float64(len(keys))))
	Eventually(func() float64 {
		return api.sum(fmt.Sprintf(`sum(rocketmq_messages_out_total{topic=%q,consumer_group=%q})`, mtopic, group))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeNumerically(">=", len(keys)))
	Eventually(func() float64 {
		// Masters and slaves both export it: the masters' figures.
		return api.sum(fmt.Sprintf(`sum(rocketmq_consumer_dlq_messages{consumer_group=%q,broker_id="0"})`, dlqGroup))
	}).
		WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Equal(float64(len(dead))))
	Eventually(func() float64 {
		return api.sum(fmt.Sprintf(`sum(rocketmq_send_to_dlq_messages_total{consumer_group=%q,topic=%q})`, dlqGroup, dtopic))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Equal(float64(len(dead))))
	report("prometheus: rocketmq_messages_in_total{topic=%q} = %d sent, %d of %s dead-lettered by %s", mtopic, len(keys), len(dead), dtopic, dlqGroup)
	// Every target scraped once more after that, so the last samples hold the traffic.
	moved := time.Now()
	Eventually(func(g Gomega) {
		ts, err := api.targets()
		g.Expect(err).NotTo(HaveOccurred())
		for _, t := range ts {
			g.Expect(t.LastScrape.After(moved)).To(BeTrue(), "target %s last scraped %s", t.ScrapeURL, t.LastScrape)
		}
	}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

	// The dashboard shipped in the chart's ConfigMap.
	cm := objs["ConfigMap/"+releaseName+"-dashboard"]
	Expect(cm).NotTo(BeNil(), "no dashboard ConfigMap rendered")
	var dash dashboard
	for _, text := range cm["data"].(map[string]any) {
		Expect(json.Unmarshal([]byte(text.(string)), &dash)).To(Succeed())
	}
	// Its variables, each resolved by its own label_values query (the dependent ones
	// with the others at their "All" value), then set to what the spec's traffic used.
	all := map[string][]string{}
	for _, v := range dash.Templating.List {
		if v.Type == "query" {
			all[v.Name] = []string{".*"}
		}
	}
	chosen := map[string][]string{"__rate_interval": {rateInterval}}
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValuesRE.FindStringSubmatch(v.Definition)
		Expect(m).NotTo(BeNil(), "variable %s: %s is not label_values(selector, label)", v.Name, v.Definition)
		sel := strings.ReplaceAll(m[1], `=~"$cluster"`, `=~".*"`)
		Expect(sel).NotTo(ContainSubstring("$"), "variable %s", v.Name)
		// The values the spec picks: its own cluster, topics and groups (a group has lag
		// series once its consumer committed offsets, every 5 s).
		pick := map[string][]string{"cluster": {"DefaultCluster"}, "topic": {mtopic, dtopic}, "group": {group, dlqGroup}}[v.Name]
		var vals []string
		Eventually(func(g Gomega) {
			g.Expect(api.get("/api/v1/label/"+m[2]+"/values", url.Values{"match[]": {sel}}, &vals)).To(Succeed(), "variable %s", v.Name)
			g.Expect(vals).NotTo(BeEmpty(), "variable %s (%s) has no values", v.Name, v.Definition)
			g.Expect(vals).To(ContainElements(pick), "variable %s (%s)", v.Name, v.Definition)
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
		chosen[v.Name] = pick
		if pick == nil {
			chosen[v.Name] = vals
		}
		report("dashboard variable $%s: %d values from %s; set to %v", v.Name, len(vals), v.Definition, chosen[v.Name])
	}
	var withData, queries int
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queries++
			expr := substitute(tg.Expr, chosen)
			Expect(expr).NotTo(ContainSubstring("$"), "panel %q: a variable left in %s", p.Title, expr)
			if want, ok := panelValues[p.Title]; ok {
				// Consumers commit offsets every 5 s: the figure settles within seconds.
				Eventually(func(g Gomega) {
					res, err := api.query(expr)
					g.Expect(err).NotTo(HaveOccurred())
					got := map[string]float64{}
					for _, r := range res {
						got[r.Metric["consumer_group"]] += r.float()
					}
					for grp, v := range want(group, dlqGroup, len(dead)) {
						g.Expect(got).To(HaveKeyWithValue(grp, v), "panel %q: %s", p.Title, expr)
					}
				}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
				report("dashboard panel %q shows %v", p.Title, want(group, dlqGroup, len(dead)))
			}
			why, allowed := allowedEmpty(expr)
			if allowed {
				res, err := api.query(expr)
				Expect(err).NotTo(HaveOccurred(), "panel %q", p.Title)
				if len(res) > 0 {
					withData++
				} else {
					report("dashboard panel %q: no series, allowed: %s", p.Title, why)
				}
				continue
			}
			// A group's series (the %RETRY% topic's lag among them) appear once its
			// consumer has committed offsets, every 5 s, and Prometheus scraped them.
			Eventually(func(g Gomega) {
				res, err := api.query(expr)
				g.Expect(err).NotTo(HaveOccurred(), "panel %q", p.Title)
				g.Expect(res).NotTo(BeEmpty(), "panel %q returns no series: %s", p.Title, expr)
			}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
			withData++
		}
	}

	// The alerts: every expression is a query Prometheus accepts, and every metric it
	// names has series.
	rule := objs["PrometheusRule/"+releaseName]
	Expect(rule).NotTo(BeNil())
	alerts, referenced := 0, map[string]bool{}
	for _, g := range rule["spec"].(map[string]any)["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			r := r.(map[string]any)
			expr := r["expr"].(string)
			_, err := api.query(expr)
			Expect(err).NotTo(HaveOccurred(), "alert %v", r["alert"])
			alerts++
			for _, m := range metricName.FindAllStringSubmatch(expr, -1) {
				referenced[m[1]] = true
			}
		}
	}
	for _, m := range slices.Sorted(maps.Keys(referenced)) {
		res, err := api.query(fmt.Sprintf(`count({__name__=%q})`, m))
		Expect(err).NotTo(HaveOccurred())
		Expect(res).NotTo(BeEmpty(), "alerts use %s, which no target exports", m)
	}
	report("prometheus: %d alert expressions parse; the %d metrics they use all have series", alerts, len(referenced))
	report("prometheus targets=%d/%d dashboard_queries=%d/%d", up, total, withData, queries)
}
