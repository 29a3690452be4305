#!/usr/bin/env bash
# Builds (once) and prints the path of a Prometheus command from its Go module,
# github.com/prometheus/prometheus at $PROMETHEUS_VERSION, cached outside the clone and keyed
# by version. promtool (make check-metrics) and the server the real-cluster suite scrapes
# with (make test-k8s) come from the same module version.
#
#   hack/prometheus.sh promtool      # prints .../promtool-v0.316.0-kubernetes-sd/promtool
#   hack/prometheus.sh prometheus    # prints .../prometheus-v0.316.0-kubernetes-sd/prometheus
#
# `go install pkg@version` builds with the module's own go.mod (and its replace
# directives), so none of Prometheus' dependencies enter ours. The server is built without
# the builtinassets tag: no web UI, the HTTP API (/api/v1/...) is all the suite uses; and
# with Kubernetes service discovery only (remove_all_sd,enable_kubernetes_sd): the cloud
# providers' SDKs the other discoveries bring are most of a full build's time.
# Progress goes to stderr; the build takes minutes on two cores (the first one more).
#
# Environment: PROMETHEUS_VERSION (v0.316.0), PROMETHEUS_CACHE (default
# ~/.cache/rocketmq-operator), PROMTOOL_VERSION (older name of PROMETHEUS_VERSION).
set -euo pipefail

cmd=${1:?usage: hack/prometheus.sh promtool|prometheus}
case $cmd in promtool|prometheus) ;; *) echo "prometheus.sh: unknown command $cmd" >&2; exit 2 ;; esac
version=${PROMETHEUS_VERSION:-${PROMTOOL_VERSION:-v0.316.0}}
cache_root=${PROMETHEUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rocketmq-operator}
tags=remove_all_sd,enable_kubernetes_sd
dir=$cache_root/$cmd-$version-kubernetes-sd
bin=$dir/$cmd
if [[ ! -x $bin ]]; then
  t0=$(date +%s)
  echo "prometheus.sh: building $cmd $version from github.com/prometheus/prometheus/cmd/$cmd into $dir (a few minutes)" >&2
  mkdir -p "$dir"
  tmp=$(mktemp -d "$dir/.build.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && CGO_ENABLED=0 GOBIN=$tmp GOFLAGS= GOTOOLCHAIN=local \
    nice go install -trimpath -tags "$tags" -ldflags '-s -w' "github.com/prometheus/prometheus/cmd/$cmd@$version" >&2)
  mv "$tmp/$cmd" "$bin"
  echo "prometheus.sh: $cmd $version built in $(( $(date +%s) - t0 )) s" >&2
fi
echo "$bin"
