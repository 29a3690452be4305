#!/usr/bin/env bash
# make test-k8s: the end-to-end suite on a real single-node Kubernetes (test/e2e-k8s).
# Builds the image (make image), brings the cluster up unless it runs already
# (hack/cluster/up.sh, which fails with the reason when it cannot start: the suite is never
# skipped), runs the Ginkgo suite, and stops the cluster again if this script started it.
#
# Environment: PROMETHEUS_VERSION and PROMETHEUS_CACHE (hack/prometheus.sh), CLUSTER_DIR, CLUSTER_KEEP=1 (leave a cluster this script started running),
# K8S_E2E_FOCUS (a Ginkgo focus regexp), GO (go), and those of hack/compat.sh for the jars.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
GO=${GO:-go}
log() { echo "test-k8s: $*" >&2; }
now() { date +%s; }
t0=$(now)

make --no-print-directory image
t_image=$(( $(now) - t0 ))

D=${CLUSTER_DIR:-/var/tmp/rocketmq-operator-cluster}
started=0
if [[ ! -f $D/up ]]; then started=1; fi
t1=$(now)
kubeconfig=$(hack/cluster/up.sh) || { log "FAILED: the cluster did not start (see above and $D/logs)"; exit 1; }
t_cluster=$(( $(now) - t1 ))
cleanup() {
  if [[ $started == 1 && ${CLUSTER_KEEP:-0} != 1 ]]; then hack/cluster/down.sh || true; fi
}
trap cleanup EXIT

# The official Java client's jars (cached; fetched from Maven Central once).
t2=$(now)
lib=$(hack/compat.sh --fetch-only)
t_jars=$(( $(now) - t2 ))

# A Prometheus server (built once from its Go module, cached; hack/prometheus.sh) that
# scrapes the pods through the chart's ServiceMonitors.
t4=$(now)
export K8S_E2E_PROMETHEUS=$(hack/prometheus.sh prometheus)
t_prom=$(( $(now) - t4 ))

t3=$(now)
export K8S_E2E_KUBECONFIG=$kubeconfig
export K8S_E2E_KUBECTL=$(hack/cluster/build.sh)/kubectl
export K8S_E2E_CONTAINERD=$D/containerd/containerd.sock
export K8S_E2E_IMAGE_TAR=$repo/bin/image.tar
export K8S_E2E_JARS=$lib
args=(-count=1 -timeout 40m -tags k8s ./test/e2e-k8s/ -v -args -ginkgo.v)
[[ -n ${K8S_E2E_FOCUS:-} ]] && args+=(-ginkgo.focus "$K8S_E2E_FOCUS")
status=0
"$GO" test "${args[@]}" || status=$?
log "times: image ${t_image}s, cluster up ${t_cluster}s, jars ${t_jars}s, prometheus ${t_prom}s, suite $(( $(now) - t3 ))s, total $(( $(now) - t0 ))s"
exit $status
