#!/usr/bin/env bash
# packaging/toolchain.sh: installs the release tools on demand and prints where
# they are. Everything comes from the package registries by name, pinned:
#   PyPI:   ziglang (zig cc: the cross C toolchain, with glibc stubs of any
#           version), auditwheel, build, setuptools, wheel   -> one venv
#   Debian: qemu-user, libc6-arm64-cross, libc6-armhf-cross, pkgconf (apt-get,
#           only when missing; needs root, as on the project's machines)
# The venv lives in $KRABKA_TOOLS_DIR (default ~/.cache/krabka-coord), shared by
# every checkout on the machine; a lock serialises concurrent installs.
#
# Usage: packaging/toolchain.sh VERB
#   python   ensure the venv; print its python
#   zig      ensure the venv; print the directory holding the zig-cc / zig-ar wrappers
#   qemu     ensure qemu-user and the cross C libraries; print qemu-aarch64's path
#   pkg-config  ensure pkg-config (Debian's pkgconf); print its path
set -euo pipefail

ZIGLANG_VERSION=0.15.2
PY_TOOLS=("ziglang==$ZIGLANG_VERSION" "auditwheel==6.8.2" "build==1.6.1" "setuptools==84.2.1" "wheel==0.48.0")
TOOLS=${KRABKA_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/krabka-coord}
VENV=$TOOLS/tools-venv
PYTHON=${PYTHON:-python3}

die() { echo "toolchain.sh: $*" >&2; exit 1; }

lock() {
    mkdir -p "$TOOLS"
    exec 8>"$TOOLS/.lock"
    command -v flock >/dev/null && flock 8 || true
}

ensure_venv() {
    local stamp=$VENV/.krabka-tools
    local want
    want=$(printf '%s\n' "${PY_TOOLS[@]}")
    if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then return; fi
    lock
    if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then return; fi
    echo "toolchain.sh: installing ${PY_TOOLS[*]} into $VENV" >&2
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${PY_TOOLS[@]}" >&2
    echo "$want" >"$stamp"
}

ensure_zig() {
    ensure_venv
    local zig
    zig=$("$VENV/bin/python" -c 'import ziglang, os; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
    [[ -x $zig ]] || die "ziglang $ZIGLANG_VERSION has no zig binary at $zig"
    local bin=$TOOLS/zig-$ZIGLANG_VERSION/bin
    if [[ ! -x $bin/zig-cc || ! -x $bin/zig-ar ]]; then
        lock
        mkdir -p "$bin"
        # Go splits $CC on spaces and appends its own flags, so one wrapper per
        # tool; the target comes from the caller (-target ...).
        printf '#!/bin/sh\nexec "%s" cc "$@"\n' "$zig" >"$bin/zig-cc.tmp"
        printf '#!/bin/sh\nexec "%s" ar "$@"\n' "$zig" >"$bin/zig-ar.tmp"
        printf '#!/bin/sh\nexec "%s" objcopy "$@"\n' "$zig" >"$bin/zig-objcopy.tmp"
        chmod +x "$bin"/*.tmp
        for f in zig-cc zig-ar zig-objcopy; do mv -f "$bin/$f.tmp" "$bin/$f"; done
    fi
    echo "$bin"
}

apt_install() { # package...
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
    done
    [[ ${#missing[@]} == 0 ]] && return
    command -v apt-get >/dev/null || die "needs the Debian packages ${missing[*]} (no apt-get here: install them by hand)"
    [[ $(id -u) == 0 ]] || die "needs the Debian packages ${missing[*]}: run as root once, or apt-get install ${missing[*]}"
    lock
    echo "toolchain.sh: apt-get install ${missing[*]}" >&2
    # A fresh machine has no package lists yet; an old list may miss the package.
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; then
        apt-get update -q >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
    fi
}

case "${1:-}" in
python) ensure_venv; echo "$VENV/bin/python" ;;
zig) ensure_zig ;;
qemu)
    apt_install qemu-user libc6-arm64-cross libc6-armhf-cross
    command -v qemu-aarch64 ;;
pkg-config)
    command -v pkg-config >/dev/null || apt_install pkgconf
    command -v pkg-config ;;
*) die "usage: toolchain.sh python|zig|qemu|pkg-config" ;;
esac
