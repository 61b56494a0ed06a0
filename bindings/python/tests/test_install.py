"""`pip install ./bindings/python` into a fresh virtual environment gives a
working, typed package with the library inside a platform wheel.

This test points KRABKA_COORD_LIBRARY at the already built library so that
the build step copies it instead of running Go a second time; without that
variable the same command runs build.sh (Go) to compile it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow


def _built_library() -> Path:
    env = os.environ.get("KRABKA_COORD_LIBRARY")
    lib = Path(env) if env else REPO / "build" / "libkrabka_coord.so"
    if not lib.is_file():
        pytest.fail("no built library at %s: run ./build.sh first" % lib, pytrace=False)
    return lib.resolve()


def test_pip_install_into_a_fresh_venv(tmp_path: Path) -> None:
    lib = _built_library()
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    py = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KRABKA_COORD_LIBRARY", "PIP_REQUIRE_VIRTUALENV")}
    build_env = dict(env, KRABKA_COORD_LIBRARY=str(lib), PIP_DISABLE_PIP_VERSION_CHECK="1")
    proc = subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", str(REPO / "bindings" / "python")],
        env=build_env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr

    check = (
        "import json, krabka_coord as k, pathlib\n"
        "p = pathlib.Path(k.__file__).parent\n"
        "print(json.dumps({'lib': k.library_path, 'partition': k.role_partition('controller', 16),"
        " 'typed': (p / 'py.typed').is_file(), 'token': str(k.FencingToken.parse('4242:7')),"
        " 'docs': {d: (p / 'docs' / d).read_text() for d in ('PROTOCOL.md', 'ABI.md')}}))\n"
    )
    out = subprocess.run([str(py), "-c", check], env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    import json

    got = json.loads(out.stdout)
    # Loaded from inside the installed package, not from the repository.
    assert got["lib"].startswith(str(env_dir)), got["lib"]
    assert got["lib"].endswith("krabka_coord/_lib/libkrabka_coord.so")
    assert got["typed"] is True
    assert got["token"] == "4242:7"
    # The documents the README points at travel with the package.
    for d in ("PROTOCOL.md", "ABI.md"):
        assert got["docs"][d] == (REPO / "docs" / d).read_text(), d
    sys.path.insert(0, str(REPO / "bindings" / "python" / "src"))
    import krabka_coord as here

    assert got["partition"] == here.role_partition("controller", 16)

    wheel = next((env_dir / "lib").glob("python3*/site-packages/krabka_coord-*.dist-info/WHEEL"))
    text = wheel.read_text()
    assert "Root-Is-Purelib: false" in text
    assert "Tag: py3-none-linux_" in text


def test_the_import_time_variable_overrides_the_packaged_library(tmp_path: Path) -> None:
    env = dict(os.environ, KRABKA_COORD_LIBRARY=str(tmp_path / "missing.so"))
    env["PYTHONPATH"] = str(REPO / "bindings" / "python" / "src")
    out = subprocess.run([sys.executable, "-c", "import krabka_coord"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "KRABKA_COORD_LIBRARY" in out.stderr and "missing.so" in out.stderr


def test_a_library_of_another_abi_version_is_refused_on_import(tmp_path: Path) -> None:
    import shutil

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler to build the fake library", pytrace=False)
    src = tmp_path / "fake.c"
    src.write_text("int krabka_abi_version(void) { return 1; }\n")
    so = tmp_path / "libkrabka_coord.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    env = dict(os.environ, KRABKA_COORD_LIBRARY=str(so), PYTHONPATH=str(REPO / "bindings" / "python" / "src"))
    out = subprocess.run([sys.executable, "-c", "import krabka_coord"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "LibraryLoadError" in out.stderr
    assert "ABI version 1" in out.stderr and "needs ABI version 2" in out.stderr


def test_the_sdist_carries_the_documents_the_readme_points_at(tmp_path: Path) -> None:
    import tarfile

    # The build system pyproject.toml names (setuptools>=77), in a venv.
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    py = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    got = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "setuptools>=77"], env=env,
                         capture_output=True, text=True, timeout=600)
    assert got.returncode == 0, got.stdout + got.stderr
    dist = tmp_path / "dist"
    out = subprocess.run([str(py), "setup.py", "-q", "sdist", "--dist-dir", str(dist)], env=env,
                         cwd=str(REPO / "bindings" / "python"), capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    (sdist,) = dist.glob("krabka_coord-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
        for d in ("PROTOCOL.md", "ABI.md"):
            (member,) = [n for n in names if n.endswith("/src/krabka_coord/docs/" + d)]
            f = tar.extractfile(member)
            assert f is not None
            assert f.read().decode() == (REPO / "docs" / d).read_text(), d


def test_the_installed_package_ships_the_test_aids_and_pytest_loads_its_plugin(tmp_path: Path) -> None:
    """pip install gives krabka_coord.testing, and pytest (the system's,
    seen through system site packages) loads the plugin by its pytest11
    entry point alone: a test file asks for krabka_cluster and
    krabka_clock, with no conftest and no -p."""
    lib = _built_library()
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True, system_site_packages=True).create(env_dir)
    py = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "KRABKA_COORD_LIBRARY", "PIP_REQUIRE_VIRTUALENV", "PYTEST_PLUGINS",
                        "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_ADDOPTS")}
    build_env = dict(env, KRABKA_COORD_LIBRARY=str(lib), PIP_DISABLE_PIP_VERSION_CHECK="1")
    proc = subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", str(REPO / "bindings" / "python")],
        env=build_env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    work = tmp_path / "user-project"
    work.mkdir()
    (work / "test_user.py").write_text(
        "import krabka_coord as kc, krabka_coord.testing as t\n"
        "def test_takeover(krabka_cluster, krabka_clock):\n"
        "    assert kc.library_path.startswith(%r)\n"
        "    a, b = krabka_cluster.client(), krabka_cluster.client()\n"
        "    lead = a.acquire('ctl', 'a', timeout=30)\n"
        "    krabka_cluster.kill(a)\n"
        "    krabka_clock.advance(30000)\n"
        "    assert b.acquire('ctl', 'b', timeout=30).token.supersedes(lead.token)\n" % str(env_dir))
    out = subprocess.run([str(py), "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_user.py"], env=env,
                         cwd=str(work), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed" in out.stdout, out.stdout
