#!/usr/bin/env bash
# Copies what `make manifests` generates into the Helm chart, so the chart installs the same
# schema and permissions as kustomize:
#   config/crd/bases/*.yaml  -> charts/rocketmq-operator/crds/
#   config/rbac/role.yaml    -> charts/rocketmq-operator/files/manager-role.yaml
#
#   hack/sync-chart-crds.sh          # copy
#   hack/sync-chart-crds.sh --check  # exit 1 if the chart's copies are stale
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
chart="$root/charts/rocketmq-operator"

if [[ "${1:-}" == "--check" ]]; then
  diff -r "$root/config/crd/bases" "$chart/crds" >/dev/null &&
    diff "$root/config/rbac/role.yaml" "$chart/files/manager-role.yaml" >/dev/null ||
    { echo "chart copies are stale: run make manifests" >&2; exit 1; }
  exit 0
fi
mkdir -p "$chart/crds" "$chart/files"
rm -f "$chart/crds"/*.yaml
cp "$root/config/crd/bases"/*.yaml "$chart/crds/"
cp "$root/config/rbac/role.yaml" "$chart/files/manager-role.yaml"
