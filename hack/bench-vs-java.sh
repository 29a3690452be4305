#!/usr/bin/env bash
# Head-to-head benchmark (make bench-java): our broker (bin/broker) against the Apache
# RocketMQ 4.9.7 Java broker, driven by bin/rmqbench (or the official Java client) over the
# real protocol on loopback, with the same broker settings; prints one markdown comparison
# table per load generator.
#
#   hack/bench-vs-java.sh                       # everything, ~4 minutes
#   BENCH_THREADS=32 BENCH_DURATION=60s hack/bench-vs-java.sh
#   BENCH_BROKERS=java BENCH_SYNC_FLUSH=0 hack/bench-vs-java.sh
#   BENCH_CLIENT=java hack/bench-vs-java.sh     # the same runs on the official Java client
#   BENCH_CLIENT="go java" hack/bench-vs-java.sh   # both, one table each, twice as long
#
# The load generator (BENCH_CLIENT, default go): "go" is bin/rmqbench (cmd/rmqbench, on our
# pkg/client); "java" is test/compat/java/src/org/openrmq/bench/JavaBench.java on the
# official rocketmq-client 4.9.7 jar (DefaultMQProducer sync sends from N threads sharing one
# producer, as RocketMQ's benchmark Producer does; a DefaultMQPushConsumer for the drain),
# compiled once with javac into a cache next to the jars (COMPAT_CACHE). Both take the same
# flags here and print the same RESULT line, which is all this script reads of them. The Java
# client warms its own JIT first in each measured process (BENCH_JAVA_CLIENT_WARMUP, 3s: sends,
# or a drain in a throwaway group) and prints MEASURING when the measured part starts; the
# broker's CPU is sampled from there. Each client gets fresh brokers. The overload run
# (asynchronous sends) exists for rmqbench only.
#
# For each broker in turn (ours, then Java) and each flush mode (ASYNC_FLUSH, then
# SYNC_FLUSH), it starts a fresh name server and a fresh broker with an empty store under a
# temp dir, and for each thread count runs
#   - a producer warm-up for BENCH_WARMUP (-c -q 8 creates the topic with 8 queues) and, with
#     ASYNC_FLUSH, a consumer warm-up draining those messages (results discarded),
#   - the measured producer run: sync sends of BENCH_SIZE-byte bodies for BENCH_DURATION,
#   - (ASYNC_FLUSH only) a consumer, in a new group, draining that topic from the first
#     offset (long-polling pulls of 32, one puller per queue; for Java, a push consumer with
#     pullBatchSize 32 and 20 consume threads) until it has every message.
# Around each measured run it reads the broker's utime+stime (/proc/<pid>/stat) and the
# machine's busy time (/proc/stat), and at its end the broker's peak RSS (VmHWM) and peak
# anonymous RSS (RssAnon sampled every 0.2 s), both since that broker started, and the load
# generator's own CPU time over its measured part (its RESULT line: getrusage for rmqbench,
# the JVM's process CPU time for Java), to show whether the client was the limit.
#
# The name server is ours (bin/namesrv) for both brokers: it only answers route lookups at
# the start of each run and is off the data path; each broker gets its own fresh one.
#
# Both brokers read the same broker.conf keys (ASYNC_FLUSH or SYNC_FLUSH, 1 GiB commitlog
# segments unless BENCH_SEGMENT_MB, autoCreateTopicEnable, store under the temp dir) and keep
# their own defaults otherwise (thread pools, flush intervals, ...). The Java broker runs
# with the JVM options of RocketMQ 4.9.x's bin/runbroker.sh (its JDK 11 branch: G1,
# AlwaysPreTouch, ...; java is launched directly, as the compat suite does, not through the
# script) with the heap scaled from its -Xms8g -Xmx8g -Xmn4g to this machine:
# BENCH_JAVA_HEAP_MB (1024), young generation half of it, MaxDirectMemorySize 2x the heap;
# plus the --add-opens that 4.9.x needs on JDK 17.
#
# BENCH_BROKERS may also name "ours-memlimit": our broker with GOGC=off and
# GOMEMLIMIT=BENCH_JAVA_HEAP_MB MiB, i.e. the Java heap's memory budget, collected only when
# it is reached (bin/broker's own default is GOGC=400 with a soft limit of half the memory).
#
# With BENCH_OVERLOAD=1 (and ASYNC_FLUSH) it also overloads each broker: asynchronous sends
# from BENCH_OVERLOAD_THREADS (64) connections with BENCH_OVERLOAD_INFLIGHT (64) outstanding
# each, for BENCH_OVERLOAD_DURATION (30s), far above what the broker takes, while a consumer
# reads the same topic live. Rows "overload": the sends admitted (TPS, latency) and, as
# errors, those refused SYSTEM_BUSY by flow control (waitTimeMillsInSendQueue, both brokers'
# default 200 ms); "overload consume": what the consumer got meanwhile.
#
# Environment: BENCH_BROKERS ("ours java"), BENCH_CLIENT (go; "java", or "go java"),
# BENCH_JAVA_CLIENT_WARMUP (3s), BENCH_JAVA_CLIENT_OPTS (JVM options of the Java client,
# "-Xms512m -Xmx512m -XX:+UseG1GC"), BENCH_THREADS ("16 64"), BENCH_SIZE (1024),
# BENCH_DURATION (20s), BENCH_WARMUP (5s), BENCH_SYNC_FLUSH (1: also run the producer with
# SYNC_FLUSH), BENCH_FLUSHES (the flush modes to run, overriding BENCH_SYNC_FLUSH: say
# "SYNC_FLUSH" for that mode alone), BENCH_CONSUME (1), BENCH_SEGMENT_MB (1024), BENCH_JAVA_HEAP_MB (1024),
# BENCH_OURS_ENV (environment of our broker, say "GODEBUG=schedtrace=0"), BENCH_OURS_CONF
# (lines added to our broker's broker.conf, say "sendMessageThreadPoolNums=1"),
# BENCH_WORK_DIR (stores and logs; default a new temp dir, removed after a successful run
# unless BENCH_KEEP=1; after a failure only the stores are removed), BENCH_OUT (also write
# the table to this file), BENCH_SKIP_BUILD (0), JAVA_HOME, plus what hack/compat.sh reads
# to fetch the jars (MVN, COMPAT_CACHE).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

brokers=${BENCH_BROKERS:-ours java}
clients=${BENCH_CLIENT:-go}
java_client_warmup=${BENCH_JAVA_CLIENT_WARMUP:-3s}
read -r -a java_client_opts <<<"${BENCH_JAVA_CLIENT_OPTS:--Xms512m -Xmx512m -XX:+UseG1GC}"
threads_list=${BENCH_THREADS:-16 64}
size=${BENCH_SIZE:-1024}
duration=${BENCH_DURATION:-20s}
# BENCH_PROFILE=<dir>: our broker serves pprof on loopback and each measured run of ours
# leaves <dir>/<client>-<broker>-<flush>-<run>.cpu.pprof and .allocs.pprof, covering its first
# BENCH_PROFILE_SECONDS (15) seconds (go tool pprof -top <file>).
profile_dir=${BENCH_PROFILE:-}
profile_secs=${BENCH_PROFILE_SECONDS:-15}
if [[ -n $profile_dir ]]; then mkdir -p "$profile_dir" && profile_dir=$(cd "$profile_dir" && pwd); fi
warmup=${BENCH_WARMUP:-5s}
do_sync=${BENCH_SYNC_FLUSH:-1}
do_consume=${BENCH_CONSUME:-1}
do_overload=${BENCH_OVERLOAD:-0}
overload_duration=${BENCH_OVERLOAD_DURATION:-30s}
overload_threads=${BENCH_OVERLOAD_THREADS:-64}
overload_inflight=${BENCH_OVERLOAD_INFLIGHT:-64}
segment_mb=${BENCH_SEGMENT_MB:-1024}
heap_mb=${BENCH_JAVA_HEAP_MB:-1024}

log() { echo "bench: $*" >&2; }
die() { log "$*"; exit 1; }
for kind in $brokers; do
  case $kind in
    ours | ours-memlimit | java) ;;
    *) die "unknown broker kind $kind in BENCH_BROKERS (want ours, ours-memlimit, java)" ;;
  esac
done
for client in $clients; do
  case $client in
    go | java) ;;
    *) die "unknown load generator $client in BENCH_CLIENT (want go, java)" ;;
  esac
done

# --- 1. Binaries and jars -------------------------------------------------------------------
if [[ ${BENCH_SKIP_BUILD:-0} != 1 ]]; then
  log "make build"
  make -s build >&2
fi
lib=$(hack/compat.sh --fetch-only) || die "could not fetch the RocketMQ jars (hack/compat.sh --fetch-only)"
[[ -f "$lib/rocketmq-broker-4.9.7.jar" ]] || die "no rocketmq-broker-4.9.7.jar in $lib"

java_bin=java javac_bin=javac
if [[ -n "${JAVA_HOME:-}" ]]; then
  java_bin="$JAVA_HOME/bin/java" javac_bin="$JAVA_HOME/bin/javac"
fi
if [[ " $brokers " == *" java "* || " $clients " == *" java "* ]]; then
  command -v "$java_bin" >/dev/null || die "no java (set JAVA_HOME or put java on PATH)"
fi

# The Java load generator: compiled once per source, jar set and javac into the jar cache
# (hack/compat.sh's COMPAT_CACHE), like the jars themselves, never inside the clone.
javabench_src=test/compat/java/src/org/openrmq/bench/JavaBench.java
javabench_classes=""
if [[ " $clients " == *" java "* ]]; then
  command -v "$javac_bin" >/dev/null || die "no javac (set JAVA_HOME or put a JDK on PATH)"
  cache_root=${COMPAT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rocketmq-operator/compat}
  key=$({ cat "$javabench_src"; echo "$lib"; "$javac_bin" -version 2>&1; } | sha256sum | cut -c1-12)
  javabench_classes="$cache_root/javabench-$key"
  if [[ ! -f "$javabench_classes/.complete" ]]; then
    log "compiling $javabench_src into $javabench_classes"
    rm -rf "$javabench_classes.tmp"
    mkdir -p "$javabench_classes.tmp"
    "$javac_bin" -nowarn -encoding UTF-8 -d "$javabench_classes.tmp" -cp "$lib/*" "$javabench_src" ||
      die "javac failed on $javabench_src"
    touch "$javabench_classes.tmp/.complete"
    rm -rf "$javabench_classes"
    mv "$javabench_classes.tmp" "$javabench_classes"
  fi
fi

if [[ -n "${BENCH_WORK_DIR:-}" ]]; then
  work=$BENCH_WORK_DIR
  mkdir -p "$work"
  keep=1
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/rocketmq-bench.XXXXXX")
  keep=${BENCH_KEEP:-0}
fi
# Private copies: other builds in this checkout must not swap the binaries mid-run.
mkdir -p "$work/bin"
cp bin/namesrv bin/broker bin/rmqbench "$work/bin/"
bin="$work/bin"

need_mb=$(( segment_mb * 3 + 1024 ))
avail_mb=$(df -Pm "$work" | awk 'NR==2 {print $4}')
if (( avail_mb < need_mb )); then
  die "only ${avail_mb} MiB free under $work; want ${need_mb} (set BENCH_SEGMENT_MB lower)"
fi

# --- Process bookkeeping: everything started is stopped on exit, Ctrl-C included ----------
pids=()
stop_pid() { # pid: SIGTERM, up to 30 s for a clean shutdown, then SIGKILL
  local pid=$1
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 300); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
forget_pid() { # pid: drop a reaped process from pids, so that a reused pid is never signalled
  local i
  for i in "${!pids[@]}"; do
    [[ ${pids[i]} == "$1" ]] && unset 'pids[i]'
  done
  pids=("${pids[@]}")
}
stop_all() { # reverse start order: brokers unregister while their name server listens
  local i
  for ((i=${#pids[@]}-1; i>=0; i--)); do
    stop_pid "${pids[i]}"
  done
  pids=()
}
finish() {
  local rc=$1
  trap - EXIT INT TERM
  stop_all
  if [[ $keep == 1 ]]; then
    log "logs and stores kept in $work"
  elif [[ $rc -eq 0 ]]; then
    rm -rf "$work"
  else
    rm -rf "$work"/*/*/store
    log "logs kept in $work (stores removed; BENCH_KEEP=1 keeps them)"
  fi
  exit "$rc"
}
trap 'finish $?' EXIT
trap 'log interrupted; finish 130' INT
trap 'log terminated; finish 143' TERM

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { # a port p with p-2 and p+1 also free (the Java broker's fast and HA channels)
  local p
  for _ in $(seq 1 200); do
    p=$(( 20000 + RANDOM % 30000 ))
    if port_free "$p" && port_free $((p - 2)) && port_free $((p + 1)); then
      echo "$p"
      return 0
    fi
  done
  die "no free port"
}
wait_ready() { # pid log port name
  local pid=$1 logf=$2 port=$3 name=$4
  for _ in $(seq 1 1200); do
    kill -0 "$pid" 2>/dev/null || { tail -n 30 "$logf" >&2; die "$name exited during startup (log $logf)"; }
    if grep -q "boot success" "$logf" 2>/dev/null && ! port_free "$port"; then
      return 0
    fi
    sleep 0.1
  done
  tail -n 30 "$logf" >&2
  die "$name not ready after 120 s (log $logf)"
}

cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; } # utime+stime
machine_busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; } # all CPUs, ticks
hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }
# VmHWM counts the store's mmapped pages the broker touched (RssFile) as well; this keeps
# the peak of RssAnon (heap, stacks, direct buffers), in kB, in $2 while the broker lives.
anon_sampler() { # pid file
  local pid=$1 out=$2 max=0 k v
  echo 0 >"$out"
  while [[ -r /proc/$pid/status ]]; do
    while read -r k v _; do
      if [[ $k == RssAnon: ]] && (( v > max )); then max=$v; echo "$max" >"$out"; fi
    done <"/proc/$pid/status" 2>/dev/null || true
    sleep 0.2
  done
}
clk_tck=$(getconf CLK_TCK)
secs() { awk -v a="$1" -v b="$2" -v hz="$clk_tck" 'BEGIN {printf "%.2f", (b - a) / hz}'; } # ticks -> s

# --- 2. One broker: name server + broker with a fresh store ----------------------------------
namesrv_addr="" broker_pid="" pprof_addr="" broker_kind=""
start_cluster() { # kind flush dir
  local kind=$1 flush=$2 dir=$3
  broker_kind=$kind
  mkdir -p "$dir"
  local nport bport
  nport=$(free_port)
  printf 'listenPort=%s\nkvConfigPath=%s\n' "$nport" "$dir/kvConfig.json" >"$dir/namesrv.conf"
  "$bin/namesrv" -c "$dir/namesrv.conf" >"$dir/namesrv.log" 2>&1 &
  pids+=($!)
  wait_ready "$!" "$dir/namesrv.log" "$nport" namesrv
  namesrv_addr="127.0.0.1:$nport"

  bport=$(free_port)
  local store="$dir/store"
  cat >"$dir/broker.conf" <<CONF
brokerClusterName=BenchCluster
brokerName=bench-$kind
brokerId=0
brokerIP1=127.0.0.1
namesrvAddr=$namesrv_addr
listenPort=$bport
storePathRootDir=$store
storePathCommitLog=$store/commitlog
mappedFileSizeCommitLog=$(( segment_mb << 20 ))
flushDiskType=$flush
autoCreateTopicEnable=true
autoCreateSubscriptionGroup=true
CONF
  if [[ $kind == ours || $kind == ours-memlimit ]]; then
    printf 'fastListenPort=%s\nhaListenPort=%s\n' $((bport - 2)) $((bport + 1)) >>"$dir/broker.conf"
    if [[ -n ${BENCH_OURS_CONF:-} ]]; then printf '%b\n' "$BENCH_OURS_CONF" >>"$dir/broker.conf"; fi
    local goenv=()
    if [[ -n ${BENCH_OURS_ENV:-} ]]; then read -r -a goenv <<<"$BENCH_OURS_ENV"; fi
    if [[ $kind == ours-memlimit ]]; then
      goenv+=(GOGC=off "GOMEMLIMIT=${heap_mb}MiB") # the Java heap's budget, collected only when reached
    fi
    local prof=()
    if [[ -n $profile_dir ]]; then
      pprof_addr="127.0.0.1:$(free_port)"
      prof=(-pprof "$pprof_addr")
    fi
    env "${goenv[@]}" "$bin/broker" -c "$dir/broker.conf" "${prof[@]}" >"$dir/broker.log" 2>&1 &
  else
    # ROCKETMQ_HOME with the compat suite's logback config (INFO to stdout, store at WARN).
    local home="$dir/rocketmq-home"
    mkdir -p "$home/conf" "$dir/tmp"
    cp test/internal/procs/javahome/conf/*.xml "$home/conf/"
    printf 'brokerIP2=127.0.0.1\nrocketmqHome=%s\n' "$home" >>"$dir/broker.conf"
    local jvm=(
      # bin/runbroker.sh's JDK 11 branch with the heap scaled from 8g/4g; -XX:-UseBiasedLocking
      # left out: deprecated on JDK 17, where biased locking is off anyway.
      -server "-Xms${heap_mb}m" "-Xmx${heap_mb}m" "-Xmn$((heap_mb / 2))m"
      -XX:+UseG1GC -XX:G1HeapRegionSize=16m -XX:G1ReservePercent=25
      -XX:InitiatingHeapOccupancyPercent=30 -XX:SoftRefLRUPolicyMSPerMB=0
      "-Xlog:gc*=info,safepoint=info:file=$dir/gc.log:utctime,level,tags:filecount=5,filesize=30M"
      -XX:-OmitStackTraceInFastThrow -XX:+AlwaysPreTouch
      "-XX:MaxDirectMemorySize=$((heap_mb * 2))m" -XX:-UseLargePages
      # 4.9.x on JDK 17: reflective access to direct buffers' cleaners (MappedFile).
      --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED
      --add-exports java.base/jdk.internal.ref=ALL-UNNAMED
      -Djava.net.preferIPv4Stack=true
      "-Duser.home=$dir" "-Drocketmq.home.dir=$home" "-Djava.io.tmpdir=$dir/tmp"
      -cp "$home/conf:$lib/*"
    )
    printf '%s\n' "${jvm[@]}" >"$dir/jvm.args"
    ROCKETMQ_HOME=$home "$java_bin" "${jvm[@]}" org.apache.rocketmq.broker.BrokerStartup \
      -c "$dir/broker.conf" >"$dir/broker.log" 2>&1 &
  fi
  broker_pid=$!
  pids+=("$broker_pid")
  wait_ready "$broker_pid" "$dir/broker.log" "$bport" "$kind broker"
  anon_sampler "$broker_pid" "$dir/anon-peak-kb" &
  pids+=($!)
  sleep 1 # let the first registration reach the name server
}

# --- 3. The load generators -----------------------------------------------------------------
# Both take the same flags here (JavaBench mirrors rmqbench's) and end with one line per series:
#   RESULT client=... mode=... series=send messages=N seconds=S tps=T ... p99_ms=... errors=E client_cpu_s=C
# client_cmd sets cmd to the current $client's command line for mode (producer, consumer) and flags.
client_cmd() { # dir mode flags...
  local dir=$1 mode=$2
  shift 2
  if [[ $client == java ]]; then
    mkdir -p "$dir/java-client"
    cmd=("$java_bin" -server "${java_client_opts[@]}" -Djava.net.preferIPv4Stack=true
      "-Duser.home=$dir/java-client" "-Drocketmq.client.logRoot=$dir/java-client/logs"
      -cp "$javabench_classes:$lib/*" org.openrmq.bench.JavaBench "$mode" -n "$namesrv_addr" "$@")
  else
    cmd=("$bin/rmqbench" "$mode" -n "$namesrv_addr" "$@")
  fi
}
# The Java client's measured runs warm its JIT in the same JVM first (rmqbench needs none).
client_warmup_flags() { # sets warm to the flags for a measured run
  warm=()
  if [[ $client == java ]]; then warm=(-warmup "$java_client_warmup"); fi
}
# measured log: runs "${cmd[@]}" with its output in log and reads the broker's CPU and the
# machine's busy time (c0 m0, then c1 m1) around its measured part: from the start for
# rmqbench, from the MEASURING line on for the Java client. Returns the command's status.
measured() {
  local logf=$1 p rc=0
  "${cmd[@]}" >"$logf" 2>&1 &
  p=$!
  pids+=("$p")
  if [[ $client == java ]]; then
    while kill -0 "$p" 2>/dev/null && ! grep -q '^MEASURING' "$logf"; do sleep 0.05; done
  fi
  c0=$(cpu_ticks "$broker_pid") m0=$(machine_busy)
  local profiling=()
  if [[ -n $profile_dir && $broker_kind != java ]]; then
    # CPU and allocation profiles of the broker over the measured run's first seconds.
    local name
    name="$profile_dir/$client-$(basename "$(dirname "$logf")")-$(basename "$logf" .log)"
    curl -fsS -o "$name.cpu.pprof" "http://$pprof_addr/debug/pprof/profile?seconds=$profile_secs" &
    profiling+=($!)
    curl -fsS -o "$name.allocs.pprof" "http://$pprof_addr/debug/pprof/allocs?seconds=$profile_secs" &
    profiling+=($!)
  fi
  wait "$p" || rc=$?
  if ((${#profiling[@]})); then wait "${profiling[@]}" || log "a profile of $logf failed"; fi
  c1=$(cpu_ticks "$broker_pid") m1=$(machine_busy)
  forget_pid "$p"
  return "$rc"
}
# result_of file series key...: the values of those keys on the last RESULT line of that
# series in file, "-" for a key it lacks; nothing when there is no such line.
result_of() {
  local f=$1 s=$2
  shift 2
  awk -v want="series=$s" -v keys="$*" '
    $1 == "RESULT" { for (i = 2; i <= NF; i++) if ($i == want) line = $0 }
    END {
      if (line == "") exit
      n = split(line, kv, " ")
      for (i = 2; i <= n; i++) { j = index(kv[i], "="); if (j > 0) v[substr(kv[i], 1, j - 1)] = substr(kv[i], j + 1) }
      k = split(keys, ks, " ")
      for (i = 1; i <= k; i++) printf "%s%s", (i > 1 ? " " : ""), ((ks[i] in v) ? v[ks[i]] : "-")
      print ""
    }' "$f"
}
num() { [[ $1 == - || -z $1 ]] && echo 0 || echo "$1"; } # a count that may be "-"

results="$work/results.tsv"
: >"$results"
record() { # kind workload flush threads tps avg p99 cpu_s rss_mib errors msgs machine_busy_s anon_mib client_cpu_s (client: $client)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" "$client" >>"$results"
}
broker_mem() { # dir: the broker's peak RSS and peak anonymous RSS so far, MiB, into rss and anon
  rss=$(( $(hwm_kb "$broker_pid") / 1024 )) anon=$(( $(cat "$1/anon-peak-kb") / 1024 ))
}

run_producer() { # kind flush threads dir -> topic in $topic, stored count in $stored
  local kind=$1 flush=$2 t=$3 dir=$4
  topic="Bench_${flush%%_*}_w$t"
  local out="$dir/producer-w$t"
  local ok=0 cmd warm
  for attempt in 1 2 3 4 5; do
    client_cmd "$dir" producer -t "$topic" -c -q 8 -w "$t" -s "$size" -d "$warmup"
    if "${cmd[@]}" >"$out.warmup.log" 2>&1; then
      ok=1
      break
    fi
    log "warm-up attempt $attempt failed ($(tail -n 1 "$out.warmup.log")); retrying"
    sleep 2
  done
  [[ $ok == 1 ]] || die "producer warm-up failed; see $out.warmup.log"
  local wtotal
  wtotal=$(num "$(result_of "$out.warmup.log" send messages)")
  if [[ $flush == ASYNC_FLUSH && $do_consume == 1 ]]; then
    # Warm the pull path too (the JIT, for Java) before the measured drain.
    client_cmd "$dir" consumer -t "$topic" -g "bench_warmup_w$t" -from-first -count "$(( wtotal > 0 ? wtotal : 1 ))" -d 60s
    "${cmd[@]}" >"$dir/consumer-w$t.warmup.log" 2>&1 ||
      die "consumer warm-up failed; see $dir/consumer-w$t.warmup.log"
  fi
  local c0 c1 m0 m1
  client_warmup_flags
  client_cmd "$dir" producer -t "$topic" -w "$t" -s "$size" -d "$duration" "${warm[@]}"
  measured "$out.log" || die "producer failed; see $out.log"
  local total tps avg p99 errs ccpu wmsgs cpu rss anon busy
  read -r total tps avg p99 errs ccpu wmsgs <<<"$(result_of "$out.log" send messages tps avg_ms p99_ms errors client_cpu_s warmup_messages)"
  [[ -n $total ]] || die "no RESULT line in $out.log"
  cpu=$(secs "$c0" "$c1")
  broker_mem "$dir"
  busy=$(secs "$m0" "$m1")
  record "$kind" produce "$flush" "$t" "$tps" "$avg" "$p99" "$cpu" "$rss" "$errs" "$total" "$busy" "$anon" "$ccpu"
  log "  $kind $flush produce w=$t ($client client): $tps TPS, avg $avg ms, p99 $p99 ms, broker CPU ${cpu}s (machine ${busy}s, client ${ccpu}s), peak RSS ${rss} MiB (anon ${anon}), errors $errs"
  stored=$(( total + wtotal + $(num "$wmsgs") ))
}

run_consumer() { # kind flush threads dir (topic, stored from run_producer)
  local kind=$1 flush=$2 t=$3 dir=$4
  local out="$dir/consumer-w$t.log"
  local c0 c1 m0 m1 cmd warm
  client_warmup_flags
  client_cmd "$dir" consumer -t "$topic" -g "bench_consumer_w$t" -from-first -count "$stored" -d 300s "${warm[@]}"
  measured "$out" || die "consumer failed; see $out"
  local total tps fails ccpu cpu rss anon busy
  read -r total tps fails ccpu <<<"$(result_of "$out" S2C messages tps errors client_cpu_s)"
  [[ -n $total ]] || die "no RESULT line in $out"
  (( total >= stored )) || log "  warning: consumer got $total of $stored messages"
  cpu=$(secs "$c0" "$c1")
  broker_mem "$dir"
  busy=$(secs "$m0" "$m1")
  # Drained long after they were stored, so the consumer's latencies mean nothing here.
  record "$kind" consume "$flush" "$t" "$tps" "-" "-" "$cpu" "$rss" "$fails" "$total" "$busy" "$anon" "$ccpu"
  log "  $kind $flush consume (topic of w=$t, $total msgs, $client client): $tps TPS, broker CPU ${cpu}s (machine ${busy}s, client ${ccpu}s), peak RSS ${rss} MiB (anon ${anon})"
}

run_overload() { # kind flush dir (rmqbench only: asynchronous sends)
  local kind=$1 flush=$2 dir=$3
  local topic="Bench_overload" out="$dir/overload"
  "$bin/rmqbench" producer -n "$namesrv_addr" -t "$topic" -c -q 8 -w 16 -s "$size" -d "$warmup" \
    >"$out.warmup.log" 2>&1 || die "overload warm-up failed; see $out.warmup.log"
  local c0 c1 m0 m1
  c0=$(cpu_ticks "$broker_pid") m0=$(machine_busy)
  "$bin/rmqbench" consumer -n "$namesrv_addr" -t "$topic" -g bench_overload_consumer -d "$overload_duration" \
    >"$out.consumer.log" 2>&1 &
  local cpid=$!
  pids+=("$cpid")
  "$bin/rmqbench" producer -n "$namesrv_addr" -t "$topic" -a -w "$overload_threads" -inflight "$overload_inflight" \
    -s "$size" -d "$overload_duration" >"$out.log" 2>&1 || die "overload producer failed; see $out.log"
  wait "$cpid" || die "overload consumer failed; see $out.consumer.log"
  forget_pid "$cpid"
  c1=$(cpu_ticks "$broker_pid") m1=$(machine_busy)
  local total tps avg p99 refused ccpu cpu rss anon busy ctotal ctps cccpu
  read -r total tps avg p99 refused ccpu <<<"$(result_of "$out.log" send messages tps avg_ms p99_ms busy client_cpu_s)"
  [[ -n $total ]] || die "no RESULT line in $out.log"
  cpu=$(secs "$c0" "$c1")
  broker_mem "$dir"
  busy=$(secs "$m0" "$m1")
  record "$kind" overload "$flush" "$overload_threads" "$tps" "$avg" "$p99" "$cpu" "$rss" "$refused" "$total" "$busy" "$anon" "$ccpu"
  read -r ctotal ctps cccpu <<<"$(result_of "$out.consumer.log" S2C messages tps client_cpu_s)"
  record "$kind" "overload-consume" "$flush" "$overload_threads" "${ctps:-0}" "-" "-" "-" "$rss" "0" "${ctotal:-0}" "-" "$anon" "${cccpu:--}"
  log "  $kind $flush overload: $tps TPS admitted, p99 $p99 ms, $refused refused SYSTEM_BUSY, consumer ${ctps:-0} TPS meanwhile, peak anon RSS ${anon} MiB"
}

# --- 4. The runs -----------------------------------------------------------------------------
flushes="ASYNC_FLUSH"
[[ $do_sync == 1 ]] && flushes="ASYNC_FLUSH SYNC_FLUSH"
flushes=${BENCH_FLUSHES:-$flushes}
if [[ $do_overload == 1 && " $clients " != *" go "* ]]; then
  log "BENCH_OVERLOAD=1: the overload run needs rmqbench's asynchronous sends; skipped (BENCH_CLIENT has no go)"
fi

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
for client in $clients; do
  for kind in $brokers; do
    for flush in $flushes; do
      dir="$work/$client-client/$kind-$flush"
      log "$kind broker, $flush, $client client (work dir $dir)"
      start_cluster "$kind" "$flush" "$dir"
      for t in $threads_list; do
        run_producer "$kind" "$flush" "$t" "$dir"
        if [[ $flush == ASYNC_FLUSH && $do_consume == 1 ]]; then
          run_consumer "$kind" "$flush" "$t" "$dir"
        fi
      done
      if [[ $flush == ASYNC_FLUSH && $do_overload == 1 && $client == go ]]; then
        run_overload "$kind" "$flush" "$dir"
      fi
      stop_all
    done
  done
done

# --- 5. The tables -------------------------------------------------------------------------
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
mem_gib=$(awk '/^MemTotal:/ {printf "%.0f", $2 / 1048576}' /proc/meminfo)
java_version=$("$java_bin" -version 2>&1 | head -n 1 || true)
go_version=$(go version 2>/dev/null | awk '{print $3}' || true)
load=$(cut -d' ' -f1-3 /proc/loadavg)

client_note() { # client: what the load generator is and does, for the line above its table
  case $1 in
    go) echo "Load generator: bin/rmqbench (Go, this repo's pkg/client); consume = draining the topic from its first offset (8 pullers, 32 per pull)." ;;
    java) echo "Load generator: JavaBench on the official Java client (rocketmq-client 4.9.7, JVM ${java_client_opts[*]}): sync sends from the"
      echo "threads sharing one DefaultMQProducer (client defaults: 3 s send timeout, 2 retries) after a ${java_client_warmup} warm-up in the same JVM;"
      echo "consume = a DefaultMQPushConsumer in a new group from CONSUME_FROM_FIRST_OFFSET (pullBatchSize 32, 20 consume threads,"
      echo "failed pulls retried after 100 ms instead of the client's 1 s), after a ${java_client_warmup} warm-up drain in a throwaway group in the same JVM." ;;
  esac
}

table() {
  echo "Machine: $(nproc) CPUs ($cpu_model), ${mem_gib} GiB RAM, Linux $(uname -r); load average at the end $load."
  echo "Software: our broker built with ${go_version:-go}; Java broker Apache RocketMQ 4.9.7 on $java_version,"
  echo "heap -Xms${heap_mb}m -Xmx${heap_mb}m -Xmn$((heap_mb / 2))m (runbroker.sh options otherwise). Each broker: our name server,"
  echo "fresh store, ${segment_mb} MiB commitlog segments, autoCreateTopicEnable, loopback, the load generator on the same machine."
  echo "Workload: ${size}-byte bodies, sync sends, ${warmup} warm-up then ${duration} measured, topic of 8 queues;"
  echo "consume = draining that topic from its first offset. Started $started."
  if [[ " $brokers " == *" ours-memlimit "* ]]; then
    echo "ours-memlimit = our broker run with GOGC=off GOMEMLIMIT=${heap_mb}MiB (the Java heap's budget)."
  fi
  local client
  for client in $clients; do
    echo
    client_note "$client"
    echo
    awk -F'\t' -v kinds="$brokers" -v client="$client" '
      $15 != client { next }
      { key = $2 SUBSEP $3 SUBSEP $4
        if (!(key in seen)) { seen[key] = 1; order[++n] = key }
        for (i = 5; i <= 14; i++) v[$1, key, i] = $i }
      function ratio(a, b) { return (a == "" || b == "" || a == "-" || b == "-" || b + 0 == 0) ? "" : sprintf("%.2f", a / b) }
      function cell(x) { return x == "" ? "n/a" : x }
      function value(kind, key, c) {
        if (c > 0) return v[kind, key, c]
        # CPU per message
        return v[kind, key, 11] > 0 ? sprintf("%.1f", v[kind, key, 8] * 1e6 / v[kind, key, 11]) : ""
      }
      END {
        nk = split(kinds, kind, " ")
        label["ours"] = "ours"; label["ours-memlimit"] = "ours-memlimit"; label["java"] = "Java 4.9.7"
        hasjava = 0
        for (i = 1; i <= nk; i++) if (kind[i] == "java") hasjava = 1
        head = "| workload | flush | threads | metric |"; rule = "|---|---|---:|---|"
        for (i = 1; i <= nk; i++) { head = head " " label[kind[i]] " |"; rule = rule "---:|" }
        for (i = 1; i <= nk; i++) if (hasjava && kind[i] != "java") { head = head " " label[kind[i]] " / Java |"; rule = rule "---:|" }
        print head; print rule
        split("TPS|avg latency (ms)|p99 latency (ms)|broker CPU (s)|broker CPU per msg (µs)|broker peak RSS (MiB)|broker peak anon RSS (MiB)|errors|machine CPU busy (s)|client CPU (s)", names, "|")
        split("5|6|7|8|0|9|13|10|12|14", cols, "|")
        for (k = 1; k <= n; k++) {
          split(order[k], f, SUBSEP)
          wl = f[1] == "produce" ? "produce" : f[1] == "consume" ? "consume (drain)" : f[1] == "overload" ? "overload (async sends admitted)" : "consume during overload"
          for (m = 1; m <= 10; m++) {
            if ((f[1] == "consume" || f[1] == "overload-consume") && (m == 2 || m == 3)) continue
            if (f[1] == "overload-consume" && m != 1) continue
            line = "| " wl " | " f[2] " | " f[3] " | " names[m] " |"
            any = 0
            for (i = 1; i <= nk; i++) {
              x = value(kind[i], order[k], cols[m] + 0)
              if (x + 0 != 0) any = 1
              line = line " " cell(x) " |"
            }
            if (m == 8 && !any) continue # errors: only when there were some
            for (i = 1; i <= nk; i++) if (hasjava && kind[i] != "java")
              line = line " " (m >= 8 ? "" : ratio(value(kind[i], order[k], cols[m] + 0), value("java", order[k], cols[m] + 0))) " |"
            print line
          }
        }
      }' "$results"
  done
  echo
  echo "TPS: above 1 means ours is faster. Latency, CPU, RSS: below 1 means ours uses less."
  if [[ $do_overload == 1 ]]; then
    echo "Overload: ${overload_threads} connections x ${overload_inflight} async sends outstanding for ${overload_duration}, a live consumer"
    echo "on the same topic; its errors are the sends refused SYSTEM_BUSY (flow control), its latencies those of the admitted."
  fi
  echo "Broker CPU = utime+stime of the broker process during the measured run; peak RSS = VmHWM since that broker started,"
  echo "which includes the mmapped commitlog pages it touched; peak anon RSS = the highest RssAnon (heap, stacks, direct"
  echo "buffers; sampled every 0.2 s) since that broker started; Java's includes its pre-touched heap (AlwaysPreTouch);"
  echo "machine CPU busy = all processes on all CPUs during the run (broker + load generator + anything else running);"
  echo "client CPU = the load generator's own CPU time over its measured part (rmqbench: getrusage; Java: the JVM's process"
  echo "CPU time, JIT and GC included): near the machine's CPUs x the run's seconds, the client was the limit."
  if [[ " $clients " == *" java "* ]]; then
    echo "Java client errors: produce, send failed + response failed after the client's own retries; consume, the failed pulls"
    echo "the client logged (it retries them itself and tells the application nothing; see the run's log for their kinds)."
  fi
}

table | tee "${BENCH_OUT:-/dev/null}"
