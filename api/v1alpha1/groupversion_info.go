// Package v1alpha1 holds the rocketmq.openrmq.io/v1alpha1 API: NameServer, Broker,
// ConsumerGroup, Topic and User.
// +kubebuilder:object:generate=true
// +groupName=rocketmq.openrmq.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "rocketmq.openrmq.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = &schemeBuilder{}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// schemeBuilder collects the kinds the types files register, for AddToScheme: what
// controller-runtime's deprecated scheme.Builder did, on apimachinery alone (an API
// package should need nothing more).
type schemeBuilder struct{ objects []runtime.Object }

// Register adds kinds; the types files call it from init.
func (b *schemeBuilder) Register(objects ...runtime.Object) {
	b.objects = append(b.objects, objects...)
}

// AddToScheme adds the registered kinds, and the meta types of GroupVersion, to s.
func (b *schemeBuilder) AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, b.objects...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
