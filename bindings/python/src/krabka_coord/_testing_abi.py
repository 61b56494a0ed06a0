"""The C ABI of include/krabka_coord_testing.h for ctypes: its constants and
the prototypes of its functions, declared on the library by bind().

Written by hand (internal/gen reads only include/krabka_coord.h), so
tests/test_testing_abi.py reads the testing header and fails when a
constant, a function or a parameter here differs from it. The type mapping
is _abi's.
"""

from __future__ import annotations

from ctypes import CDLL, POINTER, c_char_p, c_int, c_int32, c_int64, c_size_t, c_void_p
from typing import Any, Dict, List, Tuple

from . import _abi

# Constants: #define KRABKA_TESTING_*.
NAME_MAX = 64
REAL_TIME = 1
CLOCK_START_MS = 1767225600000

# Every function of the testing header: name -> (restype, argtypes).
PROTOTYPES: Dict[str, Tuple[Any, List[Any]]] = {
    "krabka_testing_cluster_new": (c_int, [c_char_p, c_size_t, c_int32, c_int, POINTER(c_void_p), c_char_p, c_size_t]),
    "krabka_testing_cluster_destroy": (c_int, [c_void_p]),
    "krabka_testing_cluster_name": (c_char_p, [c_void_p]),
    "krabka_testing_clock_now": (c_int, [c_void_p, POINTER(c_int64), c_char_p, c_size_t]),
    "krabka_testing_clock_advance": (c_int, [c_void_p, c_int64, c_char_p, c_size_t]),
    "krabka_testing_cluster_set_available": (c_int, [c_void_p, c_int, c_char_p, c_size_t]),
    "krabka_testing_mint": (c_int, [c_void_p, c_char_p, c_size_t, POINTER(_abi.Token), c_char_p, c_size_t]),
    "krabka_testing_topic_count": (c_int, [c_void_p, c_char_p, c_int32, POINTER(c_int64), c_char_p, c_size_t]),
    "krabka_testing_topic_record": (c_int, [c_void_p, c_char_p, c_int32, c_int64, POINTER(c_int64), c_char_p,
                                            c_size_t, POINTER(c_size_t), POINTER(c_int), c_char_p, c_size_t]),
    "krabka_testing_client_set_cut": (c_int, [c_void_p, c_int, c_char_p, c_size_t]),
    "krabka_testing_client_set_paused": (c_int, [c_void_p, c_int, c_char_p, c_size_t]),
    "krabka_testing_client_kill": (c_int, [c_void_p, c_char_p, c_size_t]),
}


class MissingTestingFunctionsError(ImportError):
    """The loaded library lacks functions of include/krabka_coord_testing.h:
    it is a build without the test aids. `missing` names them."""

    def __init__(self, path: str, missing: List[str]) -> None:
        self.missing = missing
        super().__init__(
            "%s lacks the functions %s of include/krabka_coord_testing.h: krabka_coord.testing needs a "
            "libkrabka_coord built with the in-process cluster (this version's)" % (path, ", ".join(missing))
        )


def bind(lib: CDLL, path: str) -> CDLL:
    """Sets restype and argtypes of every function of PROTOTYPES on lib;
    raises MissingTestingFunctionsError naming every function lib lacks."""
    missing = sorted(name for name in PROTOTYPES if not hasattr(lib, name))
    if missing:
        raise MissingTestingFunctionsError(path, missing)
    for name, (restype, argtypes) in PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib
