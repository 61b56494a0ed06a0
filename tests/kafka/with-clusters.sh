#!/usr/bin/env bash
# with-clusters.sh CMD [ARGS...]
# Starts the clusters the test suite shares (tv2, tv1, sasl: one node each,
# in parallel), exports their KRABKA_* variables, runs CMD, and stops the
# brokers on every exit path (success, failure, ^C, TERM). Exits with CMD's
# exit code (or 1 if a cluster could not start). The 3-node cluster is NOT
# started here: tests that need it start it through kafkatest
# (or set KRABKA_WITH_3N=1 to start it here too).
# Env: KRABKA_KAFKA_ROOT (default /tmp/krabka-kafka) holds the cluster dirs.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cs="$here/cluster.sh"
[[ $# -gt 0 ]] || { echo "usage: with-clusters.sh CMD [ARGS...]" >&2; exit 2; }

# tv2 has one extra listener advertised at 127.0.0.1:29700 (shifted by
# KRABKA_KAFKA_PORT_OFFSET, like every other port), where a test's cut-link
# proxy listens (tests/kafka/cmd/kproxy; KRABKA_BOOTSTRAP_X1).
x1_port=$(( 29700 + ${KRABKA_KAFKA_PORT_OFFSET:-0} ))
sets=("--txn-version 2 --extra-listeners 1:$x1_port" "--txn-version 1" "--sasl --tls")
[[ "${KRABKA_WITH_3N:-}" == 1 ]] && sets+=("--nodes 3")

stopped=0
pids=()
cmd_pid=""
cleanup() {
  [[ $stopped == 1 ]] && return
  stopped=1
  local s p
  # CMD still running (we were signalled): pass the signal on, let it finish.
  if [[ -n "$cmd_pid" ]] && kill -0 "$cmd_pid" 2>/dev/null; then
    kill -TERM "$cmd_pid" 2>/dev/null; wait "$cmd_pid" 2>/dev/null
  fi
  # Starts still running: TERM makes each stop the nodes it launched.
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  for s in "${sets[@]}"; do "$cs" stop $s >&2 & done
  wait
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

# Fetch and build once, before the parallel starts.
"$here/fetch.sh" >/dev/null || exit 1
for s in "${sets[@]}"; do "$cs" start $s --owner $$ >/dev/null & pids+=($!); done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
pids=()
if [[ $fail == 1 ]]; then
  echo "with-clusters.sh: a Kafka cluster failed to start (see messages above)" >&2
  exit 1
fi
for s in "${sets[@]}"; do
  eval "$("$cs" env $s)"
done
# CMD runs as a child we wait for, so INT/TERM reach our traps at once.
"$@" &
cmd_pid=$!
wait "$cmd_pid"
rc=$?
cmd_pid=""
exit $rc
