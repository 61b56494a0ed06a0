#!/usr/bin/env bash
# run.sh: `make handoff-bench`. Runs bench/handoff (separate processes) on
# each cluster of HANDOFF_BENCH_CLUSTERS (default 1n-tv2,3n-tv2): planned
# handoffs (KRABKA_HANDOFF_BENCH_N, default 100), crash failovers
# (KRABKA_HANDOFF_BENCH_CRASHES, default 40) and back-to-back guarded writes
# of one writer (KRABKA_HANDOFF_BENCH_WRITES, default 300), each after
# uncounted warm-up trials (20, 5, 200: a fresh broker's JVM is slow at
# first). HANDOFF_BENCH_MODES (default "handoff crash write") picks the
# modes. Each cluster is
# fresh, started here with tests/kafka/cluster.sh and stopped on every exit
# path; every mode writes a results file procs-<cluster>-...json into
# bench/results (bench/README.md). Then `make perf-doc`.
# HANDOFF_BENCH_ENGINES=client,shared (make engine-bench) runs the engines
# A/B, trial by trial under the same load (each candidate process gets
# KRABKA_ENGINE), with -instants (the successor's InitProducerId answered,
# its lease seen by another standby, its first guarded write committed);
# its results files are procs-engine-<cluster>-<engine>-*.json, so the
# tables of the default engine stay on procs-*.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
clusters="${HANDOFF_BENCH_CLUSTERS:-1n-tv2,3n-tv2}"
n="${KRABKA_HANDOFF_BENCH_N:-100}"
crashes="${KRABKA_HANDOFF_BENCH_CRASHES:-40}"
writes="${KRABKA_HANDOFF_BENCH_WRITES:-300}"
modes="${HANDOFF_BENCH_MODES:-handoff crash write}"
port="${KRABKA_HANDOFF_BENCH_PORT:-28092}"
root="$(mktemp -d /tmp/krabka-handoff-bench.XXXXXX)"
bin="$root/handoff"
started=()
cleanup() {
  for name in "${started[@]}"; do
    KRABKA_KAFKA_ROOT="$root" tests/kafka/cluster.sh stop --name "$name" >/dev/null 2>&1 || true
  done
  rm -rf "$root"
}
trap cleanup EXIT
go build -o "$bin" ./bench/handoff
abflags=()
if [[ -n "${HANDOFF_BENCH_ENGINES:-}" ]]; then
  cands=()
  for e in ${HANDOFF_BENCH_ENGINES//,/ }; do
    [[ "$e" == client || "$e" == shared ]] || { echo "run.sh: HANDOFF_BENCH_ENGINES: '$e' is not client or shared" >&2; exit 2; }
    printf '#!/bin/sh\nKRABKA_ENGINE=%s exec %q "$@"\n' "$e" "$bin" > "$root/$e.sh"
    chmod +x "$root/$e.sh"
    cands+=("$e=$root/$e.sh")
  done
  abflags=(-candidates "$(IFS=,; echo "${cands[*]}")" -bench procs-engine)
fi
for c in ${clusters//,/ }; do
  if [[ ! "$c" =~ ^([13])n-tv([12])$ ]]; then
    echo "run.sh: HANDOFF_BENCH_CLUSTERS: '$c' is not a cluster (1n-tv2, 1n-tv1, 3n-tv2, 3n-tv1)" >&2
    exit 2
  fi
  name="hb-$c"
  KRABKA_KAFKA_ROOT="$root" tests/kafka/cluster.sh start --name "$name" --nodes "${BASH_REMATCH[1]}" \
    --txn-version "${BASH_REMATCH[2]}" --port "$port" --owner $$ >/dev/null
  started+=("$name")
  bootstrap="$(KRABKA_KAFKA_ROOT="$root" tests/kafka/cluster.sh bootstrap --name "$name")"
  echo "== $c at $bootstrap"
  for mode in $modes; do
    case "$mode" in
      handoff) "$bin" -bootstrap "$bootstrap" -mode handoff -n "$n" -warmup 20 ${abflags[@]+"${abflags[@]}"} ${abflags[@]+-instants} ;;
      crash) "$bin" -bootstrap "$bootstrap" -mode crash -n "$crashes" -warmup 5 ${abflags[@]+"${abflags[@]}"} ;;
      write) "$bin" -bootstrap "$bootstrap" -mode write -n "$writes" -warmup 200 ${abflags[@]+"${abflags[@]}"} ;;
      *) echo "run.sh: HANDOFF_BENCH_MODES: '$mode' is not handoff, crash or write" >&2; exit 2 ;;
    esac
  done
  KRABKA_KAFKA_ROOT="$root" tests/kafka/cluster.sh stop --name "$name" >/dev/null
  started=("${started[@]/$name}")
  port=$((port + 100))
done
