#!/usr/bin/env bash
# Compatibility suite (make test-compat): the official Apache RocketMQ Java broker, Java name
# server and the official Go and Java clients against our binaries, on loopback; and the
# official Java client and mqadmin against our broker (bin/broker).
#
#   hack/compat.sh                      # against our name server (bin/namesrv, bin/broker; make build first)
#   COMPAT_NAMESRV=java hack/compat.sh  # against the Java name server (to check the harness)
#   COMPAT_NAMESRV="ours java" hack/compat.sh   # both, one after the other
#   COMPAT_RUN=TestGoAdmin hack/compat.sh       # only the tests matching a go test -run regexp
#   hack/compat.sh --fetch-only         # only step 1; prints the jar directory on stdout
#                                       # (used by hack/bench-vs-java.sh)
#
# 1. Fetches org.apache.rocketmq:rocketmq-broker/-namesrv/-client/-tools (the version in
#    test/compat/java/pom.xml) and their dependencies from Maven Central with mvn into a cache
#    outside the clone, keyed by the pom's hash, and reuses it on later runs.
# 2. Compiles the Java test programs in test/compat/java/src (if any) with javac.
# 3. Runs `go test -tags compat ./test/compat/...` with COMPAT_* variables telling the tests
#    where the jars, the compiled programs and our binaries are.
#
# Environment: COMPAT_NAMESRV (ours), COMPAT_RUN (all), COMPAT_CACHE (default: $XDG_CACHE_HOME
# or ~/.cache, then rocketmq-operator/compat), COMPAT_WORK_DIR (logs and stores; default a new
# temp dir, removed after a passing run unless COMPAT_KEEP=1), COMPAT_BIN_DIR (<repo>/bin),
# JAVA_HOME, MVN (mvn), GO (go), COMPAT_GO_TIMEOUT (15m).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

GO=${GO:-go}
MVN=${MVN:-mvn}
pom="$repo/test/compat/java/pom.xml"
src="$repo/test/compat/java/src"
kinds=${COMPAT_NAMESRV:-ours}
cache_root=${COMPAT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rocketmq-operator/compat}

fetch_only=0
case "${1:-}" in
  "") ;;
  --fetch-only) fetch_only=1 ;;
  *) echo "usage: hack/compat.sh [--fetch-only]" >&2; exit 2 ;;
esac

log() { echo "compat: $*" >&2; }
now() { date +%s; }
t0=$(now)

# --- 1. Java artifacts from Maven Central -------------------------------------------------
rmq_version=$(sed -n 's:.*<rocketmq.version>\(.*\)</rocketmq.version>.*:\1:p' "$pom" | head -n1)
pom_hash=$(sha256sum "$pom" | cut -c1-12)
lib="$cache_root/rocketmq-$rmq_version-$pom_hash/lib"
if [[ -f "$lib/.complete" ]]; then
  log "reusing RocketMQ $rmq_version jars in $lib"
else
  log "fetching RocketMQ $rmq_version (broker, namesrv, client, tools) from Maven Central into $lib"
  rm -rf "$lib.tmp"
  mkdir -p "$lib.tmp"
  mvn_log=$(mktemp)
  if ! "$MVN" -B -q -f "$pom" \
      org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
      -DoutputDirectory="$lib.tmp" -DincludeScope=runtime >"$mvn_log" 2>&1; then
    cat "$mvn_log" >&2
    rm -f "$mvn_log"
    log "mvn failed to fetch the RocketMQ jars"
    exit 1
  fi
  rm -f "$mvn_log"
  touch "$lib.tmp/.complete"
  rm -rf "$lib"
  mv "$lib.tmp" "$lib"
  log "fetched $(ls "$lib" | wc -l) jars in $(( $(now) - t0 ))s"
fi
for jar in rocketmq-broker rocketmq-namesrv rocketmq-client; do
  if ! ls "$lib/$jar-$rmq_version.jar" >/dev/null 2>&1; then
    log "missing $jar-$rmq_version.jar in $lib (delete that directory and retry)"
    exit 1
  fi
done
if [[ $fetch_only == 1 ]]; then
  echo "$lib"
  exit 0
fi

# --- 2. Work dir and Java test programs ---------------------------------------------------
if [[ -n "${COMPAT_WORK_DIR:-}" ]]; then
  work=$COMPAT_WORK_DIR
  mkdir -p "$work"
  keep=1
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/rocketmq-compat.XXXXXX")
  keep=${COMPAT_KEEP:-0}
fi

java_bin=java
javac_bin=javac
if [[ -n "${JAVA_HOME:-}" ]]; then
  java_bin="$JAVA_HOME/bin/java"
  javac_bin="$JAVA_HOME/bin/javac"
fi

classes=""
if [[ -d "$src" ]] && [[ -n "$(find "$src" -name '*.java' -print -quit)" ]]; then
  classes="$work/java-classes"
  mkdir -p "$classes"
  log "compiling the Java test programs in test/compat/java/src"
  find "$src" -name '*.java' >"$work/java-sources.txt"
  "$javac_bin" -nowarn -encoding UTF-8 -d "$classes" -cp "$lib/*" @"$work/java-sources.txt"
fi

# --- 3. The Go tests ----------------------------------------------------------------------
export COMPAT_JAVA="$(command -v "$java_bin")"
export COMPAT_JAVA_CLASSPATH="$lib/*"
export COMPAT_JAVA_CLASSES="$classes"
export COMPAT_BIN_DIR="${COMPAT_BIN_DIR:-$repo/bin}"

run_args=()
if [[ -n "${COMPAT_RUN:-}" ]]; then
  run_args=(-run "$COMPAT_RUN")
fi

status=0 passed=0 failed=0 skipped=0

# The store's byte compatibility with Java's DefaultMessageStore (broker/store, compat tag):
# it needs the jars, so it runs here rather than in make test.
if [[ -z "${COMPAT_RUN:-}" || "TestJavaStoreCompat" =~ ${COMPAT_RUN} ]]; then
  log "running TestJavaStoreCompat (broker/store against Java's DefaultMessageStore)"
  out="$work/store-compat.out"
  if ROCKETMQ_JAVA_LIB="$lib" PATH="$(dirname "$COMPAT_JAVA"):$PATH" \
      "$GO" test -tags compat -count=1 -v -run '^TestJavaStoreCompat$' ./broker/store 2>&1 | tee "$out"; then
    :
  else
    status=1
  fi
  passed=$((passed + $(grep -c '^--- PASS' "$out" || true)))
  failed=$((failed + $(grep -c '^--- FAIL' "$out" || true)))
  skipped=$((skipped + $(grep -c '^--- SKIP' "$out" || true)))
fi
for kind in $kinds; do
  log "running the suite against the $kind name server (work dir $work/$kind)"
  t1=$(now)
  mkdir -p "$work/$kind"
  out="$work/$kind/go-test.out"
  if COMPAT_NAMESRV=$kind COMPAT_WORK_DIR="$work/$kind" \
      "$GO" test -tags compat -count=1 -v -timeout "${COMPAT_GO_TIMEOUT:-15m}" "${run_args[@]}" ./test/compat/... 2>&1 | tee "$out"; then
    kind_status=0
    log "$kind name server: PASS in $(( $(now) - t1 ))s"
  else
    kind_status=1
    status=1
    log "$kind name server: FAIL in $(( $(now) - t1 ))s; logs kept in $work/$kind"
  fi
  p=$(grep -c '^--- PASS' "$out" || true)
  f=$(grep -c '^--- FAIL' "$out" || true)
  s=$(grep -c '^--- SKIP' "$out" || true)
  if [[ $kind_status -ne 0 && $f -eq 0 ]]; then
    f=1 # the test binary failed outside a test (build error, panic, timeout)
  fi
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
done

if [[ $status -eq 0 && $keep != 1 ]]; then
  rm -rf "$work"
else
  log "logs and stores: $work"
fi
log "total $(( $(now) - t0 ))s"
echo "compat: $passed passed, $failed failed, $skipped skipped"
exit $status
