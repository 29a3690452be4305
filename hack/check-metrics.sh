#!/usr/bin/env bash
# Runs promtool check metrics (Prometheus' linter: HELP, types, names, units) on what a
# real name server and broker serve after some traffic. promtool is built once from its Go
# module (github.com/prometheus/prometheus/cmd/promtool, hack/prometheus.sh) into a cache
# outside the clone; the build takes a few minutes. Everything runs on loopback and is
# stopped on exit.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
promtool=$("$root/hack/prometheus.sh" promtool)

data=$(mktemp -d)
pids=()
cleanup() {
  for ((i=${#pids[@]}-1; i>=0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
  rm -rf "$data"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_for_port() { # port
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "check-metrics: nothing listens on 127.0.0.1:$1; logs in $data" >&2
  cat "$data"/*.log >&2
  exit 1
}

ns_port=$(free_port); ns_metrics=$(free_port); br_metrics=$(free_port)
br_port=$(free_port)
while [[ $br_port -lt 2000 ]]; do br_port=$(free_port); done

cat > "$data/namesrv.conf" <<CONF
bindAddress=127.0.0.1
listenPort=$ns_port
kvConfigPath=$data/kvConfig.json
metricsExporterType=PROM
metricsPromExporterHost=127.0.0.1
metricsPromExporterPort=$ns_metrics
CONF
cat > "$data/broker.conf" <<CONF
brokerName=broker-check
brokerIP1=127.0.0.1
listenPort=$br_port
storePathRootDir=$data/store
mappedFileSizeCommitLog=67108864
metricsExporterType=PROM
metricsPromExporterHost=127.0.0.1
metricsPromExporterPort=$br_metrics
CONF
"$root/bin/namesrv" -c "$data/namesrv.conf" > "$data/namesrv.log" 2>&1 &
pids+=($!)
wait_for_port "$ns_port"
"$root/bin/broker" -c "$data/broker.conf" -n "127.0.0.1:$ns_port" > "$data/broker.log" 2>&1 &
pids+=($!)
wait_for_port "$br_port"
wait_for_port "$br_metrics"

# Some traffic, so that the per-topic and per-group families have series.
"$root/bin/rmqbench" producer -n "127.0.0.1:$ns_port" -t CheckMetrics -c -q 2 -w 2 -s 128 -d 3s > "$data/producer.log" 2>&1
"$root/bin/rmqbench" consumer -n "127.0.0.1:$ns_port" -t CheckMetrics -g check_metrics -d 3s > "$data/consumer.log" 2>&1 || true

rc=0
for target in "name server:$ns_metrics" "broker:$br_metrics"; do
  name=${target%%:*} port=${target##*:}
  curl -sf "http://127.0.0.1:$port/metrics" > "$data/$port.txt"
  series=$(grep -c '^rocketmq_' "$data/$port.txt" || true)
  if "$promtool" check metrics < "$data/$port.txt"; then
    echo "check-metrics: $name: promtool check metrics clean ($series rocketmq_* series)"
  else
    echo "check-metrics: $name: promtool found problems" >&2
    rc=1
  fi
done
exit $rc
