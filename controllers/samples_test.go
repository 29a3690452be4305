package controllers

import (
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

var _ = Describe("config/samples", func() {
	It("apply cleanly and reconcile", func() {
		ns := newNamespace()
		files, err := filepath.Glob(filepath.Join("..", "config", "samples", "rocketmq_*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(files).To(HaveLen(3))
		for _, f := range files {
			data, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			obj := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal(data, &obj.Object)).To(Succeed(), f)
			obj.SetNamespace(ns)
			Expect(k8s.Create(ctx, obj)).To(Succeed(), "%s is refused", f)
		}
		Eventually(func(g Gomega) {
			cg := &v1alpha1.ConsumerGroup{}
			g.Expect(get(cg, ns, "billing")()).To(Succeed())
			// No reset in the sample: it once reset topic orders, which nothing created, and
			// the group stayed Degraded (OffsetResetFailed every 15 s).
			g.Expect(meta.IsStatusConditionTrue(cg.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
			g.Expect(meta.IsStatusConditionTrue(cg.Status.Conditions, v1alpha1.ConditionDegraded)).To(BeFalse())
		}).Should(Succeed())
		br := &v1alpha1.Broker{}
		Expect(get(br, ns, "rmq")()).To(Succeed())
		Expect(br.Status.Groups).To(HaveLen(2))
		for _, name := range []string{"ns-nameserver", "rmq-broker"} {
			Expect(get(&networkingv1.NetworkPolicy{}, ns, name)()).To(Succeed(), "the samples enable spec.networkPolicy")
		}
	})
})
