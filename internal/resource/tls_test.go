package resource

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// tlsMount returns the pod template's spec.tls volume and the container's mount of it.
func tlsMount(t *testing.T, sts *appsv1.StatefulSet) (*corev1.Volume, *corev1.VolumeMount) {
	t.Helper()
	var vol *corev1.Volume
	for i := range sts.Spec.Template.Spec.Volumes {
		if v := &sts.Spec.Template.Spec.Volumes[i]; v.Name == tlsVolume {
			vol = v
		}
	}
	var mount *corev1.VolumeMount
	for i := range sts.Spec.Template.Spec.Containers[0].VolumeMounts {
		if m := &sts.Spec.Template.Spec.Containers[0].VolumeMounts[i]; m.Name == tlsVolume {
			mount = m
		}
	}
	return vol, mount
}

func TestBrokerTLS(t *testing.T) {
	br := broker()
	plain := BrokerPodConf(br, 0, 0)
	plainHash := BrokerConfigHash(br, 0)
	if strings.Contains(plain, "tls.") {
		t.Fatalf("without spec.tls no tls.* key is rendered (the brokers keep 4.9's defaults):\n%s", plain)
	}
	sts := build(t, (&BrokerBuilder{Instance: br, Scheme: scheme(t)}).Builders())["StatefulSet/rmq-broker-a"].(*appsv1.StatefulSet)
	if v, m := tlsMount(t, sts); v != nil || m != nil {
		t.Fatal("a TLS volume without spec.tls")
	}

	br.Spec.Config["tls.server.mode"] = "disabled" // refused by the API with spec.tls; dropped if stored
	br.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "rmq-tls", ClientAuth: v1alpha1.TLSClientAuthRequire}
	conf := BrokerPodConf(br, 0, 0)
	for _, want := range []string{
		"tls.server.mode=enforcing\n", "tls.test.mode.enable=false\n",
		"tls.server.certPath=/etc/rocketmq-tls/tls.crt\n", "tls.server.keyPath=/etc/rocketmq-tls/tls.key\n",
		"tls.server.trustCertPath=/etc/rocketmq-tls/ca.crt\n", "tls.server.need.client.auth=require\n", "tls.server.authClient=true\n",
		"tls.enable=true\n", "tls.client.authServer=true\n", "tls.client.trustCertPath=/etc/rocketmq-tls/ca.crt\n",
		"tls.client.certPath=/etc/rocketmq-tls/tls.crt\n", "tls.client.keyPath=/etc/rocketmq-tls/tls.key\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("broker.conf lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(conf, "disabled") {
		t.Errorf("spec.config's tls.* survived spec.tls:\n%s", conf)
	}
	tlsHash := BrokerConfigHash(br, 0)
	if tlsHash == plainHash {
		t.Error("turning TLS on must roll the pods")
	}
	br.Spec.TLS.Mode = v1alpha1.TLSPermissive
	if h := BrokerConfigHash(br, 0); h == tlsHash || !strings.Contains(BrokerPodConf(br, 0, 0), "tls.server.mode=permissive\n") {
		t.Error("a mode change must roll the pods")
	}

	sts = build(t, (&BrokerBuilder{Instance: br, Scheme: scheme(t)}).Builders())["StatefulSet/rmq-broker-a"].(*appsv1.StatefulSet)
	v, m := tlsMount(t, sts)
	if v == nil || m == nil || v.Secret == nil || v.Secret.SecretName != "rmq-tls" || len(v.Secret.Items) != 3 ||
		m.MountPath != TLSDir || !m.ReadOnly || m.SubPath != "" {
		t.Fatalf("TLS volume %+v, mount %+v", v, m)
	}
}

func TestNameServerTLS(t *testing.T) {
	ns := nameServer()
	plain := NameServerConf(ns)
	ns.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "ns-tls", Mode: v1alpha1.TLSPermissive}
	conf := NameServerConf(ns)
	if !strings.HasPrefix(conf, plain) || !strings.Contains(conf, "tls.server.mode=permissive\n") ||
		!strings.Contains(conf, "tls.server.need.client.auth=none\n") || strings.Contains(conf, "tls.enable") ||
		!strings.Contains(conf, "tls.server.certPath=/etc/rocketmq-tls/tls.crt\n") {
		t.Errorf("namesrv.conf with spec.tls:\n%s", conf)
	}
	sts := build(t, (&NameServerBuilder{Instance: ns, Scheme: scheme(t)}).Builders())["StatefulSet/"+ns.Name].(*appsv1.StatefulSet)
	if v, m := tlsMount(t, sts); v == nil || m == nil || v.Secret.SecretName != "ns-tls" || m.MountPath != TLSDir {
		t.Fatalf("TLS volume %+v, mount %+v", v, m)
	}
	if sts.Spec.Template.Annotations[ConfigHashAnnotation] != Hash(conf) {
		t.Error("the pods' hash must follow the TLS keys")
	}
}
