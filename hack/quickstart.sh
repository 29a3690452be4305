#!/usr/bin/env bash
# Runs a local cluster on loopback for stock RocketMQ clients: one name server and, once
# the broker exists (bin/broker), one broker; data lives under the folder given as $1.
# Ctrl-C (or SIGTERM) stops both cleanly: broker first, so it unregisters, then the
# name server.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
data=${1:-$root/.quickstart}
namesrv_port=${NAMESRV_PORT:-9876}
broker_port=${BROKER_PORT:-10911}
mkdir -p "$data/namesrv" "$data/broker"

cat > "$data/namesrv/namesrv.conf" <<CONF
bindAddress=127.0.0.1
listenPort=$namesrv_port
kvConfigPath=$data/namesrv/kvConfig.json
CONF

pids=()
stop() { # exit code
  local rc=$1
  trap - INT TERM EXIT
  echo
  echo "quickstart: stopping"
  # Reverse start order: the broker unregisters while the name server still listens.
  for ((i=${#pids[@]}-1; i>=0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
  echo "quickstart: stopped; data kept in $data"
  exit "$rc"
}
trap 'stop 0' INT TERM
trap 'stop $?' EXIT

wait_for_port() { # name port
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "quickstart: $1 did not listen on 127.0.0.1:$2 (log: $data/$1.log)" >&2
  exit 1
}

"$root/bin/namesrv" -c "$data/namesrv/namesrv.conf" > "$data/namesrv.log" 2>&1 &
pids+=($!)
wait_for_port namesrv "$namesrv_port"

if [[ -x "$root/bin/broker" ]]; then
  cat > "$data/broker/broker.conf" <<CONF
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
brokerIP1=127.0.0.1
listenPort=$broker_port
storePathRootDir=$data/broker/store
autoCreateTopicEnable=true
autoCreateSubscriptionGroup=true
flushDiskType=ASYNC_FLUSH
CONF
  "$root/bin/broker" -n "127.0.0.1:$namesrv_port" -c "$data/broker/broker.conf" > "$data/broker.log" 2>&1 &
  pids+=($!)
  wait_for_port broker "$broker_port"
fi

cat <<MSG

RocketMQ quickstart cluster is up (data in $data, logs in $data/*.log):
  name server   127.0.0.1:$namesrv_port     (clients: namesrvAddr / NAMESRV_ADDR)
MSG
if [[ -x "$root/bin/broker" ]]; then
  echo "  broker-a      127.0.0.1:$broker_port    (cluster DefaultCluster, auto-create topics on)"
else
  echo "  (no broker yet: bin/broker is not built; the name server runs alone)"
fi
echo
echo "Press Ctrl-C to stop."
wait -n "${pids[@]}" || true
echo "quickstart: a process exited on its own; see $data/*.log" >&2
exit 1
