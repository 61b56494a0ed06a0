#!/usr/bin/env bash
# Builds the C ABI library:
#   build/libkrabka_coord.so.2.0.0  (SONAME libkrabka_coord.so.2, only krabka_* exported)
#   build/libkrabka_coord.so.2, build/libkrabka_coord.so  (symlinks)
#   build/include/krabka_coord.h    (the hand-written contract)
#   build/include/krabka_coord_testing.h  (its test aids: the in-process cluster)
#   build/krabka_coord.pc           (pkg-config, pointing at build/)
#   build/internal/krabka_coord_cgo.h  (cgo's generated header: internal, never installed)
#   build/bin/krabka-coord          (the operator's command line, cmd/krabka-coord)
# and compiles tests/c/header_drift.c, which includes both headers, so any
# drift between the contract and the exports fails the build.
#
# Usage: ./build.sh [--force]     (skips the Go build when nothing changed)
#
# Release builds (make dist; the debug build above stays the default):
#   ./build.sh --release TARGET [--out DIR]
# TARGET is one of x86_64-linux-gnu, aarch64-linux-gnu, armv7-linux-gnueabihf,
# or "host" (the host's own C compiler,
# no cross toolchain: what an sdist build from source uses). It writes
# DIR (default build/release/TARGET):
#   lib/libkrabka_coord.so.2.0.0 (+ .so.2, .so)  stripped (-s -w), -trimpath, SONAME .so.2
#   lib/libkrabka_coord.a                        -buildmode=c-archive, same exports
#   lib/pkgconfig/krabka_coord.pc                relocatable (${pcfiledir}), static flags too
#   include/krabka_coord.h, include/krabka_coord_testing.h
# Cross targets use `zig cc` (PyPI's ziglang, installed on demand by
# packaging/toolchain.sh) against glibc 2.28 stubs, so the result loads on any
# glibc >= 2.28 (see docs/PLATFORMS.md). The build is reproducible: the same
# commit gives the same bytes (no paths, no dates, no build-machine names).
# The version comes from include/krabka_coord.h; the stamp "krabka-coord-build:
# VERSION TARGET COMMIT" is linked in (capi/stamp.go).
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD
GO=${GO:-go}
CC=${CC:-cc}
OUT=$ROOT/build
VERSION=$(sed -n 's/^#define KRABKA_VERSION_STRING "\(.*\)"$/\1/p' include/krabka_coord.h)
MAJOR=${VERSION%%.*}
REAL=libkrabka_coord.so.$VERSION
SONAME=libkrabka_coord.so.$MAJOR
# The shared library's own references to pthread_getattr_np (Go's runtime/cgo)
# go to capi/kc_stack.c, which answers the main thread's stack bounds from
# memory instead of glibc's parse of /proc/self/maps on every call from a host
# that runs native calls on a stack of its own (Node's koffi); see that file.
# One dash: zig cc (the cross builds) rejects --wrap but passes -wrap on to
# its linker; GNU ld takes either.
WRAP=-Wl,-wrap=pthread_getattr_np
force=0
# The wrap took: the library's only reference to pthread_getattr_np is then
# kc_stack.c's weak __real_ one (runtime/cgo's own would be a strong one).
check_wrap() { # LIB
    local syms
    syms=$(readelf --dyn-syms -W "$1")
    grep -Eq ' WEAK +DEFAULT +UND pthread_getattr_np(@|$)' <<<"$syms" ||
        { echo "build.sh: $1 calls pthread_getattr_np directly: the link missed $WRAP (capi/kc_stack.c)" >&2; exit 1; }
}
[[ ${1:-} == --force ]] && force=1

# ---------------------------------------------------------------- release ---
release() { # TARGET [--out DIR]
    local target=${1:-} out="" goarch goarm="" ztarget zflags="" glibc_max="" cc ar
    [[ -n $target ]] || { echo "build.sh: --release needs a target (x86_64-linux-gnu, aarch64-linux-gnu, armv7-linux-gnueabihf, host)" >&2; exit 2; }
    shift
    if [[ ${1:-} == --out ]]; then out=${2:?--out needs a directory}; shift 2; fi
    [[ $# == 0 ]] || { echo "build.sh: unexpected argument $1" >&2; exit 2; }
    out=${out:-$OUT/release/$target}
    case $target in
    x86_64-linux-gnu) goarch=amd64 ztarget=x86_64-linux-gnu.2.28 glibc_max=2.28 ;;
    aarch64-linux-gnu) goarch=arm64 ztarget=aarch64-linux-gnu.2.28 glibc_max=2.28 ;;
    # ARMv7-A, hard float, VFPv3-D16 and no NEON: Debian's armhf baseline
    # (GOARM=7 needs VFPv3 and nothing more).
    armv7-linux-gnueabihf) goarch=arm goarm=7 ztarget=arm-linux-gnueabihf.2.28 zflags=-mcpu=generic+v7a+vfp3d16-neon-d32 glibc_max=2.28 ;;
    # No musl targets: the musl c-shared build crashed on load (docs/PLATFORMS.md).
    host) goarch=$("$GO" env GOARCH) ;;
    *) echo "build.sh: unknown release target '$target'" >&2; exit 2 ;;
    esac
    if [[ $target == host ]]; then
        cc=$CC ar=${AR:-ar}
    else
        local zbin
        zbin=$("$ROOT/packaging/toolchain.sh" zig)
        cc="$zbin/zig-cc -target $ztarget${zflags:+ $zflags}" ar=$zbin/zig-ar
    fi
    # The commit: $KRABKA_BUILD_COMMIT, else git, else the file an sdist carries.
    local commit=${KRABKA_BUILD_COMMIT:-}
    if [[ -n $commit ]]; then :
    elif [[ -f $ROOT/.krabka-commit ]]; then commit=$(head -1 "$ROOT/.krabka-commit")
    elif ! git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then commit=unknown
    else
        commit=$(git -C "$ROOT" rev-parse --short=12 HEAD)
        [[ -z $(git -C "$ROOT" status --porcelain -- capi core include go.mod go.sum build.sh 2>/dev/null) ]] || commit=$commit-modified
    fi
    local stamp="krabka-coord-build: $VERSION $target $commit"
    # The version has one source (the header); the Go constants must agree.
    # (The Go constants VersionMajor/Minor/Patch live in capi/ or core/.)
    local part name i=0
    for name in Major Minor Patch; do
        i=$((i + 1))
        part=$(echo "$VERSION" | cut -d. -f$i)
        grep -rqE "[vV]ersion$name += +$part\$" --include='*.go' capi core ||
            { echo "build.sh: the Go constant version$name differs from the header's $VERSION" >&2; exit 1; }
    done

    # Global (not local): the EXIT trap runs after this function's scope is
    # gone, also when a step fails (set -e).
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/krabka-release.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    # -trimpath and no VCS/date stamps: the same sources give the same bytes.
    # -s -w: no symbol table, no DWARF; --strip-all for the C objects too.
    # CGO_CFLAGS without -g: nothing of the build directory is recorded.
    local -a goenv=(CGO_ENABLED=1 GOOS=linux GOARCH=$goarch GOARM=$goarm "CC=$cc"
        "CGO_CFLAGS=-O2" "CGO_LDFLAGS=" GOFLAGS=-buildvcs=false)
    # -buildid= : Go's build ID hashes the link flags, which hold this
    # checkout's path (the version script); the GNU build ID is instead a hash
    # of the output itself (--build-id=sha1), the same wherever it is built.
    local ld="-s -w -buildid= -X 'main.buildStamp=$stamp'"
    echo "build.sh: release $target (${ztarget:-host cc}) -> $out"
    env "${goenv[@]}" "$GO" build -buildmode=c-shared -trimpath \
        -ldflags "$ld -extldflags \"-Wl,--build-id=sha1 -Wl,--strip-all -Wl,-soname,$SONAME -Wl,--version-script=$ROOT/capi/exports.map $WRAP\"" \
        -o "$tmp/$REAL" ./capi
    env "${goenv[@]}" "$GO" build -buildmode=c-archive -trimpath \
        -ldflags "$ld -extar=$ar" -o "$tmp/libkrabka_coord.a" ./capi

    rm -rf "$out"
    mkdir -p "$out/lib/pkgconfig" "$out/include"
    install -m 0755 "$tmp/$REAL" "$out/lib/$REAL"
    install -m 0644 "$tmp/libkrabka_coord.a" "$out/lib/libkrabka_coord.a"
    ln -sfn "$REAL" "$out/lib/$SONAME"
    ln -sfn "$REAL" "$out/lib/libkrabka_coord.so"
    install -m 0644 include/krabka_coord.h "$out/include/krabka_coord.h"
    install -m 0644 include/krabka_coord_testing.h "$out/include/krabka_coord_testing.h"
    # Relocatable: the prefix is wherever the tarball was unpacked.
    # `pkg-config --static` links libkrabka_coord.a: the Go runtime and its
    # resolver need these from libc (separate libraries before glibc 2.34).
    sed -e 's|@PREFIX@|${pcfiledir}/../..|' -e 's|@LIBDIR@|${prefix}/lib|' -e 's|@INCLUDEDIR@|${prefix}/include|' \
        -e "s|@VERSION@|$VERSION|" -e 's|^Libs.private:.*|Libs.private: -lpthread -ldl -lresolv|' \
        capi/krabka_coord.pc.in >"$out/lib/pkgconfig/krabka_coord.pc"

    # Checks on what was built: the stamp is in, SONAME, exports, and no glibc
    # symbol newer than the target's floor.
    grep -aq "$stamp" "$out/lib/$REAL" || { echo "build.sh: the version stamp is missing from $out/lib/$REAL" >&2; exit 1; }
    local dyn
    dyn=$(readelf -d "$out/lib/$REAL")
    grep -q "SONAME.*\[$SONAME\]" <<<"$dyn" || { echo "build.sh: $REAL lacks SONAME $SONAME" >&2; exit 1; }
    check_wrap "$out/lib/$REAL"
    if [[ -n $glibc_max ]]; then
        local newest
        newest=$(objdump -T "$out/lib/$REAL" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
        if [[ $(printf '%s\n%s\n' "$newest" "$glibc_max" | sort -V | tail -1) != "$glibc_max" ]]; then
            echo "build.sh: $REAL needs GLIBC_$newest, newer than the target's $glibc_max" >&2; exit 1
        fi
        echo "build.sh: $target: newest glibc symbol version GLIBC_$newest (floor $glibc_max)"
    fi
}

if [[ ${1:-} == --release ]]; then
    shift
    mkdir -p "$OUT"
    release "$@"
    exit 0
fi

mkdir -p "$OUT/include" "$OUT/internal"

# One build at a time (make -j, or several layers' targets calling build.sh).
if command -v flock >/dev/null; then
    exec 9>"$OUT/.build.lock"
    flock 9
fi

# Rebuild when any input is newer than the library (Go sources of the module
# except tests, the headers, the version script, go.mod/go.sum).
stale() {
    [[ $force == 1 || ! -f $OUT/$REAL ]] && return 0
    [[ -n $(find capi core include go.mod go.sum -newer "$OUT/$REAL" \
        \( -name '*.go' -o -name '*.h' -o -name '*.c' -o -name '*.map' -o -name 'go.*' \) \
        ! -name '*_test.go' -print -quit) ]]
}

if stale; then
    echo "build.sh: go build -buildmode=c-shared -> build/$REAL"
    # DWARF 4 for the C parts so that valgrind 3.19 reads their debug info.
    CGO_CFLAGS=${CGO_CFLAGS:--O2 -g -gdwarf-4} "$GO" build -buildmode=c-shared -trimpath \
        -ldflags "-extldflags \"-Wl,-soname,$SONAME -Wl,--version-script=$ROOT/capi/exports.map $WRAP\"" \
        -o "$OUT/$REAL" ./capi
    # go build writes its header next to the library, named after it minus the
    # last extension; keep it out of the public include directory.
    mv -f "$OUT/${REAL%.*}.h" "$OUT/internal/krabka_coord_cgo.h"
    check_wrap "$OUT/$REAL"
else
    echo "build.sh: build/$REAL is up to date"
fi

ln -sfn "$REAL" "$OUT/$SONAME"
ln -sfn "$REAL" "$OUT/libkrabka_coord.so"
cp -f include/krabka_coord.h "$OUT/include/krabka_coord.h"
cp -f include/krabka_coord_testing.h "$OUT/include/krabka_coord_testing.h"

# The command line (pure Go, no cgo): rebuilt when a Go input changed.
CLI=$OUT/bin/krabka-coord
if [[ $force == 1 || ! -f $CLI || -n $(find cmd core go.mod go.sum include/krabka_coord.h -newer "$CLI" \
        \( -name '*.go' -o -name 'go.*' -o -name '*.h' \) ! -name '*_test.go' -print -quit) ]]; then
    echo "build.sh: go build -> build/bin/krabka-coord"
    mkdir -p "$OUT/bin"
    CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-X main.version=$VERSION" -o "$CLI" ./cmd/krabka-coord
fi

# Drift check: the generated prototypes and the contract in one translation unit.
"$CC" -std=c99 -Wall -Wextra -Werror -fsyntax-only -I include -I capi -I "$OUT/internal" \
    tests/c/header_drift.c

# pkg-config file for using the library in place (make install writes its own).
write_pc() { # prefix libdir includedir dest
    sed -e "s|@PREFIX@|$1|" -e "s|@LIBDIR@|$2|" -e "s|@INCLUDEDIR@|$3|" \
        -e "s|@VERSION@|$VERSION|" capi/krabka_coord.pc.in >"$4"
}
write_pc "$OUT" "$OUT" "$OUT/include" "$OUT/krabka_coord.pc"

if [[ ${PREFIX:-} != "" && ${INSTALL:-0} == 1 ]]; then
    DEST=${DESTDIR:-}
    LIBDIR=${LIBDIR:-$PREFIX/lib}
    INCDIR=$PREFIX/include
    PCDIR=$LIBDIR/pkgconfig
    install -d "$DEST$LIBDIR" "$DEST$INCDIR" "$DEST$PCDIR"
    install -m 0755 "$OUT/$REAL" "$DEST$LIBDIR/$REAL"
    ln -sfn "$REAL" "$DEST$LIBDIR/$SONAME"
    ln -sfn "$REAL" "$DEST$LIBDIR/libkrabka_coord.so"
    install -m 0644 include/krabka_coord.h "$DEST$INCDIR/krabka_coord.h"
    install -m 0644 include/krabka_coord_testing.h "$DEST$INCDIR/krabka_coord_testing.h"
    install -d "$DEST$PREFIX/bin"
    install -m 0755 "$CLI" "$DEST$PREFIX/bin/krabka-coord"
    write_pc "$PREFIX" "$LIBDIR" "$INCDIR" "$DEST$PCDIR/krabka_coord.pc"
    echo "build.sh: installed into $DEST$PREFIX"
fi
