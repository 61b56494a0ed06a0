#!/usr/bin/env bash
# run.sh: `make crossrole-bench` (issue 34). Builds bench/crossrole, starts
# a one-node broker of its own (tests/kafka/cluster.sh start --name crossrole
# --port $CROSSROLE_PORT, default 27300; stopped on every exit path) unless
# CROSSROLE_BOOTSTRAP names one, and runs the settings of CROSSROLE_RUNS
# (default: lease 6 s 4 roles x 4 rounds, 10 s 4x4, 30 s 4x3, each with an
# open transaction left on the coordination partition, then the 6 s control
# without one). Each writes bench/results/crossrole-<label>-...json
# (CROSSROLE_LABEL, default after; CROSSROLE_OUT_DIR, default bench/results).
# The broker keeps cluster.sh's
# transaction.abort.timed.out.transaction.cleanup.interval.ms (1 s); the
# results file records it.
set -euo pipefail
cd "$(dirname "$0")/../.."
label="${CROSSROLE_LABEL:-after}"
port="${CROSSROLE_PORT:-27300}"
out_dir="${CROSSROLE_OUT_DIR:-bench/results}"
# lease,roles,rounds,intruder
runs="${CROSSROLE_RUNS:-6s,4,4,true 10s,4,4,true 30s,4,3,true 6s,4,4,false}"
tmp="$(mktemp -d /tmp/krabka-crossrole-bench.XXXXXX)"
bin="$tmp/crossrole"
started=""
cleanup() {
  if [[ -n "$started" ]]; then
    tests/kafka/cluster.sh stop --name crossrole >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$bin" ./bench/crossrole
bootstrap="${CROSSROLE_BOOTSTRAP:-}"
if [[ -z "$bootstrap" ]]; then
  bootstrap="$(tests/kafka/cluster.sh start --name crossrole --port "$port" --owner $$ | tail -n 1)"
  started=1
fi
echo "== crossrole bench ($label) at $bootstrap"
for r in $runs; do
  IFS=, read -r lease roles rounds intruder <<<"$r"
  echo "== lease $lease, $roles roles x $rounds rounds, intruder $intruder"
  "$bin" -bootstrap "$bootstrap" -lease "$lease" -roles "$roles" -rounds "$rounds" \
    -intruder="$intruder" -label "$label" -out-dir "$out_dir" ${CROSSROLE_FLAGS:-}
done
