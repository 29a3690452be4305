#!/usr/bin/env bash
# make cluster-down: stops every process hack/cluster/up.sh started, by the PIDs it kept,
# in reverse order (the API server before etcd, or it hangs), unmounts what the kubelet and
# containerd mounted under the cluster's folder, removes kube-proxy's rules, the guards and
# the bridge, restores the sysctls it changed, and deletes the folder. Safe to run twice.
#
# Environment: CLUSTER_DIR (/var/tmp/rocketmq-operator-cluster).
set -uo pipefail

D=${CLUSTER_DIR:-/var/tmp/rocketmq-operator-cluster}
BRIDGE=cni0
POD_CIDR=10.244.0.0/24
log() { echo "cluster-down: $*" >&2; }

stop() { # name: SIGTERM, then SIGKILL after a grace period
  local f="$D/pids/$1" pid
  [[ -f $f ]] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    local i
    for ((i = 0; i < 40; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null; log "killed $1 (pid $pid)"; else log "stopped $1 (pid $pid)"; fi
  fi
  rm -f "$f"
}

if [[ -d $D ]]; then
  # Pods first, while the runtime still runs: their shims and containers are children of
  # containerd-shim processes that containerd started, not of this script.
  if [[ -S $D/containerd/containerd.sock ]] && command -v crictl >/dev/null 2>&1; then :; fi
  stop provisioner
  stop kube-proxy
  stop kubelet
  if [[ -S $D/containerd/containerd.sock ]]; then
    ctr_() { ctr --address "$D/containerd/containerd.sock" -n k8s.io "$@"; }
    # Stop every task the kubelet left (pods' containers and sandboxes), then the shims exit.
    for t in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s KILL "$t" >/dev/null 2>&1; done
    sleep 1
    for t in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$t" >/dev/null 2>&1; done
  fi
  stop containerd
  # Shims that outlived containerd: ours have our socket's address on their command line.
  for p in $(pgrep -f "containerd-shim-runc-v2 .*-address $D/containerd/containerd.sock" 2>/dev/null); do
    kill -KILL "$p" 2>/dev/null && log "killed leftover shim (pid $p)"
  done
  stop kube-scheduler
  stop kube-controller-manager
  stop kube-apiserver
  stop etcd
  # Mounts under the cluster's folder, deepest first: volumes, overlay snapshots, netns.
  for m in $(awk -v d="$D" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
  done
  # Network namespaces of pods (the CNI plugin's, under /run/netns, named cni-*).
  for ns in $(ip netns list 2>/dev/null | awk '/^cni-/{print $1}'); do ip netns delete "$ns" 2>/dev/null; done
fi

# kube-proxy's chains and rules, in every table it uses.
for t in filter nat mangle; do
  iptables -t "$t" -S 2>/dev/null | grep -E '^-A .*KUBE-' | sed 's/^-A/-D/' | while read -r rule; do
    eval iptables -t "$t" "$rule" 2>/dev/null
  done
  for c in $(iptables -t "$t" -S 2>/dev/null | awk '/^-N KUBE-/{print $2}'); do iptables -t "$t" -F "$c" 2>/dev/null; done
  for c in $(iptables -t "$t" -S 2>/dev/null | awk '/^-N KUBE-/{print $2}'); do iptables -t "$t" -X "$c" 2>/dev/null; done
done
# CNI's bridge plugin chains (CNI-*) in nat and filter, if any.
for t in filter nat; do
  iptables -t "$t" -S 2>/dev/null | grep -E '^-A .*CNI-' | sed 's/^-A/-D/' | while read -r rule; do eval iptables -t "$t" "$rule" 2>/dev/null; done
  for c in $(iptables -t "$t" -S 2>/dev/null | awk '/^-N CNI-/{print $2}'); do iptables -t "$t" -F "$c" 2>/dev/null; iptables -t "$t" -X "$c" 2>/dev/null; done
done
# The guards go last, after forwarding is off again.
if [[ -f $D/sysctl.saved ]]; then
  while IFS= read -r kv; do sysctl -qw "$kv" 2>/dev/null; done < "$D/sysctl.saved"
else
  sysctl -qw net.ipv4.ip_forward=0
fi
while iptables -t mangle -D POSTROUTING -s "$POD_CIDR" ! -o "$BRIDGE" ! -d "$POD_CIDR" -j DROP 2>/dev/null; do :; done
while iptables -t mangle -D FORWARD -j RMQ-GUARD 2>/dev/null; do :; done
iptables -t mangle -F RMQ-GUARD 2>/dev/null && iptables -t mangle -X RMQ-GUARD 2>/dev/null
# Pods' veths go with their namespaces; then the bridge.
ip link show "$BRIDGE" >/dev/null 2>&1 && ip link delete "$BRIDGE" && log "removed bridge $BRIDGE"
if [[ -d $D ]]; then
  rm -rf "$D" 2>/dev/null || log "warning: could not remove all of $D (still mounted?)"
fi
log "done"
