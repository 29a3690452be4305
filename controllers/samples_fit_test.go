package controllers

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// TestSamplesFitATwoCPUNode: config/samples schedule on one node of 2 CPUs next to the
// operator (10m), CoreDNS (100m) and the node's own share. With 500m per broker pod the
// fourth broker stayed Pending.
func TestSamplesFitATwoCPUNode(t *testing.T) {
	read := func(name string, into any) {
		data, err := os.ReadFile(filepath.Join("..", "config", "samples", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, into); err != nil {
			t.Fatal(err)
		}
	}
	var ns v1alpha1.NameServer
	var br v1alpha1.Broker
	read("rocketmq_v1alpha1_nameserver.yaml", &ns)
	read("rocketmq_v1alpha1_broker.yaml", &br)
	total := resource.MustParse("110m") // operator + CoreDNS
	for range ns.Spec.Replicas {
		total.Add(*ns.Spec.Resources.Requests.Cpu())
	}
	for range br.Spec.Groups * br.Spec.ReplicasPerGroup {
		total.Add(*br.Spec.Resources.Requests.Cpu())
	}
	if budget := resource.MustParse("1500m"); total.Cmp(budget) > 0 {
		t.Errorf("samples request %s CPU; a 2-CPU node has about %s to give", total.String(), budget.String())
	}
}
