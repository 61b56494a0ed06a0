#!/usr/bin/env bash
# packaging/qemu-test.sh: `make dist-qemu-test` (also the last step of make
# dist-test). Proves the aarch64 and armv7 release libraries on an x86_64
# machine: the C test programs are cross-compiled with zig cc (same glibc 2.28
# floor) and run under qemu user-mode emulation with Debian's cross C
# libraries (qemu-user, libc6-arm64-cross, libc6-armhf-cross; installed on
# demand by packaging/toolchain.sh):
#   conformance   the golden vectors through the C API (tests/c/conformance.c)
#   misuse        tests/c/misuse.c against the .so, and again linked statically
#                 against libkrabka_coord.a
#   live          tests/c/live.c on a broker on 127.0.0.1 (acquire, renew,
#                 guarded writes, takeover and fencing, resign, describe)
#   smoke         packaging/smoke/smoke.c: acquire, renew, produce, describe, resign
# The libraries are build/release/TARGET (make dist builds them; missing ones
# are built here). The broker: $KRABKA_BOOTSTRAP when set, else a single-node
# cluster started here and stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
GO=${GO:-go}
VERSION=$(sed -n 's/^#define KRABKA_VERSION_STRING "\(.*\)"$/\1/p' include/krabka_coord.h)
TARGETS=${QEMU_TARGETS:-"aarch64-linux-gnu armv7-linux-gnueabihf"}
passed=0 failed=0

die() { echo "qemu-test: FAIL: $*" >&2; exit 1; }
log() { echo "qemu-test: $*"; }

packaging/toolchain.sh qemu >/dev/null
ZBIN=$(packaging/toolchain.sh zig)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/krabka-qemu-test.XXXXXX")
cluster_started=0
cleanup() {
    if [[ $cluster_started == 1 ]]; then tests/kafka/cluster.sh stop --name qemu-test >/dev/null 2>&1 || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

if [[ -z ${KRABKA_BOOTSTRAP:-} ]]; then
    tests/kafka/fetch.sh >/dev/null
    cluster_started=1
    KRABKA_BOOTSTRAP=$(tests/kafka/cluster.sh start --name qemu-test --owner $$)
    log "started a broker at $KRABKA_BOOTSTRAP"
fi
export KRABKA_BOOTSTRAP
"$GO" run ./tests/kafka/cmd/ktopic "$KRABKA_BOOTSTRAP" krabka-qemu-live 3 >/dev/null
"$GO" run ./tests/kafka/cmd/ktopic "$KRABKA_BOOTSTRAP" krabka-qemu-smoke 1 >/dev/null
python3 tests/c/flatten_vectors.py tests/conformance/vectors/*.json >"$WORK/vectors.lines"

run() { # target name command...
    local target=$1 name=$2
    shift 2
    local t0=$SECONDS
    (set -e; "$@") >"$WORK/$target-$name.log" 2>&1 &
    if wait $!; then
        passed=$((passed + 1))
        log "ok   $target $name ($((SECONDS - t0)) s): $(tail -1 "$WORK/$target-$name.log" | cut -c1-150)"
    else
        failed=$((failed + 1))
        log "FAIL $target $name; its output:"
        sed 's/^/    /' "$WORK/$target-$name.log"
    fi
}

for t in $TARGETS; do
    case $t in
    aarch64-linux-gnu) qemu=qemu-aarch64 sysroot=/usr/aarch64-linux-gnu ztarget=aarch64-linux-gnu.2.28 zflags="" ;;
    armv7-linux-gnueabihf) qemu=qemu-arm sysroot=/usr/arm-linux-gnueabihf ztarget=arm-linux-gnueabihf.2.28 zflags=-mcpu=generic+v7a+vfp3d16-neon-d32 ;;
    *) die "no qemu set-up for $t" ;;
    esac
    rel=$ROOT/build/release/$t
    [[ -f $rel/lib/libkrabka_coord.so.$VERSION ]] || ./build.sh --release "$t"
    [[ -d $sysroot ]] || die "$sysroot is missing (Debian's cross C library for $t)"
    bin=$WORK/$t
    mkdir -p "$bin"
    cc=("$ZBIN/zig-cc" -target "$ztarget" $zflags -std=c99 -D_POSIX_C_SOURCE=200809L -O1 -I"$rel/include")
    for p in conformance misuse live; do
        "${cc[@]}" "tests/c/$p.c" -o "$bin/$p" -L"$rel/lib" -lkrabka_coord -pthread -Wl,-rpath,"$rel/lib"
    done
    "${cc[@]}" packaging/smoke/smoke.c -o "$bin/smoke" -L"$rel/lib" -lkrabka_coord -Wl,-rpath,"$rel/lib"
    "${cc[@]}" tests/c/misuse.c -o "$bin/misuse-static" "$rel/lib/libkrabka_coord.a" -lpthread -ldl -lresolv
    kind=$(file "$bin/misuse")
    grep -q "$([[ $t == aarch64* ]] && echo 'ARM aarch64' || echo 'ARM, EABI5')" <<<"$kind" || die "$bin/misuse is not a $t program: $kind"
    # The programs find the library through their rpath; glibc and its loader
    # come from the cross sysroot.
    q=("$qemu" -L "$sysroot")
    run "$t" conformance "${q[@]}" "$bin/conformance" "$WORK/vectors.lines"
    run "$t" misuse "${q[@]}" "$bin/misuse"
    run "$t" misuse-static-archive "${q[@]}" "$bin/misuse-static"
    run "$t" live env KRABKA_C_TOPIC=krabka-qemu-live "${q[@]}" "$bin/live"
    run "$t" smoke env KRABKA_SMOKE_TOPIC=krabka-qemu-smoke "${q[@]}" "$bin/smoke"
done
log "under qemu user-mode: $TARGETS:"
echo "qemu-test: $passed passed, $failed failed"
[[ $failed == 0 ]]
