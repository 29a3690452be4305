// Command manager runs the RocketMQ operator: the NameServer, Broker, ConsumerGroup, Topic
// and User controllers under one controller-runtime manager.
package main

import (
	"crypto/tls"
	"flag"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/controllers"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

func main() { os.Exit(run()) }

// run returns the exit code, so deferred cleanups run before os.Exit.
func run() int {
	var metricsAddr, metricsCertDir, probeAddr, namespaces string
	var leaderElect, metricsSecure, enableHTTP2 bool
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8443", "address the metrics endpoint binds to; 0 disables it")
	flag.BoolVar(&metricsSecure, "metrics-secure", true, "serve metrics over HTTPS, to clients the API server authenticates (TokenReview) and authorizes (SubjectAccessReview: get on the /metrics non-resource URL); false serves plain HTTP to anyone")
	flag.StringVar(&metricsCertDir, "metrics-cert-dir", "", "folder with tls.crt and tls.key for the metrics endpoint (watched for changes); empty: a self-signed certificate made in memory")
	flag.BoolVar(&enableHTTP2, "enable-http2", false, "allow HTTP/2 on the metrics endpoint (off: the HTTP/2 rapid-reset and stream-cancellation CVEs)")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	flag.BoolVar(&leaderElect, "leader-elect", false, "elect a leader so only one replica reconciles")
	flag.StringVar(&namespaces, "watch-namespaces", "", "comma-separated namespaces to watch; empty watches all")
	// klog's text logger (-v, -vmodule) instead of zap: no extra module to pull in.
	logCfg := textlogger.NewConfig()
	logCfg.AddFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(textlogger.NewLogger(logCfg))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsOptions(metricsAddr, metricsSecure, metricsCertDir, enableHTTP2),
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         leaderElect,
		LeaderElectionID:       "rocketmq-operator.openrmq.io",
		// Give the lease up on SIGTERM, so the next replica leads at once instead of
		// after the lease runs out (15 s plus a retry). Safe: run returns right after
		// the manager stops, and nothing reconciles after it.
		LeaderElectionReleaseOnCancel: true,
		Cache: cache.Options{
			DefaultNamespaces: watched(namespaces),
			ByObject:          controllers.CacheByObject(),
		},
	})
	if err != nil {
		log.Error(err, "creating manager")
		return 1
	}
	// One remoting client, one connection per broker, shared by every controller.
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer func() { _ = rc.Close() }()
	opNS := operatorNamespace(os.Getenv, serviceAccountNamespaceFile)
	if opNS == "" {
		log.Info("the operator's namespace is unknown (set POD_NAMESPACE): NetworkPolicies will not admit its admin calls")
	}
	if err := controllers.SetupAll(mgr, newAdmin(rc), opNS); err != nil {
		log.Error(err, "setting up controllers")
		return 1
	}
	utilruntime.Must(mgr.AddHealthzCheck("healthz", healthz.Ping))
	utilruntime.Must(mgr.AddReadyzCheck("readyz", healthz.Ping))
	log.Info("starting manager", "namespaces", namespaces, "operatorNamespace", opNS)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		return 1
	}
	return 0
}

// metricsOptions is controller-runtime's secure metrics serving unless secure is false:
// HTTPS, and every request's bearer token checked with the API server, whose RBAC must
// let the caller get the /metrics non-resource URL (the chart's metrics-reader
// ClusterRole). The manager's ClusterRole may create TokenReviews and
// SubjectAccessReviews for it (controllers/setup.go).
func metricsOptions(addr string, secure bool, certDir string, http2 bool) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr, SecureServing: secure}
	if !secure {
		return o
	}
	o.FilterProvider = filters.WithAuthenticationAndAuthorization
	o.CertDir = certDir
	if !http2 {
		o.TLSOpts = append(o.TLSOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	return o
}

// watched turns "a,b" into the cache's namespace set; nil means every namespace.
func watched(list string) map[string]cache.Config {
	var out map[string]cache.Config
	for ns := range strings.SplitSeq(list, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			if out == nil {
				out = map[string]cache.Config{}
			}
			out[ns] = cache.Config{}
		}
	}
	return out
}

// serviceAccountNamespaceFile holds the pod's namespace wherever a service account token
// is mounted.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// operatorNamespace is the namespace the manager runs in: POD_NAMESPACE (the downward API,
// set by config/manager and the chart), else the service account's namespace file, else ""
// (out of cluster).
func operatorNamespace(getenv func(string) string, saFile string) string {
	if ns := strings.TrimSpace(getenv("POD_NAMESPACE")); ns != "" {
		return ns
	}
	data, err := os.ReadFile(saFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
