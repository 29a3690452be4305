#!/usr/bin/env bash
# Builds the two binaries envtest needs, kube-apiserver and etcd, from their Go modules
# (no downloads outside the Go module proxy) and caches them outside the clone, keyed by
# version. Prints the directory that holds them; a second run reuses the cache.
#
#   hack/envtest.sh            # build if missing, print the directory
#
# Environment: ENVTEST_K8S_VERSION (1.37.2), ENVTEST_ETCD_VERSION (3.6.16),
# ENVTEST_CACHE (default: $XDG_CACHE_HOME or ~/.cache, then rocketmq-operator/envtest).
set -euo pipefail

k8s_version=${ENVTEST_K8S_VERSION:-1.37.2}
etcd_version=${ENVTEST_ETCD_VERSION:-3.6.16}
cache_root=${ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rocketmq-operator/envtest}
dir="$cache_root/k8s-$k8s_version-etcd-$etcd_version"

log() { echo "envtest: $*" >&2; }

if [[ -x "$dir/kube-apiserver" && -x "$dir/etcd" ]]; then
  echo "$dir"
  exit 0
fi
mkdir -p "$dir"
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local

build_etcd() {
  [[ -x "$dir/etcd" ]] && return
  local scratch; scratch=$(mktemp -d)
  log "building etcd v$etcd_version (a few minutes)"
  (
    cd "$scratch"
    go mod init envtest.local/etcd >/dev/null 2>&1
    go get "go.etcd.io/etcd/server/v3@v$etcd_version" >&2
    go build -trimpath -o "$dir/etcd.tmp" go.etcd.io/etcd/server/v3
  )
  mv "$dir/etcd.tmp" "$dir/etcd"
  rm -rf "$scratch"
  log "etcd ready"
}

build_apiserver() {
  [[ -x "$dir/kube-apiserver" ]] && return
  local scratch; scratch=$(mktemp -d)
  log "building kube-apiserver v$k8s_version (about ten minutes on two cores)"
  (
    cd "$scratch"
    go mod init envtest.local/apiserver >/dev/null 2>&1
    # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with
    # local paths; outside its repo each must point at the published release instead.
    go mod download -json "k8s.io/kubernetes@v$k8s_version" > kube.json
    gomod=$(sed -n 's/.*"GoMod": "\(.*\)".*/\1/p' kube.json)
    staging=$(awk '/^require \(/{r=1;next} r&&/^\)/{r=0} r&&$2=="v0.0.0"{print $1} /^require k8s.io\/.* v0.0.0$/{print $2}' "$gomod" | sort -u)
    minor=${k8s_version#1.}
    minor=${minor%%.*}
    {
      echo "require k8s.io/kubernetes v$k8s_version"
      for m in $staging; do echo "replace $m => $m v0.${k8s_version#1.}"; done
    } >> go.mod
    log "replaced $(echo "$staging" | wc -w) staging modules with v0.${k8s_version#1.}"
    go get "k8s.io/kubernetes/cmd/kube-apiserver@v$k8s_version" >&2
    # Stamp the version the build would otherwise report as v0.0.0-master.
    pkg=k8s.io/component-base/version
    go build -trimpath -o "$dir/kube-apiserver.tmp" \
      -ldflags "-s -X $pkg.gitVersion=v$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor" \
      k8s.io/kubernetes/cmd/kube-apiserver
  )
  mv "$dir/kube-apiserver.tmp" "$dir/kube-apiserver"
  rm -rf "$scratch"
  log "kube-apiserver ready"
}

build_etcd
build_apiserver
echo "$dir"
