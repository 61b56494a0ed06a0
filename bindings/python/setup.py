"""Build step of the krabka-coord wheel: put libkrabka_coord.so inside a
platform wheel (the Python code is pure, the wheel is not).

Where the library comes from, in order:

1. KRABKA_COORD_LIBRARY=/path/to/libkrabka_coord.so: copied as it is; Go is
   not run. `make dist` builds one wheel per target this way, with
   KRABKA_COORD_PLATFORM naming the wheel's platform tag (for example
   manylinux_2_28_aarch64); the library's ELF machine must match that tag.
2. An sdist: the Go sources it carries (native/) are compiled with
   `native/build.sh --release host` (needs Go and a C compiler).
3. The repository this directory belongs to (found by walking up from this
   file to the go.mod of github.com/krabka/krabka-coord, or named with
   KRABKA_COORD_SOURCE=/path/to/repo): its build.sh is run and
   build/libkrabka_coord.so is copied (`pip install ./bindings/python`).

The sdist carries the Go module's sources (go.mod, go.sum, capi/, core/,
include/, build.sh) under native/, copied at sdist time. Every wheel and
sdist also carries the repository's docs/PROTOCOL.md and docs/ABI.md as
package data (krabka_coord/docs/), which the README points at: copied at
build time from the repository (or from the sdist that carries them). Build directories and
egg-info go to a temporary directory, so a build leaves nothing in the source
tree.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
from setuptools.command.build_py import build_py as _build_py
from setuptools.command.install_lib import install_lib as _install_lib
from setuptools.command.sdist import sdist as _sdist

HERE = Path(__file__).resolve().parent
LIB = "libkrabka_coord.so"
MODULE = "module github.com/krabka/krabka-coord"
NATIVE = "native"  # the Go sources inside an sdist
# The repository's documents every wheel and sdist carries (krabka_coord/docs/).
DOCS = ("PROTOCOL.md", "ABI.md")
PACKAGE_DOCS = Path("src") / "krabka_coord" / "docs"

# ELF e_machine of each wheel platform's architecture.
_ELF_MACHINE = {"x86_64": 62, "aarch64": 183, "armv7l": 40}

# Everything setuptools writes while building goes here, not into the source
# tree (build/, *.egg-info); removed when the build ends.
_SCRATCH = Path(tempfile.mkdtemp(prefix="krabka-coord-setup-"))
atexit.register(shutil.rmtree, str(_SCRATCH), True)


def _fail(sentence: str) -> "NoReturn":  # type: ignore[name-defined]  # noqa: F821
    sys.exit("krabka-coord: " + sentence)


def _find_repo() -> Path:
    env = os.environ.get("KRABKA_COORD_SOURCE")
    if env:
        p = Path(env).resolve()
        if not (p / "go.mod").is_file():
            _fail("KRABKA_COORD_SOURCE=%s has no go.mod." % env)
        return p
    for d in [HERE, *HERE.parents]:
        gomod = d / "go.mod"
        if gomod.is_file() and MODULE in gomod.read_text(encoding="utf-8", errors="replace"):
            return d
    _fail(
        "cannot find the Go sources of libkrabka_coord above %s: build from the repository or "
        "from the sdist, set KRABKA_COORD_SOURCE to the repository, or set KRABKA_COORD_LIBRARY "
        "to a built libkrabka_coord.so." % HERE
    )


def _need_go(env: dict) -> None:
    go = env.get("GO", "go")
    if shutil.which(go, path=env.get("PATH")) is None:
        _fail(
            "building libkrabka_coord from source needs Go 1.26 or newer and a C compiler, and "
            "'%s' is not on PATH: install Go, or install a prebuilt wheel for this platform, "
            "or set KRABKA_COORD_LIBRARY to a built libkrabka_coord.so." % go
        )


def _build_library() -> Path:
    prebuilt = os.environ.get("KRABKA_COORD_LIBRARY")
    if prebuilt:
        p = Path(prebuilt)
        if not p.is_file():
            _fail("KRABKA_COORD_LIBRARY=%s does not name a file." % prebuilt)
        print("krabka-coord: using the prebuilt library %s" % p, flush=True)
        return p.resolve()
    env = dict(os.environ)
    env.setdefault("GOFLAGS", "-buildvcs=false")
    env.setdefault("CGO_ENABLED", "1")
    native = HERE / NATIVE
    if (native / "go.mod").is_file():
        # From an sdist: a release build for this machine, with its own C compiler.
        _need_go(env)
        out = _SCRATCH / "native"
        print("krabka-coord: compiling libkrabka_coord from the sdist's Go sources", flush=True)
        subprocess.check_call(["bash", str(native / "build.sh"), "--release", "host", "--out", str(out)],
                              cwd=str(native), env=env)
        return (out / "lib" / LIB).resolve()
    repo = _find_repo()
    _need_go(env)
    print("krabka-coord: running %s" % (repo / "build.sh"), flush=True)
    subprocess.check_call(["bash", str(repo / "build.sh")], cwd=str(repo), env=env)
    return (repo / "build" / LIB).resolve()


def _docs_source() -> Path:
    """Where docs/PROTOCOL.md and docs/ABI.md are: the sdist's copy inside
    the package, else the repository's docs/."""
    packaged = HERE / PACKAGE_DOCS
    if all((packaged / d).is_file() for d in DOCS):
        return packaged
    src = _find_repo() / "docs"
    missing = [d for d in DOCS if not (src / d).is_file()]
    if missing:
        _fail("the documents %s are missing from %s." % (", ".join(missing), src))
    return src


def _copy_docs(dest: Path) -> None:
    src = _docs_source()
    dest.mkdir(parents=True, exist_ok=True)
    for d in DOCS:
        shutil.copyfile(src / d, dest / d)


def _elf_machine(path: Path) -> int:
    with open(path, "rb") as f:
        head = f.read(20)
    if head[:4] != b"\x7fELF":
        _fail("%s is not an ELF shared library." % path)
    return int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")


class build_py(_build_py):
    """Copies the Python sources, then puts libkrabka_coord.so into
    krabka_coord/_lib/."""

    def byte_compile(self, files: list) -> None:
        # distutils warns "byte-compiling is disabled" under
        # PYTHONDONTWRITEBYTECODE; nothing is lost by skipping quietly.
        if not sys.dont_write_bytecode:
            super().byte_compile(files)

    def run(self) -> None:
        super().run()
        if self.dry_run:
            return
        _copy_docs(Path(self.build_lib) / "krabka_coord" / "docs")
        src = _build_library()
        plat = os.environ.get("KRABKA_COORD_PLATFORM")
        if plat:
            arch = next((a for a in _ELF_MACHINE if plat.endswith("_" + a)), None)
            if arch is None:
                _fail("KRABKA_COORD_PLATFORM=%s names no known architecture (%s)." % (plat, ", ".join(_ELF_MACHINE)))
            if _elf_machine(src) != _ELF_MACHINE[arch]:
                _fail("the library %s is not built for %s (KRABKA_COORD_PLATFORM=%s)." % (src, arch, plat))
        dest_dir = Path(self.build_lib) / "krabka_coord" / "_lib"
        dest_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest_dir / LIB)
        os.chmod(dest_dir / LIB, 0o755)


class install_lib(_install_lib):
    def byte_compile(self, files: list) -> None:
        # Same as build_py: no warning when byte-compiling is disabled.
        if not sys.dont_write_bytecode:
            super().byte_compile(files)


class sdist(_sdist):
    """Adds the Go module's sources under native/ so the sdist builds the
    library from source."""

    # Directories of the Go module an sdist needs, and the files kept from them.
    GO_DIRS = ("capi", "core", "include")
    GO_FILES = ("go.mod", "go.sum", "build.sh")
    SUFFIXES = (".go", ".h", ".c", ".map", ".in")

    def make_release_tree(self, base_dir: str, files: list) -> None:
        super().make_release_tree(base_dir, files)
        _copy_docs(Path(base_dir) / PACKAGE_DOCS)
        repo = _find_repo()
        dest = Path(base_dir) / NATIVE
        for name in self.GO_FILES:
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo / name, dest / name)
        for top in self.GO_DIRS:
            for p in sorted((repo / top).rglob("*")):
                rel = p.relative_to(repo)
                if (not p.is_file() or p.suffix not in self.SUFFIXES or p.name.endswith("_test.go")
                        or "testdata" in rel.parts):
                    continue
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(p, dest / rel)
        # The commit the sources come from, for the library's build stamp.
        try:
            commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short=12", "HEAD"],
                                    capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            commit = "unknown"
        (dest / ".krabka-commit").write_text(commit + "\n")


class BinaryDistribution(Distribution):
    """The wheel holds a native library: never a pure wheel."""

    def has_ext_modules(self) -> bool:
        return True


class bdist_wheel(_bdist_wheel):
    """Platform wheel, any Python 3 (the library is loaded with ctypes, so no
    CPython ABI is involved): py3-none-<platform>, the platform being
    KRABKA_COORD_PLATFORM when set."""

    def finalize_options(self) -> None:
        plat = os.environ.get("KRABKA_COORD_PLATFORM")
        if plat and not self.plat_name:
            self.plat_name = plat
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):  # type: ignore[no-untyped-def]
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(
    cmdclass={"build_py": build_py, "install_lib": install_lib, "sdist": sdist, "bdist_wheel": bdist_wheel},
    distclass=BinaryDistribution,
    options={
        "build": {"build_base": str(_SCRATCH / "build")},
        "egg_info": {"egg_base": str(_SCRATCH)},
    },
)
