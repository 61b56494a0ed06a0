#!/usr/bin/env bash
# packaging/dist.sh: `make dist`. Release-builds libkrabka_coord for every
# target and writes every artifact to dist/ (see docs/PLATFORMS.md):
#   krabka-coord-VERSION-TARGET.tar.gz      lib/ (.so, .so.2, .so.2.0.0, .a), lib/pkgconfig,
#                                           include/, docs/ (PROTOCOL.md, ABI.md), LICENSE, README
#   krabka_coord-VERSION-py3-none-PLAT.whl  one per target (manylinux_2_28)
#   krabka_coord-VERSION.tar.gz             the Python sdist (builds from source with Go)
#   krabka-coord-VERSION.tgz                the npm package
#   krabka-coord-PLATFORM-VERSION.tgz       one npm package per target (@krabka/coord-PLATFORM)
#   SHA256SUMS
# Each artifact is checked as it is made: glibc floor (build.sh), auditwheel
# show, no setuptools warning, nothing left in the source tree, the library in
# each wheel and npm package is the one built for its target, each tarball
# carries docs/PROTOCOL.md and docs/ABI.md, and no text file of any artifact
# points at the decision record beside a checkout (../shared,
# COORDINATION.md), which a user of an artifact does not have.
#
# DIST_TARGETS="x86_64-linux-gnu ..." limits the targets (default: all three).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DIST=$ROOT/dist
STAGE=$ROOT/build/dist-stage
ALL_TARGETS="x86_64-linux-gnu aarch64-linux-gnu armv7-linux-gnueabihf"
TARGETS=${DIST_TARGETS:-$ALL_TARGETS}
VERSION=$(sed -n 's/^#define KRABKA_VERSION_STRING "\(.*\)"$/\1/p' include/krabka_coord.h)
REAL=libkrabka_coord.so.$VERSION

die() { echo "dist: FAIL: $*" >&2; exit 1; }
log() { echo "dist: $*"; }

# Per target: the wheel's platform tag, auditwheel's architecture name and
# the npm package's platform part (process.platform-arch[-libc]).
wheel_plat() {
    case $1 in
    x86_64-linux-gnu) echo manylinux_2_28_x86_64 ;;
    aarch64-linux-gnu) echo manylinux_2_28_aarch64 ;;
    armv7-linux-gnueabihf) echo manylinux_2_28_armv7l ;;
    *) die "no wheel platform for $1" ;;
    esac
}
npm_plat() { # -> "suffix os cpu libc"
    case $1 in
    x86_64-linux-gnu) echo "linux-x64-gnu linux x64 glibc" ;;
    aarch64-linux-gnu) echo "linux-arm64-gnu linux arm64 glibc" ;;
    armv7-linux-gnueabihf) echo "linux-arm-gnueabihf linux arm glibc" ;;
    *) die "no npm platform for $1" ;;
    esac
}

for t in $TARGETS; do [[ " $ALL_TARGETS " == *" $t "* ]] || die "unknown target $t (known: $ALL_TARGETS)"; done
cmp -s LICENSE bindings/node/LICENSE || die "bindings/node/LICENSE differs from LICENSE (copy it again)"
command -v npm >/dev/null || die "npm is needed for the npm packages"

# Reproducible archives: every date is the commit's date.
if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
    SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || echo 315532800)
fi
export SOURCE_DATE_EPOCH
PY=$(packaging/toolchain.sh python)
before_tree=$(git status --porcelain --ignored -- bindings include capi core 2>/dev/null || true)

rm -rf "$DIST" "$STAGE"
mkdir -p "$DIST" "$STAGE"

# ---- libraries ----------------------------------------------------------
# DIST_REUSE_BUILDS=1 (for iterating on packaging only) keeps existing build/release/TARGET.
for t in $TARGETS; do
    if [[ ${DIST_REUSE_BUILDS:-0} == 1 && -f build/release/$t/lib/$REAL ]]; then
        log "reusing build/release/$t (DIST_REUSE_BUILDS=1)"
        continue
    fi
    ./build.sh --release "$t"
done

for t in $TARGETS; do
    name=krabka-coord-$VERSION-$t
    dir=$STAGE/tar/$name
    mkdir -p "$dir"
    cp -a "build/release/$t/." "$dir/"
    cp LICENSE "$dir/LICENSE"
    mkdir -p "$dir/docs"
    cp docs/PROTOCOL.md docs/ABI.md "$dir/docs/"
    cat >"$dir/README" <<EOF
libkrabka_coord $VERSION for $t (krabka-coord: leader election, leases and
fencing tokens on Apache Kafka). Unpack anywhere; the pkg-config file is
relocatable:

  PKG_CONFIG_PATH=\$PWD/lib/pkgconfig cc app.c \$(pkg-config --cflags --libs krabka_coord)
  cc app.c -Iinclude lib/libkrabka_coord.a -lpthread -ldl -lresolv     # static

include/krabka_coord.h is the C contract; include/krabka_coord_testing.h
its test aids (an in-process cluster with a manual clock and faults, for
unit tests without a broker). docs/PROTOCOL.md is the protocol
it speaks on Kafka (the header's section references point there), and
docs/ABI.md the rule by which the ABI changes. See docs/PLATFORMS.md in the
repository for the supported systems.
EOF
    tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
        --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
        -C "$STAGE/tar" -cf - "$name" | gzip -9n >"$DIST/$name.tar.gz"
    log "$name.tar.gz"
done

# ---- Python ---------------------------------------------------------------
# setuptools warns on stderr or stdout with "warning"; any such line fails.
pybuild() { # log-name args...
    local out=$STAGE/$1.log
    shift
    if ! (cd bindings/python && env -u PYTHONDONTWRITEBYTECODE "$PY" -m build --no-isolation "$@" --outdir "$DIST" .) >"$out" 2>&1; then
        cat "$out" >&2
        die "python -m build $* failed"
    fi
    if grep -in 'warning' "$out"; then die "the Python build printed warnings (above; full log $out)"; fi
}
for t in $TARGETS; do
    plat=$(wheel_plat "$t")
    KRABKA_COORD_LIBRARY=$ROOT/build/release/$t/lib/$REAL KRABKA_COORD_PLATFORM=$plat pybuild "wheel-$t" --wheel
    whl=$DIST/krabka_coord-$VERSION-py3-none-$plat.whl
    [[ -f $whl ]] || die "no wheel $whl"
    # The library inside is the one built for this target, and LICENSE is in.
    "$PY" - "$whl" "build/release/$t/lib/$REAL" <<'EOF' || die "wheel $whl content"
import hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = z.namelist()
lib = z.read("krabka_coord/_lib/libkrabka_coord.so")
assert hashlib.sha256(lib).digest() == hashlib.sha256(open(sys.argv[2], "rb").read()).digest(), "library differs"
assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), "no LICENSE"
assert "krabka_coord/py.typed" in names
EOF
    # auditwheel: the wheel must be consistent with its own tag (a policy at
    # most as new as the one claimed) and need no library but the system's.
    aw=$("$PY" -m auditwheel show "$whl" 2>&1) || { echo "$aw" >&2; die "auditwheel show $whl"; }
    echo "$aw" >"$STAGE/auditwheel-$t.txt"
    got=$(echo "$aw" | tr '\n' ' ' | grep -o 'platform tag: *"[a-z]*_[0-9]*_[0-9]*_[a-z0-9_]*"' | grep -o '"[^"]*"' | tr -d '"')
    [[ -n $got ]] || { echo "$aw" >&2; die "auditwheel gave no platform tag for $whl"; }
    if grep -q 'external shared libraries are required' <<<"$aw"; then echo "$aw" >&2; die "$whl needs external libraries"; fi
    "$PY" - "$plat" "$got" <<'EOF' || die "auditwheel says $got, the wheel claims $plat"
import re, sys
claim, got = sys.argv[1], sys.argv[2]
c = re.fullmatch(r"(many|musl)linux_(\d+)_(\d+)_(\w+)", claim)
g = re.fullmatch(r"(many|musl)linux_(\d+)_(\d+)_(\w+)", got)
assert c and g and c[1] == g[1] and c[4] == g[4], (claim, got)
assert (int(g[2]), int(g[3])) <= (int(c[2]), int(c[3])), (claim, got)
EOF
    log "$(basename "$whl") (auditwheel: consistent with $got)"
done
pybuild sdist --sdist
sdist=$DIST/krabka_coord-$VERSION.tar.gz
[[ -f $sdist ]] || die "no sdist $sdist"
tar tzf "$sdist" >"$STAGE/sdist.list"
grep -q "^krabka_coord-$VERSION/native/go.mod$" "$STAGE/sdist.list" || die "the sdist lacks the Go sources"
log "$(basename "$sdist")"

# ---- npm ------------------------------------------------------------------
# The main package: bindings/node's published files (docs/PROTOCOL.md and
# docs/ABI.md from the repository's docs/); its optionalDependencies
# name one package per platform at exactly this version (npm installs the one
# matching os/cpu/libc). Platform packages carry the library alone.
main=$STAGE/npm/krabka-coord
mkdir -p "$main"
optional=""
for t in $ALL_TARGETS; do
    read -r suffix _ <<<"$(npm_plat "$t")"
    optional+="${optional:+,}\"@krabka/coord-$suffix\":\"$VERSION\""
done
(cd bindings/node && node -e '
const fs = require("fs"), path = require("path");
const [dest, optional] = process.argv.slice(1);
const p = JSON.parse(fs.readFileSync("package.json", "utf8"));
// docs/* come from the repository docs/ (in a checkout, npm prepack copies them).
for (const f of p.files) fs.cpSync(f.startsWith("docs/") ? path.join("..", "..", f) : f, path.join(dest, f), { recursive: true, dereference: true });
delete p.devDependencies;
delete p.scripts;
p.optionalDependencies = JSON.parse("{" + optional + "}");
fs.writeFileSync(path.join(dest, "package.json"), JSON.stringify(p, null, 2) + "\n");
' "$main" "$optional")
(cd "$main" && npm pack --silent --pack-destination "$DIST" >/dev/null)
log "krabka-coord-$VERSION.tgz"

for t in $TARGETS; do
    read -r suffix os cpu libc <<<"$(npm_plat "$t")"
    pkg=$STAGE/npm/coord-$suffix
    mkdir -p "$pkg"
    cp "build/release/$t/lib/$REAL" "$pkg/libkrabka_coord.so"
    cp LICENSE "$pkg/LICENSE"
    cat >"$pkg/README.md" <<EOF
# @krabka/coord-$suffix

libkrabka_coord $VERSION built for $t, for the \`krabka-coord\` package,
which installs it as an optional dependency and loads it on $os/$cpu ($libc).
Not meant to be used directly.
EOF
    cat >"$pkg/package.json" <<EOF
{
  "name": "@krabka/coord-$suffix",
  "version": "$VERSION",
  "description": "libkrabka_coord $VERSION for $t (used by krabka-coord)",
  "os": ["$os"],
  "cpu": ["$cpu"],
  "libc": ["$libc"],
  "files": ["libkrabka_coord.so", "LICENSE", "README.md"],
  "license": "Apache-2.0"
}
EOF
    (cd "$pkg" && npm pack --silent --pack-destination "$DIST" >/dev/null)
    tgz=$DIST/krabka-coord-$suffix-$VERSION.tgz
    [[ -f $tgz ]] || die "no npm package $tgz"
    tar xzOf "$tgz" package/libkrabka_coord.so | cmp -s - "build/release/$t/lib/$REAL" || die "$tgz holds another library"
    log "$(basename "$tgz")"
done

# ---- the source tree is as it was -----------------------------------------
after_tree=$(git status --porcelain --ignored -- bindings include capi core 2>/dev/null || true)
if [[ "$before_tree" != "$after_tree" ]]; then
    diff <(echo "$before_tree") <(echo "$after_tree") >&2 || true
    die "the build left files in the source tree (above)"
fi

# ---- what the artifacts say ------------------------------------------------
# Each library tarball carries the protocol and the ABI rule, and no text file
# of any artifact (tarballs, wheels, the sdist, npm packages) mentions
# ../shared or COORDINATION.md: that record lives beside a checkout, not in a
# release. docs/PROTOCOL.md, which names it as its source, is the exception.
# A file with a NUL byte counts as binary and is not read.
"$PY" - "$DIST" "$VERSION" $TARGETS <<'EOF' || die "the artifacts' contents (above)"
import os, sys, tarfile, zipfile
dist, version, targets = sys.argv[1], sys.argv[2], sys.argv[3:]
NEEDLES = (b"../shared", b"COORDINATION.md")
problems = []

def members(path):
    if path.endswith(".whl"):
        with zipfile.ZipFile(path) as z:
            for n in z.namelist():
                if not n.endswith("/"):
                    yield n, z.read(n)
    else:
        with tarfile.open(path, "r:gz") as t:
            for m in t.getmembers():
                if m.isfile():
                    yield m.name, t.extractfile(m).read()

for name in sorted(os.listdir(dist)):
    if not name.endswith((".tar.gz", ".tgz", ".whl")):
        continue
    seen = set()
    for member, data in members(os.path.join(dist, name)):
        seen.add(member)
        if b"\0" in data or member.endswith("/docs/PROTOCOL.md"):
            continue
        for i, line in enumerate(data.splitlines(), 1):
            for needle in NEEDLES:
                if needle in line:
                    problems.append(f"{name}: {member}:{i}: mentions {needle.decode()}")
    for t in targets:
        if name == f"krabka-coord-{version}-{t}.tar.gz":
            for doc in ("docs/PROTOCOL.md", "docs/ABI.md"):
                if f"krabka-coord-{version}-{t}/{doc}" not in seen:
                    problems.append(f"{name}: no {doc}")
for p in problems:
    print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
log "contents: every tarball has docs/PROTOCOL.md and docs/ABI.md; no shipped text mentions ../shared or COORDINATION.md"

(cd "$DIST" && sha256sum -- * >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
log "all artifacts in dist/ (sha256 in dist/SHA256SUMS):"
(cd "$DIST" && ls -l --time-style=+ -- * | awk '{printf "  %12s  %s\n", $5, $NF}')
