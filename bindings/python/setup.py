"""Build step of the krabka-coord wheel: compile libkrabka_coord.so with Go
and ship it inside a platform wheel (the Python code is pure, the wheel is
not).

Where the library comes from, in order:

1. KRABKA_COORD_LIBRARY=/path/to/libkrabka_coord.so: copied as it is; Go is
   not run.
2. The repository this directory belongs to (found by walking up from this
   file to the go.mod of github.com/krabka/krabka-coord, or named with
   KRABKA_COORD_SOURCE=/path/to/repo): its build.sh is run (Go + a C
   compiler), and build/libkrabka_coord.so is copied. Without build.sh,
   `go build -buildmode=c-shared ./capi` is run directly.

pip >= 21.3 builds a local directory in place, so `pip install
./bindings/python` finds the repository by itself. An older pip copies only
this directory to a temporary place: set KRABKA_COORD_SOURCE then.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py as _build_py

HERE = Path(__file__).resolve().parent
LIB = "libkrabka_coord.so"
MODULE = "module github.com/krabka/krabka-coord"


def _find_repo() -> Path:
    env = os.environ.get("KRABKA_COORD_SOURCE")
    if env:
        p = Path(env).resolve()
        if not (p / "go.mod").is_file():
            sys.exit("KRABKA_COORD_SOURCE=%s has no go.mod" % env)
        return p
    for d in [HERE, *HERE.parents]:
        gomod = d / "go.mod"
        if gomod.is_file() and MODULE in gomod.read_text(encoding="utf-8", errors="replace"):
            return d
    sys.exit(
        "krabka-coord: cannot find the Go module github.com/krabka/krabka-coord above %s.\n"
        "The build compiles libkrabka_coord.so from the repository. Either build from the\n"
        "repository (pip install ./bindings/python with pip >= 21.3 builds in place), set\n"
        "KRABKA_COORD_SOURCE to the repository root, or set KRABKA_COORD_LIBRARY to a built\n"
        "libkrabka_coord.so." % HERE
    )


def _build_library(tmp: Path) -> Path:
    prebuilt = os.environ.get("KRABKA_COORD_LIBRARY")
    if prebuilt:
        p = Path(prebuilt)
        if not p.is_file():
            sys.exit("KRABKA_COORD_LIBRARY=%s does not name a file" % prebuilt)
        print("krabka-coord: using the prebuilt library %s" % p, flush=True)
        return p.resolve()
    repo = _find_repo()
    env = dict(os.environ)
    env.setdefault("GOFLAGS", "-buildvcs=false")
    env.setdefault("CGO_ENABLED", "1")
    if shutil.which(env.get("GO", "go"), path=env.get("PATH")) is None:
        sys.exit("krabka-coord: building the library needs Go (go not found on PATH), "
                 "or set KRABKA_COORD_LIBRARY to a built libkrabka_coord.so")
    script = repo / "build.sh"
    if script.is_file():
        print("krabka-coord: running %s" % script, flush=True)
        subprocess.check_call(["bash", str(script)], cwd=str(repo), env=env)
        return (repo / "build" / LIB).resolve()
    out = tmp / LIB
    print("krabka-coord: go build -buildmode=c-shared ./capi", flush=True)
    subprocess.check_call(
        [env.get("GO", "go"), "build", "-buildmode=c-shared", "-trimpath",
         "-ldflags", "-s -w -extldflags \"-Wl,-soname,libkrabka_coord.so.1 "
         "-Wl,--version-script=%s\"" % (repo / "capi" / "exports.map"),
         "-o", str(out), "./capi"],
        cwd=str(repo), env=env,
    )
    return out


class build_py(_build_py):
    """Copies the Python sources, then puts libkrabka_coord.so into
    krabka_coord/_lib/."""

    def run(self) -> None:
        super().run()
        if self.dry_run:
            return
        dest_dir = Path(self.build_lib) / "krabka_coord" / "_lib"
        dest_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            src = _build_library(Path(tmp))
            shutil.copyfile(src, dest_dir / LIB)
            os.chmod(dest_dir / LIB, 0o755)


class BinaryDistribution(Distribution):
    """The wheel holds a native library: never a pure wheel."""

    def has_ext_modules(self) -> bool:
        return True


cmdclass = {"build_py": build_py}

try:
    try:
        from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
    except ImportError:
        from wheel.bdist_wheel import bdist_wheel as _bdist_wheel  # type: ignore[no-redef]

    class bdist_wheel(_bdist_wheel):  # type: ignore[valid-type,misc]
        """Platform wheel, any Python 3 (the library is loaded with ctypes,
        so no CPython ABI is involved): py3-none-<platform>."""

        def finalize_options(self) -> None:
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):  # type: ignore[no-untyped-def]
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = bdist_wheel
except ImportError:  # building an sdist without wheel installed
    pass

setup(cmdclass=cmdclass, distclass=BinaryDistribution)
