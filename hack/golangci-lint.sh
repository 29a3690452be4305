#!/usr/bin/env bash
# Runs golangci-lint (.golangci.yml) over the tree, building the pinned version once into
# a cache outside the clone, as hack/envtest.sh and hack/check-metrics.sh build their
# tools.
#
# Why not `go get -tool` like controller-gen: golangci-lint's module graph raises modules
# the broker, the operator and their tests build with (golang.org/x/tools, x/net, x/mod,
# logrus, google/pprof, go.uber.org/atomic) and adds some 200 lines to go.mod; a tool
# directive shares go.mod with the build, so linting would change what ships. Built from
# its own module at a fixed version (`go install ...@version` uses that module's go.mod
# and go.sum, checked against the checksum database), the binary is the same on every
# machine and go.mod stays the product's.
#
#   hack/golangci-lint.sh [golangci-lint run flags]   # default: run ./...
#
# Environment: GOLANGCI_LINT_VERSION (v2.15.0), GOLANGCI_LINT_CACHE (default
# $XDG_CACHE_HOME or ~/.cache, then rocketmq-operator/golangci-lint-<version>).
set -euo pipefail

version=${GOLANGCI_LINT_VERSION:-v2.15.0}
cache=${GOLANGCI_LINT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rocketmq-operator/golangci-lint-$version}
bin=$cache/golangci-lint
if [[ ! -x $bin ]]; then
  echo "lint: building golangci-lint $version into $cache (a few minutes, once)" >&2
  mkdir -p "$cache"
  (cd "$cache" && GOBIN=$cache GOFLAGS= GOTOOLCHAIN=local CGO_ENABLED=0 \
    go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$version")
fi
cd "$(dirname "$0")/.."
if [[ $# -eq 0 ]]; then
  set -- ./...
fi
exec "$bin" run "$@"
