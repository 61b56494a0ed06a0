#!/usr/bin/env bash
# packaging/dist-test.sh: `make dist-test`. Installs each x86_64 artifact of
# dist/ the way a user would, each into a fresh place, and runs a smoke test
# that takes a role on a real broker, renews, makes a guarded write, checks it
# with describe and resigns (packaging/smoke/):
#   C       the tarball unpacked into a fresh prefix; smoke.c built with its
#           pkg-config file against the .so, and again linked statically
#           against libkrabka_coord.a
#   Python  the manylinux wheel into a fresh venv; the sdist into another one
#           (built from source with Go), and without Go on PATH: it must fail
#           with its one-sentence message
#   Node    krabka-coord + its platform package into a fresh npm folder
# then checks that a second release build of x86_64 gives the same bytes and
# runs the qemu checks (packaging/qemu-test.sh).
# The broker: $KRABKA_BOOTSTRAP when set (make test), else a single-node
# cluster started here and stopped on exit.
# DIST_TEST_SHORT=1 (make test): x86_64 glibc artifacts only, no sdist build
# from source, no rebuild, no qemu.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DIST=$ROOT/dist
SHORT=${DIST_TEST_SHORT:-0}
VERSION=$(sed -n 's/^#define KRABKA_VERSION_STRING "\(.*\)"$/\1/p' include/krabka_coord.h)
T=x86_64-linux-gnu
GO=${GO:-go}
CC=${CC:-cc}
TOPIC=krabka-dist-smoke
passed=0 failed=0

die() { echo "dist-test: FAIL: $*" >&2; exit 1; }
log() { echo "dist-test: $*"; }
check() { # name command...: runs it, counts it
    local name=$1
    shift
    local t0=$SECONDS
    # In the background, so that set -e holds inside the step (it does not
    # in an if's condition).
    (set -e; "$@") >"$WORK/$name.log" 2>&1 &
    if wait $!; then
        passed=$((passed + 1))
        log "ok   $name ($((SECONDS - t0)) s): $(grep -h 'smoke: ok' "$WORK/$name.log" | tail -1 | cut -c1-160)"
    else
        failed=$((failed + 1))
        log "FAIL $name; its output:"
        sed 's/^/    /' "$WORK/$name.log"
    fi
}

[[ -f $DIST/SHA256SUMS ]] || die "no dist/SHA256SUMS: run make dist first"
(cd "$DIST" && sha256sum --quiet -c SHA256SUMS) || die "dist/ does not match its SHA256SUMS"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/krabka-dist-test.XXXXXX")
cluster_started=0
cleanup() {
    if [[ $cluster_started == 1 ]]; then tests/kafka/cluster.sh stop --name dist-test >/dev/null 2>&1 || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

if [[ -z ${KRABKA_BOOTSTRAP:-} ]]; then
    tests/kafka/fetch.sh >/dev/null
    cluster_started=1
    KRABKA_BOOTSTRAP=$(tests/kafka/cluster.sh start --name dist-test --owner $$)
    log "started a broker at $KRABKA_BOOTSTRAP"
fi
export KRABKA_BOOTSTRAP KRABKA_SMOKE_TOPIC=$TOPIC
"$GO" run ./tests/kafka/cmd/ktopic "$KRABKA_BOOTSTRAP" "$TOPIC" 1 >/dev/null

packaging/toolchain.sh pkg-config >/dev/null

# Nothing of the repository may leak into the installed artifacts' runs.
unset KRABKA_COORD_LIBRARY PYTHONPATH NODE_PATH LD_LIBRARY_PATH

# ---- C: tarball -> fresh prefix -------------------------------------------
c_dynamic() {
    local prefix=$WORK/prefix-$T
    mkdir -p "$prefix"
    tar xzf "$DIST/krabka-coord-$VERSION-$T.tar.gz" -C "$prefix" --strip-components=1
    export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
    # shellcheck disable=SC2046
    "$CC" -std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Werror packaging/smoke/smoke.c -o "$WORK/smoke-dynamic" \
        $(pkg-config --cflags --libs krabka_coord) -Wl,-rpath,"$prefix/lib"
    # (grep on a captured string: with pipefail, `ldd | grep -q` can fail by SIGPIPE.)
    local deps
    deps=$(ldd "$WORK/smoke-dynamic")
    grep -q "libkrabka_coord.so.${VERSION%%.*} => $prefix/lib/libkrabka_coord.so.${VERSION%%.*}" <<<"$deps" ||
        { echo "$deps"; echo "not linked against the prefix's library"; return 1; }
    "$WORK/smoke-dynamic"
    # The test aids ship in the same tarball: the C example's test, written
    # with include/krabka_coord_testing.h, builds against the prefix and runs
    # (no broker: the in-process cluster).
    # shellcheck disable=SC2046
    "$CC" -std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Werror examples/c/controller_test.c -o "$WORK/controller-test" \
        $(pkg-config --cflags --libs krabka_coord) -Wl,-rpath,"$prefix/lib"
    "$WORK/controller-test"
}
c_static() {
    local prefix=$WORK/prefix-$T
    export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
    # shellcheck disable=SC2046
    "$CC" -std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Werror packaging/smoke/smoke.c -o "$WORK/smoke-static" \
        $(pkg-config --cflags --libs-only-L krabka_coord) -Wl,-Bstatic -lkrabka_coord -Wl,-Bdynamic \
        $(pkg-config --static --libs-only-l krabka_coord | sed 's/-lkrabka_coord//')
    local deps
    deps=$(ldd "$WORK/smoke-static")
    if grep -q krabka <<<"$deps"; then echo "$deps"; echo "linked dynamically"; return 1; fi
    "$WORK/smoke-static"
}
# ---- Python ----------------------------------------------------------------
py_wheel() {
    local venv=$WORK/venv-wheel
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$DIST/krabka_coord-$VERSION-py3-none-manylinux_2_28_x86_64.whl"
    (cd "$WORK" && KRABKA_SMOKE_EXPECT_LIBRARY_UNDER=$venv "$venv/bin/python" "$ROOT/packaging/smoke/smoke.py")
}
py_sdist() {
    local venv=$WORK/venv-sdist
    python3 -m venv "$venv"
    (cd "$WORK" && "$venv/bin/pip" install --disable-pip-version-check --no-cache-dir "$DIST/krabka_coord-$VERSION.tar.gz")
    (cd "$WORK" && KRABKA_SMOKE_EXPECT_LIBRARY_UNDER=$venv "$venv/bin/python" "$ROOT/packaging/smoke/smoke.py")
}
py_sdist_without_go() {
    local venv=$WORK/venv-nogo nogo out
    python3 -m venv "$venv"
    # PATH without the directories that hold go.
    nogo=$(echo "$PATH" | tr ':' '\n' | while read -r d; do [[ -x $d/go ]] || echo "$d"; done | paste -sd:)
    if out=$(cd "$WORK" && env PATH="$nogo" GO=go "$venv/bin/pip" install --disable-pip-version-check --no-cache-dir \
        "$DIST/krabka_coord-$VERSION.tar.gz" 2>&1); then
        echo "$out"; echo "the sdist installed without Go"; return 1
    fi
    echo "$out" | grep -F "krabka-coord: building libkrabka_coord from source needs Go 1.26 or newer and a C compiler, and 'go' is not on PATH" ||
        { echo "$out"; echo "no one-sentence error naming Go"; return 1; }
    echo "smoke: ok: without Go the sdist fails with one sentence"
}

# ---- Node ------------------------------------------------------------------
node_packages() {
    local dir=$WORK/npm
    mkdir -p "$dir"
    echo '{ "private": true }' >"$dir/package.json"
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error \
        "$DIST/krabka-coord-$VERSION.tgz" "$DIST/krabka-coord-linux-x64-gnu-$VERSION.tgz")
    cp packaging/smoke/smoke.js "$dir/smoke.js"
    (cd "$dir" && KRABKA_SMOKE_EXPECT_LIBRARY_UNDER=$dir/node_modules/@krabka/coord-linux-x64-gnu node smoke.js)
}
node_without_platform_package() {
    # The error a user sees when the platform package is missing: a code and the paths tried.
    local dir=$WORK/npm-bare
    mkdir -p "$dir"
    echo '{ "private": true }' >"$dir/package.json"
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "$DIST/krabka-coord-$VERSION.tgz")
    rm -rf "$dir/node_modules/@krabka"
    (cd "$dir" && SONAME_MAJOR=${VERSION%%.*} node -e '
const k = require("krabka-coord");
try { k.version(); console.log("loaded?"); process.exit(1); } catch (e) {
  if (e.code !== "KRABKA_LIBRARY_NOT_FOUND" || !Array.isArray(e.tried) || e.tried.length < 2) { console.log(e); process.exit(1); }
  if (!/@krabka\/coord-linux-x64-gnu/.test(e.message) || !new RegExp("libkrabka_coord\\.so\\." + process.env.SONAME_MAJOR + "\\b").test(e.message)) { console.log(e.message); process.exit(1); }
  console.log("smoke: ok: " + e.code + ", tried " + e.tried.length + " places");
}')
}

check c-tarball-dynamic c_dynamic
check c-tarball-static c_static
check python-wheel py_wheel
check python-sdist-without-go py_sdist_without_go
check node-packages node_packages
check node-without-platform-package node_without_platform_package
if [[ $SHORT != 1 ]]; then
    check python-sdist-from-source py_sdist
    reproducible() {
        # A second build in another directory, with an empty Go cache, gives the same bytes.
        local copy=$WORK/copy
        mkdir -p "$copy"
        git ls-files -z | (cd "$ROOT" && xargs -0 cp --parents -t "$copy")
        local commit
        commit=$(strings -a "build/release/$T/lib/libkrabka_coord.so.$VERSION" | sed -n "s/^.*krabka-coord-build: $VERSION $T //p" | head -1)
        (cd "$copy" && GOCACHE=$WORK/gocache KRABKA_BUILD_COMMIT=$commit ./build.sh --release $T)
        cmp "build/release/$T/lib/libkrabka_coord.so.$VERSION" "$copy/build/release/$T/lib/libkrabka_coord.so.$VERSION"
        cmp "build/release/$T/lib/libkrabka_coord.a" "$copy/build/release/$T/lib/libkrabka_coord.a"
        echo "smoke: ok: a second build (other directory, empty Go cache) gave the same bytes"
    }
    check reproducible-build reproducible
fi
log "artifacts of $T$([[ $SHORT == 1 ]] && echo ', short form'):"
echo "dist-test: $passed passed, $failed failed"
[[ $failed == 0 ]] || exit 1
if [[ $SHORT != 1 ]]; then
    packaging/qemu-test.sh
fi
