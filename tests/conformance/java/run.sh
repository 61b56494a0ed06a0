#!/usr/bin/env bash
# Runs KafkaMurmur2Check (the murmur2 and partition vectors against Apache
# Kafka's own Utils.murmur2) with the kafka-clients jar that tests/kafka
# fetches from Maven Central. Compiles it with javac into build/ when stale.
#
#   tests/conformance/java/run.sh [--json] [vector files...]
#
# Without files it reads tests/conformance/vectors/*.json.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
lib="$("$repo/tests/kafka/fetch.sh")"
clients=("$lib"/kafka-clients-*.jar)
slf4j=("$lib"/slf4j-api-*.jar)
[[ -f "${clients[0]}" && -f "${slf4j[0]}" ]] || { echo "run.sh: no kafka-clients or slf4j-api jar in $lib" >&2; exit 2; }
cp="${clients[0]}:${slf4j[0]}"
out="$repo/build/conformance/java"
src="$here/KafkaMurmur2Check.java"
if [[ ! -f "$out/KafkaMurmur2Check.class" || "$src" -nt "$out/KafkaMurmur2Check.class" ]]; then
  mkdir -p "$out"
  javac -Xlint:all -Werror -cp "$cp" -d "$out" "$src" >&2
fi
args=()
files=0
for a in "$@"; do
  args+=("$a")
  [[ "$a" == -* ]] || files=1
done
[[ $files == 1 ]] || args+=("$repo"/tests/conformance/vectors/*.json)
# slf4j-api without a binding prints a three-line notice on stderr: drop it.
exec java -cp "$out:$cp" KafkaMurmur2Check "${args[@]}" 2> >(grep -v '^SLF4J: ' >&2)
