#!/usr/bin/env bash
# tput.sh: `make lease-tput-bench` (issue 35, the three-broker profile): the
# lease transactions a second a cluster sustains (bench/scale -mode tput,
# tput.go). For each cluster of LEASE_TPUT_CLUSTERS (default 1n-tv2,3n-tv2)
# it starts a fresh cluster of its own (tests/kafka/cluster.sh, base port
# LEASE_TPUT_PORT, default 27600, +100 per cluster; stopped on every exit
# path), runs LEASE_TPUT_ROLES roles (default 2000, on LEASE_TPUT_PARTITIONS
# partitions, default 16) renewed by each count of LEASE_TPUT_RENEWERS
# (default 64,256) in LEASE_TPUT_PROCS processes (default 1) for
# LEASE_TPUT_WINDOW (default 30s) after LEASE_TPUT_WARMUP (default 5s; the
# first count after LEASE_TPUT_FIRST_WARMUP, default 30s: fresh JVMs), with
# lease LEASE_TPUT_LEASE (default 60s; LEASE_TPUT_RENEW, default 20s, is
# the configured renew interval, unused: background renewal is off), and
# measures the brokers' CPU from their pids. Each cluster writes
# bench/results/lease-tput-<cluster>[-<label>]-...json (LEASE_TPUT_LABEL,
# default none; LEASE_TPUT_OUT_DIR, default bench/results). Then
# `make perf-doc`.
set -euo pipefail
cd "$(dirname "$0")/../.."
clusters="${LEASE_TPUT_CLUSTERS:-1n-tv2,3n-tv2}"
port="${LEASE_TPUT_PORT:-27600}"
out_dir="${LEASE_TPUT_OUT_DIR:-bench/results}"
root="$(mktemp -d /tmp/krabka-lease-tput.XXXXXX)"
bin="$root/scale"
started=()
cleanup() {
  for name in "${started[@]}"; do
    [[ -n "$name" ]] && KRABKA_KAFKA_ROOT="$root" tests/kafka/cluster.sh stop --name "$name" >/dev/null 2>&1 || true
  done
  rm -rf "$root"
}
trap cleanup EXIT
for c in ${clusters//,/ }; do
  if [[ ! "$c" =~ ^([13])n-tv([12])$ ]]; then
    echo "tput.sh: LEASE_TPUT_CLUSTERS: '$c' is not a cluster (1n-tv2, 1n-tv1, 3n-tv2, 3n-tv1)" >&2
    exit 2
  fi
done
go build -o "$bin" ./bench/scale
for c in ${clusters//,/ }; do
  [[ "$c" =~ ^([13])n-tv([12])$ ]]
  nodes="${BASH_REMATCH[1]}"
  name="lt-$c"
  KRABKA_KAFKA_ROOT="$root" tests/kafka/cluster.sh start --name "$name" --nodes "$nodes" \
    --txn-version "${BASH_REMATCH[2]}" --port "$port" --owner $$ >/dev/null
  started+=("$name")
  bootstrap="$(KRABKA_KAFKA_ROOT="$root" tests/kafka/cluster.sh bootstrap --name "$name")"
  pids=()
  for ((i = 1; i <= nodes; i++)); do pids+=("$(cat "$root/$name/node-$i/pid")"); done
  echo "== lease-tput $c at $bootstrap (broker pids ${pids[*]})"
  "$bin" -mode tput -bootstrap "$bootstrap" -roles "${LEASE_TPUT_ROLES:-2000}" \
    -partitions "${LEASE_TPUT_PARTITIONS:-16}" -renewers "${LEASE_TPUT_RENEWERS:-64,256}" \
    -procs "${LEASE_TPUT_PROCS:-1}" -window "${LEASE_TPUT_WINDOW:-30s}" -warmup "${LEASE_TPUT_WARMUP:-5s}" \
    -first-warmup "${LEASE_TPUT_FIRST_WARMUP:-30s}" \
    -lease "${LEASE_TPUT_LEASE:-60s}" -renew "${LEASE_TPUT_RENEW:-20s}" -broker-pids "$(IFS=,; echo "${pids[*]}")" \
    -label "${LEASE_TPUT_LABEL:-}" -out-dir "$out_dir"
  KRABKA_KAFKA_ROOT="$root" tests/kafka/cluster.sh stop --name "$name" >/dev/null
  started=("${started[@]/$name}")
  port=$((port + 100))
done
