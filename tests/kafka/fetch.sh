#!/usr/bin/env bash
# Fetch the Kafka broker + log4j2 jars from Maven Central into tests/kafka/lib/
# (git-ignored). A complete cache (lib/.complete, holding a hash of pom.xml) is
# never fetched again. Prints the lib directory on stdout.
# Env: KRABKA_KAFKA_LIB overrides the folder. KRABKA_KAFKA_VERSION fetches
# another Apache Kafka release (e.g. 3.9.1, 3.0.2: make compat) into
# tests/kafka/lib-<version>/.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="${KRABKA_KAFKA_VERSION:-}"
[[ -z "$version" || "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "fetch.sh: KRABKA_KAFKA_VERSION=$version is not a release number such as 3.9.1" >&2; exit 1; }
if [[ -n "$version" ]]; then lib="${KRABKA_KAFKA_LIB:-$here/lib-$version}"; else lib="${KRABKA_KAFKA_LIB:-$here/lib}"; fi
pomsum="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)${version:+-$version}"

if [[ -f "$lib/.complete" && "$(cat "$lib/.complete")" == "$pomsum" ]]; then
  echo "$lib"; exit 0
fi
cache="$here/.cache"   # git-ignored
mkdir -p "$cache" "$(dirname "$lib")"
exec 9>"$cache/fetch${version:+-$version}.lock"
flock -w 600 9 || { echo "fetch.sh: timed out waiting for another fetch ($cache/fetch.lock)" >&2; exit 1; }
if [[ -f "$lib/.complete" && "$(cat "$lib/.complete")" == "$pomsum" ]]; then
  echo "$lib"; exit 0
fi
command -v mvn >/dev/null || { echo "fetch.sh: mvn (Maven) is required to fetch Kafka" >&2; exit 1; }
command -v java >/dev/null || { echo "fetch.sh: java (17+) is required to run Kafka" >&2; exit 1; }
tmp="$cache/lib.tmp.$$"
rm -rf "$tmp"
echo "fetch.sh: fetching Kafka jars into $lib (one time)..." >&2
start=$(date +%s)
if ! mvn -q -B -f "$here/pom.xml" \
    org.apache.maven.plugins:maven-dependency-plugin:3.11.0:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$tmp" ${version:+-Dkafka.version=$version} >&2; then
  rm -rf "$tmp"
  echo "fetch.sh: mvn copy-dependencies failed (is Maven Central reachable?)" >&2
  exit 1
fi
ls "$tmp"/kafka_2.13-*.jar "$tmp"/kafka-clients-*.jar "$tmp"/log4j-core-*.jar >/dev/null \
  || { echo "fetch.sh: expected jars missing in $tmp" >&2; exit 1; }
rm -rf "$lib"
mv "$tmp" "$lib"
echo "$pomsum" > "$lib/.complete"
echo "fetch.sh: done in $(( $(date +%s) - start ))s" >&2
echo "$lib"
