"""Loading libkrabka_coord with ctypes.

Where the library comes from, in order: KRABKA_COORD_LIBRARY alone when set;
the copy inside the wheel (krabka_coord/_lib/); a source checkout's build/;
the system loader (the SONAME libkrabka_coord.so.2). The ABI version is
checked first, then every prototype of the header is declared by the
generated `_abi.bind` (nothing is declared by hand).
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Callable, List, Optional, Tuple

from . import _abi

__all__ = ["lib", "glib", "library_path", "LibraryLoadError", "ERRSTR_SIZE", "Handle"]

ENV_LIBRARY = "KRABKA_COORD_LIBRARY"
LIBRARY_NAME = "libkrabka_coord.so"
SONAME = "%s.%d" % (LIBRARY_NAME, _abi.ABI_VERSION)

#: Size of the errstr buffers the binding passes (the library truncates).
ERRSTR_SIZE = 512


class LibraryLoadError(ImportError):
    """libkrabka_coord could not be found or is not compatible."""


def _candidates() -> List[Path]:
    env = os.environ.get(ENV_LIBRARY)
    if env:
        return [Path(env)]
    here = Path(__file__).resolve().parent
    out = [here / "_lib" / SONAME, here / "_lib" / LIBRARY_NAME]
    # a source checkout: <repo>/bindings/python/src/krabka_coord -> <repo>/build
    if len(here.parents) > 3:
        out.append(here.parents[3] / "build" / LIBRARY_NAME)
    return out


def _load() -> Tuple[ctypes.CDLL, str]:
    tried = []
    for path in _candidates():
        if path.is_file():
            try:
                return ctypes.CDLL(str(path)), str(path)
            except OSError as exc:
                raise LibraryLoadError("cannot load %s: %s" % (path, exc)) from exc
        tried.append(str(path))
    if os.environ.get(ENV_LIBRARY):
        raise LibraryLoadError("%s=%s does not name a file" % (ENV_LIBRARY, os.environ[ENV_LIBRARY]))
    try:
        return ctypes.CDLL(SONAME), SONAME
    except OSError:
        pass
    raise LibraryLoadError(
        "libkrabka_coord not found (looked at %s and the system loader's %s). "
        "Reinstall the package (pip install builds it with Go), or set %s to "
        "the path of a built library." % (", ".join(tried), SONAME, ENV_LIBRARY)
    )


def _check_abi(cdll: ctypes.CDLL, path: str) -> None:
    try:
        fn = cdll.krabka_abi_version
    except AttributeError:
        raise LibraryLoadError("%s has no krabka_abi_version(): it is not libkrabka_coord" % path) from None
    fn.restype = ctypes.c_int
    fn.argtypes = []
    got = fn()
    if got != _abi.ABI_VERSION:
        raise LibraryLoadError(
            "%s has ABI version %d but this krabka_coord package needs ABI version %d; "
            "install a matching library (or unset %s)" % (path, got, _abi.ABI_VERSION, ENV_LIBRARY)
        )


lib, library_path = _load()
_check_abi(lib, library_path)
try:
    _abi.bind(lib)
except _abi.MissingFunctionsError as exc:
    raise LibraryLoadError("%s: %s" % (library_path, exc)) from None

#: The same library through ctypes.PyDLL: its calls keep the GIL. Only for
#: the calls that never block and take microseconds (submitting a *_async
#: call, polling a queue, the accessors of an event, destroying an event
#: whose data was taken): every GIL release and re-acquire is a chance for
#: the threads that wait on completions to contend for it, and on the
#: completion path there are several such calls per call. Everything that
#: may block, or may call back into Python, goes through `lib`.
glib = _abi.bind(ctypes.PyDLL(library_path))


class Handle:
    """An owned C handle, destroyed exactly once (by release(), whichever
    thread calls it first). In a child after fork() the library's destroy
    answers FORKED and frees nothing, as the header says."""

    __slots__ = ("_ptr", "_lock", "_destroy")

    def __init__(self, ptr: int, destroy: Callable[[int], int]) -> None:
        self._ptr: Optional[int] = ptr
        self._lock = threading.Lock()
        self._destroy = destroy

    def get(self) -> Optional[int]:
        return self._ptr

    def detach(self) -> Optional[int]:
        """Gives the pointer up without destroying it (the caller now owns
        it); None when it was released already."""
        with self._lock:
            ptr, self._ptr = self._ptr, None
        return ptr

    def release(self) -> bool:
        """Destroys the handle; False when it was released already."""
        with self._lock:
            ptr, self._ptr = self._ptr, None
        if ptr is None:
            return False
        self._destroy(ptr)
        return True
