#!/bin/sh
# tests/tools/promtool.sh ARGS...: runs Prometheus' promtool with ARGS.
#
# promtool is not installed on the system: the first run fetches Debian's
# `prometheus` package with `apt-get download` (no installation, nothing
# outside the cache changes except apt's package lists, refreshed with
# `apt-get update` only when the download fails without them) and keeps only
# usr/bin/promtool from it, in build/tools/promtool/ (or
# $KRABKA_PROMTOOL_CACHE). Later runs use that copy. `make monitoring-check`
# runs it on packaging/monitoring/prometheus/ (mk/82-monitoring.mk).
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${KRABKA_PROMTOOL_CACHE:-$root/build/tools/promtool}
bin=$cache/promtool

fail() {
    echo "promtool.sh: $1" >&2
    exit 1
}

fetch() {
    mkdir -p "$cache" || fail "cannot create the cache directory $cache."
    # One fetch at a time (two make jobs may both find the cache empty).
    exec 9>"$cache/.lock"
    flock 9
    if [ -x "$bin" ]; then
        exec 9>&-
        return
    fi
    work=$(mktemp -d "$cache/fetch.XXXXXX")
    log=$work/apt.log
    # As root, apt downloads as the _apt user, who cannot write here.
    sandbox=""
    [ "$(id -u)" = 0 ] && sandbox="-o APT::Sandbox::User=root"
    # shellcheck disable=SC2086
    if ! (cd "$work" && apt-get $sandbox download prometheus) >"$log" 2>&1; then
        echo "promtool.sh: apt-get download prometheus failed; running apt-get update once and trying again" >&2
        # shellcheck disable=SC2086
        if ! { apt-get update >>"$log" 2>&1 && (cd "$work" && apt-get $sandbox download prometheus) >>"$log" 2>&1; }; then
            sed 's/^/    apt: /' "$log" >&2
            rm -rf "$work"
            fail "cannot fetch promtool: 'apt-get download prometheus' failed even after 'apt-get update' (see apt's output above; Debian's prometheus package is needed, apt sources must reach a Debian mirror)."
        fi
    fi
    set -- "$work"/prometheus_*.deb
    [ -f "$1" ] || { rm -rf "$work"; fail "apt-get download prometheus reported success but left no prometheus_*.deb in $work."; }
    # Only the one binary leaves the package.
    if ! dpkg-deb --fsys-tarfile "$1" | tar -x -C "$work" ./usr/bin/promtool; then
        rm -rf "$work"
        fail "cannot extract usr/bin/promtool from $(basename "$1")."
    fi
    dpkg-deb -f "$1" Version >"$cache/VERSION"
    mv "$work/usr/bin/promtool" "$bin"
    rm -rf "$work"
    exec 9>&-
    echo "promtool.sh: promtool $(cat "$cache/VERSION") from Debian's prometheus package is in $cache" >&2
}

[ -x "$bin" ] || fetch
"$bin" --version >/dev/null 2>&1 || fail "$bin does not run; remove $cache and run again."
exec "$bin" "$@"
