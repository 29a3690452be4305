//go:build k8s

// Package e2ek8s is the end-to-end suite on a real single-node Kubernetes (make test-k8s,
// which builds the image, brings the cluster up with hack/cluster/up.sh and sets the
// K8S_E2E_* variables). It does what a user would: imports the image into containerd,
// installs the chart with Helm (the Helm SDK the helm command is made of), applies
// config/samples with kubectl, and drives the brokers with the official Go and Java
// clients from this host, through pod and service addresses only.
//
// Each step prints what it measured ("e2e-k8s: ..."). The suite removes what it created,
// so it can run twice in a row on the same cluster.
package e2ek8s

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/test/internal/procs"
)

// Environment set by hack/test-k8s.sh.
var (
	kubeconfig = os.Getenv("K8S_E2E_KUBECONFIG")
	kubectlBin = os.Getenv("K8S_E2E_KUBECTL")
	containerd = os.Getenv("K8S_E2E_CONTAINERD")
	imageTar   = os.Getenv("K8S_E2E_IMAGE_TAR")
	jarDir     = os.Getenv("K8S_E2E_JARS")
	// prometheusBin is a Prometheus server built by hack/prometheus.sh.
	prometheusBin = os.Getenv("K8S_E2E_PROMETHEUS")
	previousRef   = envOr("K8S_E2E_PREVIOUS_CHART_REF", "45f445e")
)

const (
	operatorNS  = "rocketmq-system"
	releaseName = "rocketmq-operator"
	// samplesNS enforces Pod Security "restricted": the operator's pods must pass it.
	samplesNS = "rmq-e2e"
)

var (
	ctx     = context.Background()
	k8s     client.Client
	repo    string
	workDir string
	java    procs.Java
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func TestE2EK8s(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "e2e on a single-node Kubernetes")
}

// report prints one measured line, as every step does.
func report(format string, args ...any) {
	fmt.Printf("e2e-k8s: "+format+"\n", args...)
}

func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }

// kubectl runs the cluster's kubectl and returns its combined output.
func kubectl(args ...string) (string, error) {
	cmd := exec.Command(kubectlBin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Dir = repo
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

var _ = BeforeSuite(func() {
	for k, v := range map[string]string{"K8S_E2E_KUBECONFIG": kubeconfig, "K8S_E2E_KUBECTL": kubectlBin,
		"K8S_E2E_CONTAINERD": containerd, "K8S_E2E_IMAGE_TAR": imageTar, "K8S_E2E_JARS": jarDir,
		"K8S_E2E_PROMETHEUS": prometheusBin} {
		Expect(v).NotTo(BeEmpty(), "%s is not set: run the suite with make test-k8s", k)
	}
	clientLogger = newClientLog(envOr("E2E_CLIENT_LOG", "error"))
	rlog.SetLogger(clientLogger)
	var err error
	repo, err = filepath.Abs(filepath.Join("..", ".."))
	Expect(err).NotTo(HaveOccurred())
	workDir = GinkgoT().TempDir()

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	Expect(apiextv1.AddToScheme(scheme)).To(Succeed())
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	// The Java client programs, compiled against the compat cache's 4.9.7 jars.
	classes := filepath.Join(workDir, "classes")
	Expect(os.MkdirAll(classes, 0o755)).To(Succeed())
	src := filepath.Join(repo, "test", "e2e-k8s", "java", "org", "openrmq", "e2ek8s")
	javac := exec.Command("javac", "-nowarn", "-encoding", "UTF-8", "-d", classes, "-cp", filepath.Join(jarDir, "*"),
		filepath.Join(src, "ProduceConsume.java"), filepath.Join(src, "SteadyProducer.java"))
	out, err := javac.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "javac: %s", out)
	java = procs.Java{Bin: "java", Classpath: filepath.Join(jarDir, "*"), Classes: classes, HeapMB: 256}
	cleanup() // what an interrupted run left
	if h := os.Getenv("JAVA_HOME"); h != "" {
		java.Bin = filepath.Join(h, "bin", "java")
	}
})

// AfterSuite removes what the suite made: the samples' namespace (and with it the
// claims), the release, the CRDs. The next run starts from the same empty cluster.
var _ = AfterSuite(func() {
	if k8s == nil || os.Getenv("K8S_E2E_KEEP") == "1" {
		return
	}
	cleanup()
	report("cleaned up: namespaces %s, %s, release %s and the CRDs removed", samplesNS, operatorNS, releaseName)
})

// dropFinalizers removes obj's finalizers, for objects no operator is left to finish.
func dropFinalizers(obj client.Object) {
	base := obj.DeepCopyObject().(client.Object)
	obj.SetFinalizers(nil)
	_ = k8s.Patch(ctx, obj, client.MergeFrom(base))
}

// cleanup removes everything the suite makes; BeforeSuite runs it too, after a run that
// was interrupted (or kept with K8S_E2E_KEEP=1). The samples go first, while the operator
// still runs to release their finalizers (a ConsumerGroup with deletionPolicy Delete).
func cleanup() {
	gone := func(ns string, within time.Duration) bool {
		deadline := time.Now().Add(within)
		for time.Now().Before(deadline) {
			err := k8s.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
			if apierrors.IsNotFound(err) {
				return true
			}
			_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			time.Sleep(time.Second)
		}
		return false
	}
	if !gone(samplesNS, 2*time.Minute) {
		// No operator to finish them (an interrupted run): drop the finalizers.
		var groups v1alpha1.ConsumerGroupList
		_ = k8s.List(ctx, &groups, client.InNamespace(samplesNS))
		for i := range groups.Items {
			dropFinalizers(&groups.Items[i])
		}
		var topics v1alpha1.TopicList
		_ = k8s.List(ctx, &topics, client.InNamespace(samplesNS))
		for i := range topics.Items {
			dropFinalizers(&topics.Items[i])
		}
		Expect(gone(samplesNS, 2*time.Minute)).To(BeTrue(), "namespace %s not gone", samplesNS)
	}
	Expect(gone(nodePortNS, 2*time.Minute)).To(BeTrue(), "namespace %s not gone", nodePortNS)
	helmUninstall()
	Expect(gone(operatorNS, 2*time.Minute)).To(BeTrue(), "namespace %s not gone", operatorNS)
	var crds apiextv1.CustomResourceDefinitionList
	_ = k8s.List(ctx, &crds)
	for i := range crds.Items {
		if crds.Items[i].Spec.Group == v1alpha1.GroupVersion.Group {
			_ = k8s.Delete(ctx, &crds.Items[i])
		}
	}
	Eventually(func() bool {
		var crds apiextv1.CustomResourceDefinitionList
		_ = k8s.List(ctx, &crds)
		for _, c := range crds.Items {
			if c.Spec.Group == v1alpha1.GroupVersion.Group {
				return false
			}
		}
		return true
	}).WithTimeout(time.Minute).Should(BeTrue(), "CRDs not gone")
}

// clientLog is the official Go client's logger (rlog) for the suite: it prints what is at
// or above the level E2E_CLIENT_LOG names (error by default), and records, whatever the
// level, the message queues the client reported it could not take into a push
// consumer's process queue table ("do defaultConsumer, add a new mq failed",
// consumer/consumer.go updateProcessQueueTable): the client's own word on which queues
// it does not pull.
type clientLog struct {
	level    int
	mu       sync.Mutex
	notTaken map[string]map[string]bool // group -> MessageQueue.String()
}

var clientLogLevels = map[string]int{"debug": 0, "info": 1, "warn": 2, "warning": 2, "error": 3, "fatal": 4}

func newClientLog(level string) *clientLog {
	l := &clientLog{level: 3, notTaken: map[string]map[string]bool{}}
	l.Level(level)
	return l
}

// clientLogger is the client logger BeforeSuite installs.
var clientLogger = newClientLog("error")

func (l *clientLog) print(level int, name, msg string, fields map[string]any) {
	if level < l.level {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s rlog %s %q", time.Now().UTC().Format(time.RFC3339Nano), name, msg)
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%v", k, fields[k])
	}
	fmt.Fprintln(os.Stderr, b.String())
}

func (l *clientLog) Debug(msg string, fields map[string]any) { l.print(0, "debug", msg, fields) }
func (l *clientLog) Info(msg string, fields map[string]any)  { l.print(1, "info", msg, fields) }
func (l *clientLog) Warning(msg string, fields map[string]any) {
	if msg == "do defaultConsumer, add a new mq failed" {
		group, _ := fields[rlog.LogKeyConsumerGroup].(string)
		mq := fmt.Sprint(fields[rlog.LogKeyMessageQueue])
		l.mu.Lock()
		if l.notTaken[group] == nil {
			l.notTaken[group] = map[string]bool{}
		}
		l.notTaken[group][mq] = true
		l.mu.Unlock()
	}
	l.print(2, "warning", msg, fields)
}
func (l *clientLog) Error(msg string, fields map[string]any) { l.print(3, "error", msg, fields) }
func (l *clientLog) Fatal(msg string, fields map[string]any) { l.print(4, "fatal", msg, fields) }
func (l *clientLog) Level(level string) {
	if v, ok := clientLogLevels[strings.ToLower(level)]; ok {
		l.level = v
	}
}
func (l *clientLog) OutputPath(string) error { return nil }

// failedToTake reports whether the client said it could not take mq into group's push
// consumer since the suite started.
func (l *clientLog) failedToTake(group string, mq primitive.MessageQueue) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.notTaken[group][(&mq).String()]
}
