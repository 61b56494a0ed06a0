"""Loading libkrabka_coord.so with ctypes and declaring the C prototypes.

Only the functions of include/krabka_coord.h are used. Every prototype is
declared here, once, so that ctypes converts and checks arguments the same way
on every call.
"""

from __future__ import annotations

import ctypes
import os
import threading
from ctypes import (
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_int,
    c_int16,
    c_int32,
    c_int64,
    c_size_t,
    c_uint32,
    c_void_p,
)
from pathlib import Path

__all__ = ["lib", "library_path", "check_fork", "ForkedProcessError"]

ABI_VERSION = 1
LIBRARY_NAME = "libkrabka_coord.so"
ENV_LIBRARY = "KRABKA_COORD_LIBRARY"

NTS = ctypes.c_size_t(-1).value
NAME_MAX = 249
NAME_BUF = 256
TOKEN_TEXT_MAX = 32
ERRSTR_SIZE = 512
PARTITION_ANY = -1
MAX_METADATA_BYTES = 4096  # KRABKA_MAX_METADATA_BYTES

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT16_MIN, INT16_MAX = -(2**15), 2**15 - 1


# --------------------------------------------------------------------------
# Fork guard
# --------------------------------------------------------------------------


class ForkedProcessError(RuntimeError):
    """The library was used in a child process created by fork() without exec().

    The Go runtime inside libkrabka_coord.so does not survive fork(): its
    threads are gone in the child, so a call could hang for ever. Create
    clients in the child after a fresh start (for example with the
    multiprocessing "spawn" or "forkserver" start methods) instead.
    """


_forked = False


def _after_fork_in_child() -> None:
    global _forked
    _forked = True


def check_fork() -> None:
    """Raise ForkedProcessError when called in a forked child process."""
    if _forked:
        raise ForkedProcessError(
            "krabka_coord cannot be used in a child process created by fork() "
            "after the library was loaded in the parent (the Go runtime does "
            "not survive fork). Use the multiprocessing 'spawn' or "
            "'forkserver' start method, or import krabka_coord only in the "
            "child."
        )


def in_forked_child() -> bool:
    return _forked


# --------------------------------------------------------------------------
# C value types
# --------------------------------------------------------------------------


class Token(Structure):
    _fields_ = [("producer_id", c_int64), ("producer_epoch", c_int16)]


class KeyStruct(Structure):
    _fields_ = [
        ("kind", c_int32),
        ("role_len", c_uint32),
        ("role", c_char * NAME_BUF),
        ("member_len", c_uint32),
        ("member", c_char * NAME_BUF),
    ]


class RegistrationStruct(Structure):
    _fields_ = [
        ("member_len", c_uint32),
        ("member", c_char * NAME_BUF),
        ("registered_at", c_int64),
    ]


class LeaseStruct(Structure):
    _fields_ = [
        ("member_len", c_uint32),
        ("member", c_char * NAME_BUF),
        ("token", Token),
        ("granted_at", c_int64),
        ("deadline", c_int64),
    ]


class MessageStruct(Structure):
    _fields_ = [
        ("topic", c_char_p),
        ("partition", c_int32),
        ("key", c_char_p),
        ("key_len", c_size_t),
        ("value", c_char_p),
        ("value_len", c_size_t),
    ]


class HeaderStruct(Structure):
    """krabka_header_t: one record header of a guarded write."""

    _fields_ = [
        ("key", c_char_p),
        ("value", c_char_p),
        ("value_len", c_size_t),
    ]


class ProduceResultStruct(Structure):
    _fields_ = [("partition", c_int32), ("offset", c_int64)]


class RosterEntryStruct(Structure):
    _fields_ = [
        ("member_len", c_uint32),
        ("member", c_char * NAME_BUF),
        ("offset", c_int64),
        ("registered_at", c_int64),
        ("rank", c_int32),
    ]


class EventStruct(Structure):
    """krabka_event_t."""

    _fields_ = [
        ("type", c_int),
        ("tag", ctypes.c_uint64),
        ("err", c_int),
        ("errstr", c_char_p),
        ("leadership", c_void_p),
        ("state", c_int),
        ("log_level", c_int),
        ("log_line", c_char_p),
        ("watch_event", c_void_p),
    ]


class WatchEventStruct(Structure):
    """krabka_watch_event_t."""

    _fields_ = [
        ("kind", c_int),
        ("role_len", c_uint32),
        ("role", c_char * NAME_BUF),
        ("has_holder", c_int),
        ("holder_len", c_uint32),
        ("holder", c_char * NAME_BUF),
        ("token", Token),
        ("has_prev_holder", c_int),
        ("prev_holder_len", c_uint32),
        ("prev_holder", c_char * NAME_BUF),
        ("prev_token", Token),
        ("has_lease", c_int),
        ("lease", LeaseStruct),
        ("roster_count", c_size_t),
        ("roster", POINTER(RosterEntryStruct)),
        ("offset", c_int64),
        ("at_ms", c_int64),
    ]


# krabka_log_cb: void (*)(void *opaque, krabka_log_level_t level, const char *line)
LOG_CB = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_char_p)


def read_name(struct: Structure, field: str, length: int) -> bytes:
    """The first `length` bytes of a fixed name array inside a struct."""
    if length > NAME_BUF:
        length = NAME_BUF
    off = getattr(type(struct), field).offset
    return ctypes.string_at(ctypes.addressof(struct) + off, length)


def write_name(struct: Structure, field: str, data: bytes) -> None:
    """Copy `data` and a NUL into a fixed name array (caller checked the size)."""
    if len(data) >= NAME_BUF:
        raise ValueError("name of %d bytes does not fit the %d-byte buffer" % (len(data), NAME_BUF))
    off = getattr(type(struct), field).offset
    base = ctypes.addressof(struct) + off
    ctypes.memmove(base, data, len(data))
    ctypes.memset(base + len(data), 0, 1)


# --------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------


class LibraryLoadError(ImportError):
    """libkrabka_coord.so could not be found or is not compatible."""


def _candidates() -> list[Path]:
    here = Path(__file__).resolve().parent
    out: list[Path] = []
    env = os.environ.get(ENV_LIBRARY)
    if env:
        return [Path(env)]
    # 1. the copy packaged into the wheel
    out.append(here / "_lib" / LIBRARY_NAME)
    out.append(here / LIBRARY_NAME)
    # 2. a source checkout: <repo>/bindings/python/src/krabka_coord -> <repo>/build
    repo = here.parents[3] if len(here.parents) > 3 else None
    if repo is not None:
        out.append(repo / "build" / LIBRARY_NAME)
    return out


def _load() -> tuple[ctypes.CDLL, str]:
    tried = []
    for path in _candidates():
        if path.is_file():
            try:
                return ctypes.CDLL(str(path)), str(path)
            except OSError as exc:
                raise LibraryLoadError("cannot load %s: %s" % (path, exc)) from exc
        tried.append(str(path))
    if os.environ.get(ENV_LIBRARY):
        raise LibraryLoadError(
            "%s=%s does not name a file" % (ENV_LIBRARY, os.environ[ENV_LIBRARY])
        )
    # 3. the system loader (LD_LIBRARY_PATH, ldconfig)
    try:
        return ctypes.CDLL(LIBRARY_NAME), LIBRARY_NAME
    except OSError:
        pass
    raise LibraryLoadError(
        "libkrabka_coord.so not found (looked at %s and the system loader path). "
        "Reinstall the package (pip install builds it with Go), or set %s to "
        "the path of a built library." % (", ".join(tried), ENV_LIBRARY)
    )


def signatures() -> "dict[str, tuple[object, list[object]]]":
    """Every C function the binding calls: name -> (restype, argtypes)."""
    P = POINTER
    err = c_int  # krabka_err_t
    return {
        "krabka_version": (c_char_p, []),
        "krabka_version_number": (c_int, []),
        "krabka_abi_version": (c_int, []),
        "krabka_err2str": (c_char_p, [c_int]),
        "krabka_err2name": (c_char_p, [c_int]),
        "krabka_err_is_retriable": (c_int, [c_int]),
        "krabka_err_is_fatal": (c_int, [c_int]),
        # pure
        "krabka_token_no_epoch": (Token, []),
        "krabka_token_validate": (err, [Token, c_char_p, c_size_t]),
        "krabka_token_compare": (c_int, [Token, Token]),
        "krabka_token_supersedes": (c_int, [Token, Token]),
        "krabka_token_format": (err, [Token, c_char_p, c_size_t]),
        "krabka_token_parse": (err, [c_char_p, c_size_t, P(Token), c_char_p, c_size_t]),
        "krabka_role_validate": (err, [c_char_p, c_size_t, c_char_p, c_size_t]),
        "krabka_member_validate": (err, [c_char_p, c_size_t, c_char_p, c_size_t]),
        "krabka_murmur2": (c_int32, [c_char_p, c_size_t]),
        "krabka_role_partition": (err, [c_char_p, c_size_t, c_int32, P(c_int32), c_char_p, c_size_t]),
        "krabka_value_is_tombstone": (c_int, [c_char_p, c_size_t]),
        "krabka_key_encode": (err, [P(KeyStruct), c_char_p, c_size_t, P(c_size_t), c_char_p, c_size_t]),
        "krabka_key_decode": (err, [c_char_p, c_size_t, P(KeyStruct), c_char_p, c_size_t]),
        "krabka_registration_encode": (err, [P(RegistrationStruct), c_char_p, c_size_t, P(c_size_t), c_char_p, c_size_t]),
        "krabka_registration_decode": (err, [c_char_p, c_size_t, P(RegistrationStruct), c_char_p, c_size_t]),
        "krabka_lease_encode": (err, [P(LeaseStruct), c_char_p, c_size_t, P(c_size_t), c_char_p, c_size_t]),
        "krabka_lease_decode": (err, [c_char_p, c_size_t, P(LeaseStruct), c_char_p, c_size_t]),
        # configuration
        "krabka_conf_new": (c_void_p, []),
        "krabka_conf_set": (err, [c_void_p, c_char_p, c_char_p, c_char_p, c_size_t]),
        "krabka_conf_get": (err, [c_void_p, c_char_p, c_char_p, P(c_size_t)]),
        "krabka_conf_destroy": (err, [c_void_p]),
        # client
        "krabka_client_new": (err, [c_void_p, P(c_void_p), c_char_p, c_size_t]),
        "krabka_client_destroy": (err, [c_void_p]),
        "krabka_client_acquire": (err, [c_void_p, c_char_p, c_size_t, c_char_p, c_size_t, c_int64, P(c_void_p), c_char_p, c_size_t]),
        "krabka_client_try_acquire": (err, [c_void_p, c_char_p, c_size_t, c_char_p, c_size_t, c_int64, P(c_void_p), P(c_int64), c_char_p, c_size_t]),
        "krabka_client_describe": (err, [c_void_p, c_char_p, c_size_t, c_int64, P(c_void_p), c_char_p, c_size_t]),
        "krabka_client_leave": (err, [c_void_p, c_char_p, c_size_t, c_char_p, c_size_t, c_int64, c_char_p, c_size_t]),
        # leadership
        "krabka_leadership_token": (err, [c_void_p, P(Token)]),
        "krabka_leadership_lease": (err, [c_void_p, P(LeaseStruct)]),
        "krabka_leadership_state": (err, [c_void_p, P(c_int)]),
        "krabka_leadership_renew_due": (err, [c_void_p, P(c_int)]),
        "krabka_leadership_renew": (err, [c_void_p, c_int64, c_char_p, c_size_t]),
        "krabka_leadership_produce": (err, [c_void_p, P(MessageStruct), c_size_t, c_int64, P(ProduceResultStruct), c_char_p, c_size_t]),
        "krabka_leadership_resign": (err, [c_void_p, c_int64, c_char_p, c_size_t]),
        "krabka_leadership_destroy": (err, [c_void_p]),
        # status
        "krabka_status_holder": (err, [c_void_p, P(c_int), c_char_p, c_size_t, P(c_size_t)]),
        "krabka_status_token": (err, [c_void_p, P(Token)]),
        "krabka_status_current": (err, [c_void_p, P(c_int)]),
        "krabka_status_lease": (err, [c_void_p, P(c_int), P(LeaseStruct)]),
        "krabka_status_partition": (err, [c_void_p, P(c_int32)]),
        "krabka_status_skipped": (err, [c_void_p, P(c_int64)]),
        "krabka_status_removed": (err, [c_void_p, P(c_int64)]),
        "krabka_status_roster_count": (err, [c_void_p, P(c_size_t)]),
        "krabka_status_roster_entry": (err, [c_void_p, c_size_t, P(RosterEntryStruct)]),
        "krabka_status_destroy": (err, [c_void_p]),
        # leadership events, queues, logs, statistics
        "krabka_leadership_wait": (err, [c_void_p, c_int64, P(c_int)]),
        "krabka_leadership_event_fd": (err, [c_void_p, P(c_int)]),
        "krabka_leadership_end_error": (err, [c_void_p, P(c_int), c_char_p, c_size_t]),
        "krabka_leadership_ended_async": (err, [c_void_p, c_void_p, ctypes.c_uint64]),
        "krabka_queue_new": (err, [P(c_void_p)]),
        "krabka_queue_fd": (err, [c_void_p, P(c_int)]),
        "krabka_queue_poll": (err, [c_void_p, P(EventStruct)]),
        "krabka_queue_destroy": (err, [c_void_p]),
        "krabka_client_acquire_async": (err, [c_void_p, c_char_p, c_size_t, c_char_p, c_size_t, c_int64, c_void_p, ctypes.c_uint64, c_char_p, c_size_t]),
        "krabka_conf_set_log_cb": (err, [c_void_p, LOG_CB, c_void_p]),
        "krabka_conf_set_log_queue": (err, [c_void_p, c_void_p, ctypes.c_uint64]),
        "krabka_client_stats_json": (err, [c_void_p, P(c_void_p), P(c_size_t)]),
        "krabka_free": (None, [c_void_p]),
        "krabka_client_watch": (err, [c_void_p, c_char_p, c_size_t, c_int, c_int64, P(c_void_p), c_char_p, c_size_t]),
        "krabka_watch_next": (err, [c_void_p, c_int64, P(WatchEventStruct), c_char_p, c_size_t]),
        "krabka_watch_event_fd": (err, [c_void_p, P(c_int)]),
        "krabka_watch_next_async": (err, [c_void_p, c_int64, c_void_p, ctypes.c_uint64]),
        "krabka_watch_destroy": (err, [c_void_p]),
        # record headers (COORDINATION.md 11; added in 1.1)
        "krabka_client_set_metadata": (err, [c_void_p, c_char_p, c_size_t, c_char_p, c_size_t, c_char_p, c_size_t, c_char_p, c_size_t, c_char_p, c_size_t]),
        "krabka_leadership_set_metadata": (err, [c_void_p, c_char_p, c_size_t, c_int64, c_char_p, c_size_t]),
        "krabka_leadership_metadata": (err, [c_void_p, c_char_p, c_size_t, P(c_size_t)]),
        "krabka_leadership_resign_to": (err, [c_void_p, c_char_p, c_size_t, c_int64, c_char_p, c_size_t]),
        "krabka_leadership_produce_with_headers": (err, [c_void_p, P(MessageStruct), c_size_t, P(HeaderStruct), P(c_size_t), c_int64, P(ProduceResultStruct), c_char_p, c_size_t]),
        "krabka_status_metadata": (err, [c_void_p, c_char_p, c_size_t, P(c_size_t)]),
        "krabka_status_roster_metadata": (err, [c_void_p, c_size_t, c_char_p, c_size_t, P(c_size_t)]),
        "krabka_watch_metadata": (err, [c_void_p, c_char_p, c_size_t, P(c_size_t)]),
        "krabka_verifier_new": (err, [P(c_void_p)]),
        "krabka_verifier_judge": (err, [c_void_p, c_char_p, c_size_t, c_char_p, c_size_t, Token, P(c_int)]),
        "krabka_verifier_highest": (err, [c_void_p, c_char_p, c_size_t, P(c_int), P(Token)]),
        "krabka_verifier_destroy": (err, [c_void_p]),
    }


def _declare(lib: ctypes.CDLL) -> None:
    sigs = signatures()
    missing = []
    for name, (restype, argtypes) in sigs.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            missing.append(name)
            continue
        fn.restype = restype
        fn.argtypes = argtypes
    if missing:
        # The pure functions are required; a library without the client part
        # (during development) still serves the pure API.
        required = [m for m in missing if not m.startswith(("krabka_client", "krabka_leadership", "krabka_status", "krabka_conf", "krabka_queue", "krabka_watch", "krabka_free", "krabka_verifier"))]
        if required:
            raise LibraryLoadError(
                "libkrabka_coord.so lacks the functions %s: it is not a build of this version" % ", ".join(required)
            )
    global MISSING
    MISSING = frozenset(missing)


MISSING: frozenset[str] = frozenset()

lib, library_path = _load()

# The ABI version first: it is the one function every version has.
try:
    _abi_fn = lib.krabka_abi_version
except AttributeError:
    raise LibraryLoadError("%s has no krabka_abi_version(): it is not libkrabka_coord" % library_path) from None
_abi_fn.restype = c_int
_abi_fn.argtypes = []
_abi = _abi_fn()
if _abi != ABI_VERSION:
    raise LibraryLoadError(
        "%s has ABI version %d but this krabka_coord package needs ABI version %d; "
        "install a matching library (or unset %s)" % (library_path, _abi, ABI_VERSION, ENV_LIBRARY)
    )
_declare(lib)

# Registered only once the library (and so the Go runtime) is loaded.
os.register_at_fork(after_in_child=_after_fork_in_child)

# Serialises close/destroy against each other within a process.
handle_lock = threading.Lock()


def require(name: str) -> None:
    if name in MISSING:
        raise NotImplementedError("%s is not provided by %s" % (name, library_path))
