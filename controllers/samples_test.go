package controllers

import (
	"bytes"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// applySamples creates every object of a sample file (documents split on ---) in ns.
func applySamples(ns, file string) {
	GinkgoHelper()
	data, err := os.ReadFile(file)
	Expect(err).NotTo(HaveOccurred())
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(doc, &obj.Object)).To(Succeed(), file)
		if len(obj.Object) == 0 {
			continue
		}
		obj.SetNamespace(ns)
		Expect(k8s.Create(ctx, obj)).To(Succeed(), "%s: %s is refused", file, obj.GetKind())
	}
}

var _ = Describe("config/samples", func() {
	It("apply cleanly and reconcile", func() {
		ns := newNamespace()
		dir := filepath.Join("..", "config", "samples")
		data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var kust struct {
			Resources []string `json:"resources"`
		}
		Expect(yaml.Unmarshal(data, &kust)).To(Succeed())
		Expect(kust.Resources).To(ContainElements("rocketmq_v1alpha1_broker.yaml", "rocketmq_v1alpha1_topic.yaml"))
		for _, f := range kust.Resources {
			applySamples(ns, filepath.Join(dir, f))
		}
		Eventually(func(g Gomega) {
			cg := &v1alpha1.ConsumerGroup{}
			g.Expect(get(cg, ns, "billing")()).To(Succeed())
			// Its reset of topic orders applies once the Topic sample has made it (the
			// group once stayed Degraded on a reset of a topic nothing created).
			g.Expect(meta.IsStatusConditionTrue(cg.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
			g.Expect(meta.IsStatusConditionTrue(cg.Status.Conditions, v1alpha1.ConditionDegraded)).To(BeFalse())
		}).Should(Succeed())
		br := &v1alpha1.Broker{}
		Expect(get(br, ns, "rmq")()).To(Succeed())
		Expect(br.Status.Groups).To(HaveLen(2))
		for _, name := range []string{"ns-nameserver", "rmq-broker"} {
			Expect(get(&networkingv1.NetworkPolicy{}, ns, name)()).To(Succeed(), "the samples enable spec.networkPolicy")
		}
		// The samples turn auto-creation off; orders exists through its Topic.
		Expect(br.Spec.Config["autoCreateTopicEnable"]).To(Equal("false"))
		orders := &v1alpha1.Topic{}
		Expect(get(orders, ns, "orders")()).To(Succeed())
		topicReady(orders)
		Expect(orders.Status.Queues).To(Equal("8/8"))
		Expect(groupNames(orders.Status.Groups)).To(Equal([]string{"broker-a", "broker-b"}))
	})

	It("the User example is admitted and says what it needs", func() {
		ns := newNamespace()
		applySamples(ns, filepath.Join("..", "config", "samples", "user.yaml"))
		u := &v1alpha1.User{}
		Expect(get(u, ns, "billing-app")()).To(Succeed())
		Expect(userReason(u, v1alpha1.UserReasonBrokerNotFound)).To(ContainSubstring(`Broker "rmq" not found`))
	})
})
