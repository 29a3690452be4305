package resource

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// BrokerGroupConfigMapName is the name of group i's ConfigMap (broker.conf per pod).
func BrokerGroupConfigMapName(br *v1alpha1.Broker, i int32) string {
	return BrokerGroupName(br, i) + "-config"
}

// BrokerGroupServiceName is the name of group i's headless Service (the pods' DNS names).
func BrokerGroupServiceName(br *v1alpha1.Broker, i int32) string {
	return BrokerGroupName(br, i) + "-headless"
}

// BrokerGroupHAServiceName is the name of group i's HA Service: the master's HA port,
// its slaves' haMasterAddress.
func BrokerGroupHAServiceName(br *v1alpha1.Broker, i int32) string {
	return BrokerGroupName(br, i) + "-ha"
}

// BrokerGroupIndex parses a group's brokerName ("broker-c") into its index (2).
func BrokerGroupIndex(brokerName string) (int32, bool) {
	if len(brokerName) != len("broker-a") || brokerName[:7] != "broker-" {
		return 0, false
	}
	c := brokerName[7]
	if c < 'a' || c > 'z' {
		return 0, false
	}
	return int32(c - 'a'), true
}

// BrokerGroupObjects are the objects group i owns, by name only, in the order a
// scale-in deletes them: the StatefulSet first (its pods go), then its ConfigMap,
// headless Service and PodDisruptionBudget. The builders (Builders) make the same names.
func BrokerGroupObjects(br *v1alpha1.Broker, i int32) []client.Object {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: br.Namespace, Name: name} }
	return []client.Object{
		&appsv1.StatefulSet{ObjectMeta: meta(BrokerGroupName(br, i))},
		&corev1.ConfigMap{ObjectMeta: meta(BrokerGroupConfigMapName(br, i))},
		&corev1.Service{ObjectMeta: meta(BrokerGroupServiceName(br, i))},
		&corev1.Service{ObjectMeta: meta(BrokerGroupHAServiceName(br, i))},
		&policyv1.PodDisruptionBudget{ObjectMeta: meta(BrokerGroupName(br, i))},
	}
}
