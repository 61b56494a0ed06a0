#!/usr/bin/env bash
# run.sh: the core integration scenarios (acquire, renew, guarded write,
# describe, takeover with fencing) against older Apache Kafka releases, each
# fetched from Maven Central (tests/kafka/fetch.sh) and started as a
# one-node KRaft cluster (tests/kafka/cluster.sh --kafka-version); releases in
# COMPAT_TOO_OLD must answer UNSUPPORTED naming the version they found.
# Writes the table to build/compat/results.md. Exit status 0 only if every
# row passed.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cs="$repo/tests/kafka/cluster.sh"
versions="${COMPAT_VERSIONS:-3.9.1 3.0.2}"
too_old="${COMPAT_TOO_OLD:-2.8.2}"
port=$(( ${COMPAT_PORT:-25700} + ${KRABKA_KAFKA_PORT_OFFSET:-0} ))
out="$repo/build/compat"
mkdir -p "$out"
table="$out/results.md"
: > "$out/lines"
fail=0
current=""
cleanup() { [[ -n "$current" ]] && "$cs" stop --name "$current" >&2; current=""; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
run() { # run VERSION EXPECT
  local v="$1" expect="$2" name="compat-${1//./}"
  echo "compat: Apache Kafka $v (expect: ${expect:-the scenarios pass})" >&2
  current="$name"
  local boot
  if ! boot="$("$cs" start --name "$name" --kafka-version "$v" --port "$port" --owner $$ | tail -n1)"; then
    echo "COMPAT $v | cluster start | FAIL: see cluster.sh messages" >> "$out/lines"; fail=1; cleanup; return
  fi
  (cd "$repo" && KRABKA_COMPAT_BOOTSTRAP="$boot" KRABKA_COMPAT_VERSION="$v" KRABKA_COMPAT_EXPECT="$expect" \
    ${GO:-go} test -count=1 -v ./tests/compat/) > "$out/$v.log" 2>&1 || fail=1
  grep '^COMPAT ' "$out/$v.log" >> "$out/lines" || { echo "COMPAT $v | test | FAIL: see $out/$v.log" >> "$out/lines"; fail=1; }
  cleanup
}
for v in $versions; do run "$v" ""; done
for v in $too_old; do run "$v" unsupported; done
{
  echo "| Apache Kafka | scenario | result |"
  echo "|---|---|---|"
  sed -e 's/^COMPAT /| /' -e 's/$/ |/' "$out/lines"
} > "$table"
cat "$table"
[[ $fail == 0 ]] && echo "compat: every row passed ($table)" >&2 || echo "compat: FAILED ($table, logs in $out)" >&2
exit $fail
