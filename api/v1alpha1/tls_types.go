package v1alpha1

// TLSMode is RocketMQ's tls.server.mode for the pods' listeners.
// +kubebuilder:validation:Enum=Permissive;Enforcing
type TLSMode string

const (
	// TLSPermissive serves TLS and plain text on the same ports, told apart by a
	// connection's first bytes: clients move to TLS one at a time.
	TLSPermissive TLSMode = "Permissive"
	// TLSEnforcing refuses plain-text connections.
	TLSEnforcing TLSMode = "Enforcing"
)

// TLSClientAuth is RocketMQ's tls.server.need.client.auth: whether clients present a
// certificate, verified against the Secret's ca.crt.
// +kubebuilder:validation:Enum=None;Optional;Require
type TLSClientAuth string

const (
	TLSClientAuthNone     TLSClientAuth = "None"
	TLSClientAuthOptional TLSClientAuth = "Optional"
	TLSClientAuthRequire  TLSClientAuth = "Require"
)

// TLSSpec turns TLS on for every remoting port of the pods: for a Broker listenPort, the
// fast channel (listenPort-2) and the HA port (listenPort+1), and the brokers' own
// connections to their name servers and their master, which verify the peer's
// certificate chain against ca.crt. The name servers a Broker registers with must then
// speak TLS with a certificate from the same CA (a NameServer with spec.tls from the same
// issuer). The operator's admin calls use TLS too, trusting ca.crt, and the TLS condition
// says whether the brokers' certificates verify and when the first expires.
//
// Turning TLS on or off, or changing mode, clientAuth or secretName, rolls the pods. A
// changed Secret does not: the kubelet updates the mounted files in place and the
// processes re-read them, so new connections get the new certificate while existing
// ones continue.
type TLSSpec struct {
	// Mode of the listeners. Permissive is for moving clients over; Enforcing refuses
	// plain text.
	// +kubebuilder:default=Enforcing
	// +optional
	Mode TLSMode `json:"mode,omitempty"`

	// SecretName names a Secret in the same namespace with tls.crt (the certificate chain,
	// PEM), tls.key (its unencrypted private key, PEM) and ca.crt (the CA certificates
	// peers are verified against), as cert-manager writes a Certificate's Secret. It is
	// mounted read-only into every pod at /etc/rocketmq-tls; the pods do not start
	// without it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="tls.secretName must be the name of a Secret (lower case letters, digits, '-' and '.')"
	// +required
	SecretName string `json:"secretName"`

	// ClientAuth asks clients for a certificate, verified against ca.crt: None, Optional
	// (verified when one is presented) or Require (mutual TLS; the official Go client
	// cannot present one). Brokers present tls.crt to the name servers and to their
	// master, and so does the operator to the brokers.
	// +kubebuilder:default=None
	// +optional
	ClientAuth TLSClientAuth `json:"clientAuth,omitempty"`
}

// Keys of spec.tls.secretName's Secret (cert-manager's and kubernetes.io/tls's names).
const (
	TLSCertKey = "tls.crt"
	TLSKeyKey  = "tls.key"
	TLSCAKey   = "ca.crt"
)

// ConditionTLS, on a Broker with spec.tls, says whether the operator's TLS connections to
// the brokers verify against ca.crt (True, with when the first certificate expires) or
// why not (False: the Secret is missing or unusable, a certificate expired or is not
// signed by ca.crt).
const ConditionTLS = "TLS"
