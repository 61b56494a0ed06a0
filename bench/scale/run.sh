#!/usr/bin/env bash
# run.sh: `make scale-bench` (issue 35). Builds bench/scale, starts a
# one-node broker of its own (tests/kafka/cluster.sh start --name scale
# --port $SCALE_PORT, default 27400; stopped on every exit path) unless
# SCALE_BOOTSTRAP names one, and runs one measurement per entry of
# SCALE_ROLES (default "1000 10000"), each on a topic of its own, for
# SCALE_DURATION (default 10m) with lease SCALE_LEASE (30s) and renew
# SCALE_RENEW (10s). Each writes bench/results/scale-<label>-<roles>n-...json
# (SCALE_LABEL, default after; SCALE_OUT_DIR, default bench/results).
# SCALE_BIN runs a bench binary built elsewhere, for example from an older
# commit of the library with this bench/scale copied in (the "before" runs;
# give SCALE_FLAGS="-commit <that commit>" so that the results name it).
set -euo pipefail
cd "$(dirname "$0")/../.."
label="${SCALE_LABEL:-after}"
port="${SCALE_PORT:-27400}"
out_dir="${SCALE_OUT_DIR:-bench/results}"
roles="${SCALE_ROLES:-1000 10000}"
tmp="$(mktemp -d /tmp/krabka-scale-bench.XXXXXX)"
bin="$tmp/scale"
started=""
cleanup() {
  if [[ -n "$started" ]]; then
    tests/kafka/cluster.sh stop --name scale --dir "$tmp/kafka" >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
if [[ -n "${SCALE_BIN:-}" ]]; then
  bin="$SCALE_BIN" # a bench binary built elsewhere (for example from an older commit)
else
  go build -o "$bin" ./bench/scale
fi
bootstrap="${SCALE_BOOTSTRAP:-}"
if [[ -z "$bootstrap" ]]; then
  bootstrap="$(tests/kafka/cluster.sh start --name scale --dir "$tmp/kafka" --port "$port" --owner $$ | tail -n 1)"
  started=1
fi
echo "== scale bench ($label) at $bootstrap"
for n in $roles; do
  "$bin" -bootstrap "$bootstrap" -roles "$n" -duration "${SCALE_DURATION:-10m}" \
    -lease "${SCALE_LEASE:-30s}" -renew "${SCALE_RENEW:-10s}" -partitions "${SCALE_PARTITIONS:-16}" \
    -label "$label" -out-dir "$out_dir" ${SCALE_FLAGS:-}
done
