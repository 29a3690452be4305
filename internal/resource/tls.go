package resource

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// TLSDir is where spec.tls's Secret is mounted in name server and broker pods: a
// whole-Secret volume (never subPath), so the kubelet's in-place updates reach the files,
// which the processes re-read. It is outside /etc/rocketmq, the name server's config
// mount.
const (
	TLSDir    = "/etc/rocketmq-tls"
	tlsVolume = "tls"
)

// tlsConf are the tls.* keys of spec.tls (4.9's TlsSystemConfig names): the listeners'
// mode and files, with test mode off so the files are used; outgoing adds TLS on the
// process's own connections (a broker's to name servers and its master), verifying the
// peer's chain against ca.crt and presenting tls.crt. Nil without spec.tls: the
// processes keep their defaults and the rendered config, so its hash, is unchanged.
func tlsConf(t *v1alpha1.TLSSpec, outgoing bool) map[string]string {
	if t == nil {
		return nil
	}
	mode := v1alpha1.TLSEnforcing
	if t.Mode != "" {
		mode = t.Mode
	}
	auth := v1alpha1.TLSClientAuthNone
	if t.ClientAuth != "" {
		auth = t.ClientAuth
	}
	cert, key, ca := TLSDir+"/"+v1alpha1.TLSCertKey, TLSDir+"/"+v1alpha1.TLSKeyKey, TLSDir+"/"+v1alpha1.TLSCAKey
	kv := map[string]string{
		"tls.server.mode":             strings.ToLower(string(mode)),
		"tls.test.mode.enable":        "false",
		"tls.server.certPath":         cert,
		"tls.server.keyPath":          key,
		"tls.server.trustCertPath":    ca,
		"tls.server.need.client.auth": strings.ToLower(string(auth)),
		"tls.server.authClient":       boolString(auth != v1alpha1.TLSClientAuthNone),
	}
	if outgoing {
		kv["tls.enable"] = "true"
		kv["tls.client.authServer"] = "true"
		kv["tls.client.trustCertPath"] = ca
		kv["tls.client.certPath"] = cert
		kv["tls.client.keyPath"] = key
	}
	return kv
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// withoutTLSKeys drops the keys spec.tls owns from kv (spec.config of an object stored
// before the API refused them there).
func withoutTLSKeys(kv map[string]string) {
	for k := range kv {
		if strings.HasPrefix(k, "tls.") || k == "useTLS" {
			delete(kv, k)
		}
	}
}

// tlsVolumeFor mounts spec.tls's Secret: tls.crt, tls.key and ca.crt only. Only the
// Secret's name is in the pod template, never its content, so a renewed certificate
// restarts nothing. A missing Secret or key keeps the pod from starting. The mode is
// readable by the process's non-root user without an fsGroup (as the ACL file's).
func tlsVolumeFor(t *v1alpha1.TLSSpec) (corev1.Volume, corev1.VolumeMount) {
	return corev1.Volume{Name: tlsVolume, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{
				SecretName: t.SecretName,
				Items: []corev1.KeyToPath{
					{Key: v1alpha1.TLSCertKey, Path: v1alpha1.TLSCertKey},
					{Key: v1alpha1.TLSKeyKey, Path: v1alpha1.TLSKeyKey},
					{Key: v1alpha1.TLSCAKey, Path: v1alpha1.TLSCAKey},
				},
				DefaultMode: ptr.To[int32](0o444),
				Optional:    ptr.To(false),
			}}},
		corev1.VolumeMount{Name: tlsVolume, MountPath: TLSDir, ReadOnly: true}
}
