#!/usr/bin/env bash
# make cluster-up: a single-node Kubernetes on this machine, everything from package
# registries (hack/cluster/build.sh builds the binaries from Go modules; containerd, runc
# and the CNI plugins come from Debian). Facts behind the settings: ../shared/local-cluster.md.
#
# Networking stays on the machine: the node is the bridge cni0 (10.244.0.1/24) that this
# script creates; pods live on it; iptables guards drop every pod packet that would leave
# it, and nothing masquerades to the outside. Every server binds to loopback or 10.244.0.1.
# Services are 10.96.0.0/16 (kubernetes 10.96.0.1, kube-dns 10.96.0.10).
#
# Every process it starts runs in the background with its PID in $CLUSTER_DIR/pids and its
# log in $CLUSTER_DIR/logs; hack/cluster/down.sh stops them by PID and undoes the rest. A
# second cluster-up while the cluster runs does nothing.
#
# Environment: CLUSTER_DIR (/var/tmp/rocketmq-operator-cluster), and those of build.sh.
# Prints the admin kubeconfig's path last.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
D=${CLUSTER_DIR:-/var/tmp/rocketmq-operator-cluster}
NODE=node1
NODE_IP=10.244.0.1
POD_CIDR=10.244.0.0/24
SVC_CIDR=10.96.0.0/16
DNS_IP=10.96.0.10
BRIDGE=cni0
PAUSE_IMAGE=registry.k8s.io/pause:3.10
COREDNS_IMAGE=rocketmq-operator.test/coredns:${CLUSTER_COREDNS_VERSION:-1.15.0}

log() { echo "cluster-up: $*" >&2; }
die() { echo "cluster-up: FAILED: $*" >&2; exit 1; }
now() { date +%s; }
t0=$(now)

[[ $(id -u) == 0 ]] || die "needs root (bridge, iptables, containerd, kubelet)"

kubectl_() { "$BIN/kubectl" --kubeconfig "$D/pki/admin.kubeconfig" "$@"; }

running() { # name: its PID file names a live process
  local f="$D/pids/$1"
  [[ -f $f ]] && kill -0 "$(cat "$f")" 2>/dev/null
}

if [[ -f $D/up ]] && running kube-apiserver && running kubelet; then
  log "already running (state in $D); hack/cluster/down.sh stops it"
  echo "$D/pki/admin.kubeconfig"
  exit 0
fi
if [[ -d $D/pids ]] && compgen -G "$D/pids/*" >/dev/null; then
  log "a previous cluster was not stopped cleanly: stopping it first"
  "$repo/hack/cluster/down.sh"
fi

# --- binaries and packages ----------------------------------------------------------------
BIN=$("$repo/hack/cluster/build.sh")
missing=()
for c in containerd ctr runc iptables conntrack; do command -v "$c" >/dev/null || missing+=("$c"); done
[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/portmap ]] || missing+=(cni)
if [[ ${#missing[@]} -gt 0 ]]; then
  log "installing containerd, runc, CNI plugins, iptables, conntrack from Debian (missing: ${missing[*]})"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 || die "apt-get update failed"
  apt-get install -y -qq containerd runc containernetworking-plugins iptables conntrack >&2 \
    || die "apt-get install containerd runc containernetworking-plugins iptables conntrack failed"
fi
# A provisioner for the default StorageClass (a host process, see its doc).
(cd "$repo" && CGO_ENABLED=0 go build -o "$BIN/rmq-provisioner" ./hack/cluster/provisioner) || die "building hack/cluster/provisioner"

mkdir -p "$D"/{pids,logs,pki,etcd,kubelet,pod-logs,volumes,cni/net.d,cni/ipam,containerd,images}

start() { # name cmd...: run in the background, PID and log kept
  local name=$1; shift
  setsid "$@" >>"$D/logs/$name.log" 2>&1 < /dev/null &
  echo $! > "$D/pids/$name"
  log "started $name (pid $!, log $D/logs/$name.log)"
}

wait_for() { # what seconds cmd...
  local what=$1 secs=$2; shift 2
  local i
  for ((i = 0; i < secs * 2; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  die "$what not up after ${secs}s; see $D/logs"
}

# --- network: the bridge and the guards, before anything can forward ----------------------
if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
  ip link add "$BRIDGE" type bridge
fi
ip addr replace "$NODE_IP/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
iptables -t mangle -N RMQ-GUARD 2>/dev/null || iptables -t mangle -F RMQ-GUARD
iptables -t mangle -A RMQ-GUARD -i "$BRIDGE" ! -o "$BRIDGE" -j DROP
iptables -t mangle -C FORWARD -j RMQ-GUARD 2>/dev/null || iptables -t mangle -I FORWARD 1 -j RMQ-GUARD
iptables -t mangle -C POSTROUTING -s "$POD_CIDR" ! -o "$BRIDGE" ! -d "$POD_CIDR" -j DROP 2>/dev/null \
  || iptables -t mangle -I POSTROUTING 1 -s "$POD_CIDR" ! -o "$BRIDGE" ! -d "$POD_CIDR" -j DROP
# Keep the values to restore on teardown.
[[ -f $D/sysctl.saved ]] || {
  echo "net.ipv4.ip_forward=$(sysctl -n net.ipv4.ip_forward)"
  echo "net.bridge.bridge-nf-call-iptables=$(sysctl -n net.bridge.bridge-nf-call-iptables 2>/dev/null || echo 0)"
} > "$D/sysctl.saved"
sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || log "warning: cannot set net.bridge.bridge-nf-call-iptables"
sysctl -qw net.ipv4.ip_forward=1
log "bridge $BRIDGE $NODE_IP/24 with guards: no pod packet leaves it"

cat > "$D/cni/net.d/10-rmq.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "rmq",
  "plugins": [
    {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$D/cni/ipam", "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON

# --- PKI -----------------------------------------------------------------------------------
pki() {
  local P=$D/pki
  [[ -f $P/.complete ]] && return
  log "making the CA, serving and client certificates (openssl)"
  openssl genrsa -out "$P/ca.key" 2048 2>/dev/null
  openssl req -x509 -new -key "$P/ca.key" -days 3650 -subj "/CN=rmq-test-ca" -out "$P/ca.crt" 2>/dev/null
  openssl genrsa -out "$P/sa.key" 2048 2>/dev/null
  openssl rsa -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null
  cert() { # name subject [sans]
    local name=$1 subj=$2 sans=${3:-}
    openssl genrsa -out "$P/$name.key" 2048 2>/dev/null
    openssl req -new -key "$P/$name.key" -subj "$subj" -out "$P/$name.csr" 2>/dev/null
    local ext="$P/$name.ext"
    {
      echo "basicConstraints=CA:FALSE"
      echo "keyUsage=digitalSignature,keyEncipherment"
      if [[ -n $sans ]]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=$sans"
      else echo "extendedKeyUsage=clientAuth"; fi
    } > "$ext"
    openssl x509 -req -in "$P/$name.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -days 3650 \
      -extfile "$ext" -out "$P/$name.crt" 2>/dev/null
  }
  cert apiserver "/CN=kube-apiserver" \
    "IP:$NODE_IP,IP:127.0.0.1,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  cert admin "/O=system:masters/CN=admin"
  cert controller-manager "/CN=system:kube-controller-manager"
  cert scheduler "/CN=system:kube-scheduler"
  cert proxy "/CN=system:kube-proxy"
  cert kubelet-client "/O=system:nodes/CN=system:node:$NODE"
  cert kubelet "/CN=$NODE" "IP:$NODE_IP,DNS:$NODE"
  for u in admin:admin controller-manager:controller-manager scheduler:scheduler proxy:proxy kubelet:kubelet-client; do
    cat > "$P/${u%%:*}.kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: rmq
  cluster: {server: "https://$NODE_IP:6443", certificate-authority: "$P/ca.crt"}
users:
- name: ${u%%:*}
  user: {client-certificate: "$P/${u#*:}.crt", client-key: "$P/${u#*:}.key"}
contexts:
- name: rmq
  context: {cluster: rmq, user: ${u%%:*}}
current-context: rmq
YAML
  done
  touch "$P/.complete"
}
pki
P=$D/pki

# --- control plane -------------------------------------------------------------------------
start etcd "$BIN/etcd" --name node1 --data-dir "$D/etcd" \
  --listen-client-urls http://127.0.0.1:12379 --advertise-client-urls http://127.0.0.1:12379 \
  --listen-peer-urls http://127.0.0.1:12380 --initial-advertise-peer-urls http://127.0.0.1:12380 \
  --initial-cluster node1=http://127.0.0.1:12380 --listen-metrics-urls http://127.0.0.1:12381 \
  --unsafe-no-fsync --quota-backend-bytes 2147483648
wait_for etcd 30 curl -sf http://127.0.0.1:12381/health

start kube-apiserver "$BIN/kube-apiserver" --etcd-servers http://127.0.0.1:12379 \
  --bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port 6443 \
  --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
  --service-cluster-ip-range "$SVC_CIDR" --allow-privileged=true \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$P/sa.pub" --service-account-signing-key-file "$P/sa.key" \
  --client-ca-file "$P/ca.crt" --tls-cert-file "$P/apiserver.crt" --tls-private-key-file "$P/apiserver.key" \
  --kubelet-client-certificate "$P/apiserver-kubelet-client.crt" --kubelet-client-key "$P/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority "$P/ca.crt" --kubelet-preferred-address-types InternalIP \
  --profiling=false
wait_for kube-apiserver 90 kubectl_ get --raw /readyz

start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$P/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$P/controller-manager.kubeconfig" --authorization-kubeconfig "$P/controller-manager.kubeconfig" \
  --bind-address 127.0.0.1 --use-service-account-credentials --service-account-private-key-file "$P/sa.key" \
  --root-ca-file "$P/ca.crt" --cluster-signing-cert-file "$P/ca.crt" --cluster-signing-key-file "$P/ca.key" \
  --controllers '*' --leader-elect=false --profiling=false
start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$P/scheduler.kubeconfig" \
  --authentication-kubeconfig "$P/scheduler.kubeconfig" --authorization-kubeconfig "$P/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false --profiling=false

# --- containerd ----------------------------------------------------------------------------
C=$D/containerd
cat > "$C/config.toml" <<TOML
version = 2
root = "$C/root"
state = "$C/state"
[grpc]
  address = "$C/containerd.sock"
[ttrpc]
  address = "$C/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$C/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # This VM refuses negative oom_score_adj; without it every sandbox fails.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$D/cni/net.d"
TOML
start containerd containerd --config "$C/config.toml"
wait_for containerd 30 ctr --address "$C/containerd.sock" version
ctr_() { ctr --address "$C/containerd.sock" -n k8s.io "$@"; }

# Images of the cluster itself, made like the project's (hack/ociimage).
image() { # tag binary tarball
  (cd "$repo" && go run ./hack/ociimage -bin "$BIN" -binaries "$2" -entrypoint "/$2" -user 0 -title "$2" -tag "$1" -out "$3") >&2
  ctr_ images import "$3" >&2
}
image "$PAUSE_IMAGE" pause "$D/images/pause.tar"
image "$COREDNS_IMAGE" coredns "$D/images/coredns.tar"

# --- node ----------------------------------------------------------------------------------
echo "nameserver $DNS_IP" > "$D/resolv.conf"
cat > "$D/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$P/ca.crt"}
authorization: {mode: Webhook}
tlsCertFile: "$P/kubelet.crt"
tlsPrivateKeyFile: "$P/kubelet.key"
cgroupDriver: cgroupfs
failCgroupV1: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
localStorageCapacityIsolation: false
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%", imagefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
clusterDNS: [$DNS_IP]
clusterDomain: cluster.local
resolvConf: "$D/resolv.conf"
podLogsDir: "$D/pod-logs"
containerRuntimeEndpoint: "unix://$C/containerd.sock"
serializeImagePulls: false
YAML
start kubelet "$BIN/kubelet" --config "$D/kubelet.yaml" --kubeconfig "$P/kubelet.kubeconfig" \
  --root-dir "$D/kubelet" --node-ip "$NODE_IP" --hostname-override "$NODE"

cat > "$D/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$P/proxy.kubeconfig"}
hostnameOverride: $NODE
mode: iptables
clusterCIDR: $POD_CIDR
iptables: {masqueradeAll: true}
nodePortAddresses: ["$NODE_IP/32"]
bindAddress: $NODE_IP
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0}
YAML
start kube-proxy "$BIN/kube-proxy" --config "$D/kube-proxy.yaml"
start provisioner "$BIN/rmq-provisioner" -kubeconfig "$P/admin.kubeconfig" -root "$D/volumes" -node "$NODE"

node_ready() { [[ $(kubectl_ get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]]; }
wait_for "node $NODE Ready" 120 node_ready
log "node $NODE Ready"

# --- cluster add-ons: CoreDNS, the default StorageClass ------------------------------------
kubectl_ apply -f - >&2 <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local-dir
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: rocketmq-operator.test/local-dir
reclaimPolicy: Delete
volumeBindingMode: Immediate
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: system:coredns}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: system:coredns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:coredns}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  # No forward plugin: names outside the cluster do not resolve, no query leaves the node.
  Corefile: |
    .:53 {
        errors
        health :8080
        ready :8181
        kubernetes cluster.local in-addr.arpa ip6.arpa {
            pods insecure
        }
        cache 30
        loadbalance
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      dnsPolicy: Default
      containers:
      - name: coredns
        image: $COREDNS_IMAGE
        imagePullPolicy: Never
        args: [-conf, /etc/coredns/Corefile]
        ports:
        - {name: dns, containerPort: 53, protocol: UDP}
        - {name: dns-tcp, containerPort: 53, protocol: TCP}
        resources: {requests: {cpu: 100m, memory: 70Mi}}
        readinessProbe: {httpGet: {path: /ready, port: 8181}, periodSeconds: 2}
        livenessProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 10}
        volumeMounts: [{name: config, mountPath: /etc/coredns}]
      volumes: [{name: config, configMap: {name: coredns}}]
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: $DNS_IP
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
YAML
kubectl_ -n kube-system rollout status deployment/coredns --timeout=120s >&2 || die "CoreDNS not ready"
touch "$D/up"
log "cluster ready in $(( $(now) - t0 )) s; export KUBECONFIG=$P/admin.kubeconfig (kubectl: $BIN/kubectl)"
echo "$P/admin.kubeconfig"
