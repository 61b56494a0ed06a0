"""The binding against the header, without a broker: every ctypes Structure
of the generated _abi.py has the size and field offsets a C compiler gives
the header's struct; the package's modules import without a cycle (each
alone in a fresh interpreter, and no cycle in the graph of its imports);
error codes map to classes through the tables, so a code the library adds
needs no Python edit."""

from __future__ import annotations

import ast
import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

import krabka_coord as kc
from krabka_coord import _abi, _errors
from conftest import REPO, SRC

PKG = SRC / "krabka_coord"


# --------------------------------------------------------------------------
# Struct layouts: _abi.py against the C compiler
# --------------------------------------------------------------------------


def _structures() -> List[Tuple[str, type]]:
    """(C type name, Structure class) of every Structure _abi.py defines;
    the C name is the first word of the class docstring (the generator
    writes "krabka_x_t.")."""
    out = []
    for name, obj in vars(_abi).items():
        if isinstance(obj, type) and issubclass(obj, ctypes.Structure) and obj.__module__ == _abi.__name__:
            doc = (obj.__doc__ or "").strip()
            m = re.fullmatch(r"(krabka_\w+_t)\.", doc)
            assert m, "%s: docstring %r does not name its C type" % (name, doc)
            out.append((m.group(1), obj))
    return out


def test_every_structure_has_the_c_compilers_size_and_offsets(tmp_path: Path) -> None:
    structs = _structures()
    # The header's structs, found independently of _abi.py: none is missing.
    header = (REPO / "include" / "krabka_coord.h").read_text()
    declared = set(re.findall(r"typedef\s+struct\s+\w+\s*\{[^}]*\}\s*(krabka_\w+_t)\s*;", header, flags=re.S))
    assert declared == {c for c, _ in structs}, (declared, structs)

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler (cc, gcc) to check the struct layouts with; CI has gcc", pytrace=False)
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include \"krabka_coord.h\"", "int main(void) {",
             "  printf(\"{\");"]
    for i, (cname, cls) in enumerate(structs):
        sep = "," if i else ""
        lines.append('  printf("%s\\"%s\\": {\\"size\\": %%zu", sizeof(%s));' % (sep, cname, cname))
        for field, _type in cls._fields_:  # type: ignore[attr-defined]
            lines.append('  printf(", \\"%s\\": %%zu", offsetof(%s, %s));' % (field, cname, field))
        lines.append('  printf("}");')
    lines += ['  printf("}\\n");', "  return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    subprocess.run([cc, "-std=c99", "-Wall", "-Werror", "-I", str(REPO / "include"), str(src), "-o", str(exe)],
                   check=True, timeout=120)
    c = json.loads(subprocess.run([str(exe)], check=True, capture_output=True, text=True, timeout=60).stdout)
    for cname, cls in structs:
        want = c[cname]
        got = {"size": ctypes.sizeof(cls)}
        for field, _type in cls._fields_:  # type: ignore[attr-defined]
            got[field] = getattr(cls, field).offset
        assert got == want, "%s (%s): ctypes %r, C %r" % (cls.__name__, cname, got, want)


# --------------------------------------------------------------------------
# Modules: no import cycles
# --------------------------------------------------------------------------


def _modules() -> List[str]:
    return sorted(p.stem for p in PKG.glob("*.py"))


def _package_imports(path: Path) -> Set[str]:
    """The package's own modules a module imports, anywhere in it (function
    bodies and `if TYPE_CHECKING:` blocks included: a lazy import is how a
    cycle hides)."""
    tree = ast.parse(path.read_text(), str(path))
    out: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                if node.module:
                    out.add(node.module.split(".")[0])
                else:
                    out.update(a.name for a in node.names)
            elif node.level == 0 and node.module and node.module.split(".")[0] == "krabka_coord":
                parts = node.module.split(".")
                if len(parts) > 1:
                    out.add(parts[1])
                else:
                    out.update(a.name for a in node.names)
            elif node.level > 1:
                raise AssertionError("%s: relative import beyond the package" % path)
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "krabka_coord" and len(parts) > 1:
                    out.add(parts[1])
    mods = set(_modules())
    return {m for m in out if m in mods}


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    cycles = []
    state: Dict[str, int] = {}
    stack: List[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return cycles


def test_the_package_imports_form_no_cycle() -> None:
    graph = {m: _package_imports(PKG / (m + ".py")) - {m} for m in _modules()}
    # the walk sees the imports (a broken walk would find no cycle either)
    assert "_calls" in graph["_leadership"] and "_leadership" in graph["_client"], graph
    assert _cycles(graph) == [], graph


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c", "a"]]


@pytest.mark.parametrize("module", _modules())
def test_each_module_imports_alone_in_a_fresh_interpreter(module: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    code = "import importlib; importlib.import_module('krabka_coord.%s')" % module
    # -X importtime is not needed: a cycle that breaks shows as an ImportError
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


# --------------------------------------------------------------------------
# Error codes: the tables, not a list in Python
# --------------------------------------------------------------------------


def test_the_error_table_is_the_librarys_and_matches_the_generated_one() -> None:
    assert {c: (r.name, r.text, r.retriable, r.fatal) for c, r in _errors.TABLE.items()} == \
        {c: (n, t, rt, f) for c, n, t, rt, f in _abi.ERROR_DESCS}
    for code, name, text, retriable, fatal in _abi.ERROR_DESCS:
        e = _errors.error_for(code)
        assert (e.code, e.name, e.retriable, e.fatal) == (code, name, retriable, fatal)
        # the library's text (FORKED adds how to avoid it)
        assert e.reason == text or (name == "FORKED" and e.reason.startswith(text + " (use ")), e.reason


def test_codes_without_a_class_of_their_own_are_base_errors_with_their_names() -> None:
    for code in (kc.ErrorCode.INVALID_HANDLE, kc.ErrorCode.BUFFER_TOO_SMALL, kc.ErrorCode.INTERNAL):
        e = _errors.error_for(code)
        assert type(e) is kc.KrabkaError and e.name == kc.ErrorCode(code).name
        assert "UNKNOWN" not in repr(e)
    forked = _errors.error_for(kc.ErrorCode.FORKED)
    assert isinstance(forked, kc.ForkedProcessError) and isinstance(forked, RuntimeError)
    for code, category in _abi.DATA_CATEGORIES.items():
        e = _errors.error_for(code)
        assert isinstance(e, kc.DataError) and e.category == category


def test_a_code_the_library_adds_needs_no_python_edit() -> None:
    """A table with codes this binding has never heard of (what a newer
    library's krabka_get_err_descs answers): a new cluster code maps to a
    base KrabkaError carrying its name, a new data code to DataError."""
    table = _errors.build_table(list(_abi.ERROR_DESCS) + [(43, "NEW_OUTCOME", "a new outcome", True, False),
                                                         (25, "NEW_DATA_RULE", "a new data rule", False, False)])
    data = {**_abi.DATA_CATEGORIES, 25: "new_data_rule"}
    assert _errors.class_for(43, table, data) is kc.KrabkaError
    assert _errors.class_for(25, table, data) is kc.DataError
    assert _errors.info_of(43, table).name == "NEW_OUTCOME"
    assert _errors.class_for(30, table, data) is kc.FencedError  # by name, as before


def test_a_code_nobody_knows_is_a_base_error_named_by_the_library() -> None:
    e = _errors.error_for(99)
    assert type(e) is kc.KrabkaError and e.code == 99
    assert e.name == (_errors.lib.krabka_err2name(99) or b"").decode() == "UNKNOWN"
    assert "UNKNOWN(99)" not in repr(e) and "UNKNOWN(99)" not in str(e)


def test_states_and_watch_kinds_are_the_headers_names_without_prefix() -> None:
    """One letter case across C, Python and Node: UPPER_SNAKE, the C
    enumerator without its prefix."""
    header = (REPO / "include" / "krabka_coord.h").read_text()
    states = [(n, int(v)) for n, v in re.findall(r"\bKRABKA_LEADERSHIP_([A-Z_]+) = (\d+)", header)]
    assert states and [(m.name, int(m)) for m in kc.LeadershipState] == states
    kinds = sorted(((int(v), n) for n, v in re.findall(r"\bKRABKA_WATCH_([A-Z_]+) = (\d+)", header)))
    from krabka_coord._values import WATCH_EVENT_KINDS, watch_kind_name

    assert kinds and list(WATCH_EVENT_KINDS) == [n for _, n in kinds]
    assert [watch_kind_name(v) for v, _ in kinds] == [n for _, n in kinds]
