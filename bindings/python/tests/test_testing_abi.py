"""krabka_coord/_testing_abi.py (written by hand) against
include/krabka_coord_testing.h: the same functions, each with the
parameters' ctypes types of the header's C types (the mapping of the
generated _abi), and the same constants. No broker."""

from __future__ import annotations

import ctypes
import re
from typing import Any, Dict, List, Tuple

from conftest import REPO
from krabka_coord import _abi, _testing_abi

HEADER = REPO / "include" / "krabka_coord_testing.h"

# The C types of the testing header -> ctypes (as _abi maps them).
C_TYPES: Dict[str, Any] = {
    "krabka_err_t": ctypes.c_int,
    "int": ctypes.c_int,
    "int32_t": ctypes.c_int32,
    "int64_t": ctypes.c_int64,
    "size_t": ctypes.c_size_t,
    "const char *": ctypes.c_char_p,
    "char *": ctypes.c_char_p,
    "uint8_t *": ctypes.c_char_p,
    "krabka_testing_cluster_t *": ctypes.c_void_p,
    "const krabka_testing_cluster_t *": ctypes.c_void_p,
    "krabka_client_t *": ctypes.c_void_p,
    "krabka_testing_cluster_t **": ctypes.POINTER(ctypes.c_void_p),
    "int64_t *": ctypes.POINTER(ctypes.c_int64),
    "size_t *": ctypes.POINTER(ctypes.c_size_t),
    "int *": ctypes.POINTER(ctypes.c_int),
    "krabka_token_t *": ctypes.POINTER(_abi.Token),
}


def _strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def _ctype(ctype: str, where: str) -> Any:
    """'const char  *' -> its ctypes type ('T **' spelled with no space
    between the stars)."""
    norm = re.sub(r"\s*\*", " *", " ".join(ctype.split())).replace("* *", "**").strip()
    assert norm in C_TYPES, "the header's C type %r of %s is not in this test's mapping" % (norm, where)
    return C_TYPES[norm]


def _param(decl: str, fn: str) -> Any:
    m = re.match(r"^(.*?)(\w+)$", decl.strip(), flags=re.S)
    assert m, decl
    return _ctype(m.group(1), "%s(%s)" % (fn, decl.strip()))


def header_functions() -> Dict[str, Tuple[Any, List[Any]]]:
    text = _strip_comments(HEADER.read_text())
    out: Dict[str, Tuple[Any, List[Any]]] = {}
    for m in re.finditer(r"([\w\s\*]+?)\b(krabka_testing_\w+)\s*\(([^)]*)\)\s*;", text):
        fn = m.group(2)
        rtype = _ctype(m.group(1), fn)
        params = [_param(p, fn) for p in m.group(3).split(",") if p.strip() and p.strip() != "void"]
        out[fn] = (rtype, params)
    return out


def test_the_header_is_parsed() -> None:
    got = header_functions()
    assert "krabka_testing_cluster_new" in got and "krabka_testing_client_kill" in got
    assert len(got) >= 12


def test_every_function_of_the_testing_header_is_declared_with_its_types() -> None:
    header = header_functions()
    assert sorted(header) == sorted(_testing_abi.PROTOTYPES), (
        "_testing_abi.PROTOTYPES and include/krabka_coord_testing.h name different functions: only in the header %s, "
        "only in the binding %s" % (sorted(set(header) - set(_testing_abi.PROTOTYPES)),
                                    sorted(set(_testing_abi.PROTOTYPES) - set(header))))
    for name, (rtype, params) in header.items():
        brtype, bparams = _testing_abi.PROTOTYPES[name]
        assert brtype is rtype or brtype == rtype, "%s returns %r in the header, %r in the binding" % (name, rtype, brtype)
        assert len(bparams) == len(params), "%s: %d parameters in the header, %d in the binding" % (
            name, len(params), len(bparams))
        for i, (want, have) in enumerate(zip(params, bparams)):
            assert want is have or want == have, "%s parameter %d: %r in the header, %r in the binding" % (
                name, i, want, have)


def test_the_constants_match_the_header() -> None:
    text = HEADER.read_text()
    consts = {m.group(1): m.group(2) for m in re.finditer(r"#define KRABKA_TESTING_(\w+)\s+(.+)", text)}
    assert int(consts["NAME_MAX"]) == _testing_abi.NAME_MAX
    assert int(consts["REAL_TIME"]) == _testing_abi.REAL_TIME
    m = re.fullmatch(r"INT64_C\((\d+)\)", consts["CLOCK_START_MS"].strip())
    assert m and int(m.group(1)) == _testing_abi.CLOCK_START_MS


def test_a_library_without_the_testing_functions_is_refused_naming_them() -> None:
    class Lacking:
        pass

    try:
        _testing_abi.bind(Lacking(), "/x/libkrabka_coord.so")  # type: ignore[arg-type]
    except _testing_abi.MissingTestingFunctionsError as e:
        assert "krabka_testing_cluster_new" in str(e) and "/x/libkrabka_coord.so" in str(e)
        assert isinstance(e, ImportError) and len(e.missing) == len(_testing_abi.PROTOTYPES)
    else:
        raise AssertionError("bind accepted a library without the testing functions")
