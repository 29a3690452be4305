package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// One envtest suite: a real kube-apiserver and etcd, the real manager and reconcilers, and
// a recording fake only at the broker-admin edge. There is no kubelet: pods never run, so
// tests create pods and patch StatefulSet status themselves where readiness matters.

var (
	k8s     client.Client
	testEnv *envtest.Environment
	admin   *fakeAdmin
	// edge is the ConsumerGroup controller's admin and resolver: the fake, except for the
	// Broker resources a spec points at loopback brokers (consumergroup_realbroker_test.go).
	edge   *loopbackEdge
	ctx    context.Context
	cancel context.CancelFunc
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Controllers envtest suite")
}

var _ = BeforeSuite(func() {
	// Fail, never skip: a missing apiserver must not look like a green run.
	Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(),
		"KUBEBUILDER_ASSETS is not set: run `make test`, or export KUBEBUILDER_ASSETS=$(hack/envtest.sh)")
	logf.SetLogger(GinkgoLogr)
	ctx, cancel = context.WithCancel(context.Background())

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{ByObject: CacheByObject()},
	})
	Expect(err).NotTo(HaveOccurred())
	admin = newFakeAdmin()
	edge = newLoopbackEdge(admin)
	rec := mgr.GetEventRecorder("rocketmq-operator")
	Expect((&NameServerReconciler{Client: mgr.GetClient(), Scheme: scheme, Recorder: rec,
		OperatorNamespace: operatorNamespace}).SetupWithManager(mgr)).To(Succeed())
	Expect((&BrokerReconciler{Client: mgr.GetClient(), Scheme: scheme, Admin: admin,
		Recorder: rec, OperatorNamespace: operatorNamespace}).SetupWithManager(mgr)).To(Succeed())
	Expect((&ConsumerGroupReconciler{Client: mgr.GetClient(), Admin: edge,
		Resolver: edge, Recorder: rec, APIReader: mgr.GetAPIReader(),
		LagRefresh: time.Second}).SetupWithManager(mgr)).To(Succeed())
	Expect((&TopicReconciler{Client: mgr.GetClient(), Admin: edge, Resolver: edge, Recorder: rec,
		Resync: 2 * time.Second, Retry: 300 * time.Millisecond}).SetupWithManager(mgr)).To(Succeed())
	Expect((&UserReconciler{Client: mgr.GetClient(), Prober: edge, Members: edge, Recorder: rec,
		Resync: 2 * time.Second, Retry: 300 * time.Millisecond}).SetupWithManager(mgr)).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// operatorNamespace is where the reconcilers believe the operator runs; the NetworkPolicies
// admit it.
const operatorNamespace = "rocketmq-system"

var nsCounter int

// newNamespace creates a namespace per test so tests never see each other's objects.
func newNamespace() string {
	nsCounter++
	name := fmt.Sprintf("t%d-%d", nsCounter, time.Now().UnixNano()%100000)
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	return name
}

// get fetches obj by namespace and name, for use inside Eventually.
func get(obj client.Object, ns, name string) func() error {
	return func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj) }
}

// update re-reads obj, applies mutate and writes it, retrying when the controller's status
// writes make the read stale. It returns the last error, for tests expecting a refusal.
func update(obj client.Object, mutate func()) func() error {
	return func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate()
		return k8s.Update(ctx, obj)
	}
}

// eventReasons lists the reasons of the events.k8s.io Events about one object.
func eventReasons(ns, name string) []string {
	var list eventsv1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out = append(out, e.Reason)
		}
	}
	return out
}
