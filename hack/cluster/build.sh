#!/usr/bin/env bash
# Builds every binary the single-node cluster needs from the Go module proxy and caches it
# outside the clone, keyed by version; prints the directory that holds them. A second run
# reuses the cache. kube-apiserver and etcd come from hack/envtest.sh (the same build
# envtest uses); the other Kubernetes commands are built in one `go build` after it, so
# most of their packages come from the shared build cache.
#
#   hack/cluster/build.sh      # build what is missing, print the directory
#
# Environment: CLUSTER_K8S_VERSION (1.37.2), CLUSTER_COREDNS_VERSION (1.15.0),
# CLUSTER_CACHE (default: $XDG_CACHE_HOME or ~/.cache, then rocketmq-operator/cluster).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
k8s_version=${CLUSTER_K8S_VERSION:-1.37.2}
coredns_version=${CLUSTER_COREDNS_VERSION:-1.15.0}
cache_root=${CLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rocketmq-operator/cluster}
dir="$cache_root/k8s-$k8s_version-coredns-$coredns_version"
k8s_cmds=(kubelet kube-controller-manager kube-scheduler kube-proxy kubectl)

log() { echo "cluster-build: $*" >&2; }
now() { date +%s; }
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local

complete() {
  local b
  for b in kube-apiserver etcd "${k8s_cmds[@]}" coredns pause; do
    [[ -x "$dir/$b" ]] || return 1
  done
}
if complete; then
  echo "$dir"
  exit 0
fi
mkdir -p "$dir"

link_envtest() {
  local envdir
  envdir=$(ENVTEST_K8S_VERSION=$k8s_version "$repo/hack/envtest.sh")
  ln -sf "$envdir/kube-apiserver" "$dir/kube-apiserver"
  ln -sf "$envdir/etcd" "$dir/etcd"
}

build_k8s() {
  local missing=() c
  for c in "${k8s_cmds[@]}"; do [[ -x "$dir/$c" ]] || missing+=("$c"); done
  [[ ${#missing[@]} -eq 0 ]] && return
  local t0; t0=$(now)
  local scratch; scratch=$(mktemp -d)
  log "building ${missing[*]} v$k8s_version in one go build (about 5 minutes on two cores after kube-apiserver)"
  (
    cd "$scratch"
    go mod init cluster.local/k8s >/dev/null 2>&1
    # As in hack/envtest.sh: each staging module k8s.io/kubernetes requires at v0.0.0 points
    # at its published release.
    go mod download -json "k8s.io/kubernetes@v$k8s_version" > kube.json
    gomod=$(sed -n 's/.*"GoMod": "\(.*\)".*/\1/p' kube.json)
    staging=$(awk '/^require \(/{r=1;next} r&&/^\)/{r=0} r&&$2=="v0.0.0"{print $1} /^require k8s.io\/.* v0.0.0$/{print $2}' "$gomod" | sort -u)
    {
      echo "require k8s.io/kubernetes v$k8s_version"
      for m in $staging; do echo "replace $m => $m v0.${k8s_version#1.}"; done
    } >> go.mod
    pkgs=()
    for c in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
    for p in "${pkgs[@]}"; do go get "$p@v$k8s_version" >&2; done
    minor=${k8s_version#1.}; minor=${minor%%.*}
    ldflags="-s -w"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ldflags+=" -X $pkg.gitVersion=v$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    done
    mkdir out
    go build -trimpath -ldflags "$ldflags" -o out/ "${pkgs[@]}"
    for c in "${missing[@]}"; do mv "out/$c" "$dir/$c"; done
  )
  rm -rf "$scratch"
  log "kubernetes commands ready ($(( $(now) - t0 )) s)"
}

# CoreDNS with only what a cluster-local resolver needs. No forward plugin: no query can
# leave the node.
build_coredns() {
  [[ -x "$dir/coredns" ]] && return
  local t0; t0=$(now)
  local scratch; scratch=$(mktemp -d)
  log "building coredns v$coredns_version (kubernetes, cache, errors, health, ready, loadbalance, log)"
  (
    cd "$scratch"
    go mod init cluster.local/coredns >/dev/null 2>&1
    cat > main.go <<'GO'
// Command coredns is CoreDNS with the plugins of a cluster-local resolver only.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	dnsserver.Directives = []string{"ready", "health", "errors", "log", "loadbalance", "cache", "kubernetes"}
}

func main() { coremain.Run() }
GO
    go get "github.com/coredns/coredns@v$coredns_version" >&2
    # The Kubernetes modules at the release the other binaries use, so most of their
    # compiled packages come from the build cache; no `go mod tidy`, which would fetch
    # every test dependency of CoreDNS.
    go get "k8s.io/api@v0.${k8s_version#1.}" "k8s.io/apimachinery@v0.${k8s_version#1.}" \
      "k8s.io/client-go@v0.${k8s_version#1.}" >&2
    go build -trimpath -ldflags "-s -w" -o coredns .
    mv coredns "$dir/coredns"
  )
  rm -rf "$scratch"
  log "coredns ready ($(( $(now) - t0 )) s)"
}

build_pause() {
  [[ -x "$dir/pause" ]] && return
  (cd "$repo" && go build -trimpath -ldflags "-s -w" -o "$dir/pause" ./hack/cluster/pause)
}

t0=$(now)
link_envtest
build_pause
build_k8s
build_coredns
log "all binaries in $dir ($(( $(now) - t0 )) s)"
echo "$dir"
