#!/usr/bin/env bash
# Copies the generated CRDs (config/crd/bases, written by `make manifests`) into the Helm
# chart's crds/ folder, so the chart always installs the same schema as kustomize.
#
#   hack/sync-chart-crds.sh          # copy
#   hack/sync-chart-crds.sh --check  # exit 1 if the chart's copy is stale
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/config/crd/bases"
dst="$root/charts/rocketmq-operator/crds"

if [[ "${1:-}" == "--check" ]]; then
  diff -r "$src" "$dst" >/dev/null || { echo "chart CRDs are stale: run make manifests" >&2; exit 1; }
  exit 0
fi
mkdir -p "$dst"
rm -f "$dst"/*.yaml
cp "$src"/*.yaml "$dst"/
