#!/usr/bin/env bash
# Builds the C ABI library:
#   build/libkrabka_coord.so.1.0.0  (SONAME libkrabka_coord.so.1, only krabka_* exported)
#   build/libkrabka_coord.so.1, build/libkrabka_coord.so  (symlinks)
#   build/include/krabka_coord.h    (the hand-written contract)
#   build/krabka_coord.pc           (pkg-config, pointing at build/)
#   build/internal/krabka_coord_cgo.h  (cgo's generated header: internal, never installed)
# and compiles tests/c/header_drift.c, which includes both headers, so any
# drift between the contract and the exports fails the build.
#
# Usage: ./build.sh [--force]     (skips the Go build when nothing changed)
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
force=0
[[ ${1:-} == --force ]] && force=1

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
        -ldflags "-extldflags \"-Wl,-soname,$SONAME -Wl,--version-script=$ROOT/capi/exports.map\"" \
        -o "$OUT/$REAL" ./capi
    # go build writes its header next to the library, named after it minus the
    # last extension; keep it out of the public include directory.
    mv -f "$OUT/${REAL%.*}.h" "$OUT/internal/krabka_coord_cgo.h"
else
    echo "build.sh: build/$REAL is up to date"
fi

ln -sfn "$REAL" "$OUT/$SONAME"
ln -sfn "$REAL" "$OUT/libkrabka_coord.so"
cp -f include/krabka_coord.h "$OUT/include/krabka_coord.h"

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
    write_pc "$PREFIX" "$LIBDIR" "$INCDIR" "$DEST$PCDIR/krabka_coord.pc"
    echo "build.sh: installed into $DEST$PREFIX"
fi
