"""Exceptions: one base class carrying the C error code, and subclasses for
the outcomes callers handle by type.

The table of codes (name, text, retriable, fatal) is the loaded library's
own, krabka_get_err_descs (the generated _abi.ERROR_DESCS when the library
gives none); the data codes and their category words are the generated
_abi.DATA_CATEGORIES. A code the library adds needs no edit here: it raises
a base KrabkaError carrying the library's name and text for it (a data code
a DataError), and only the codes below that callers catch by type have a
class of their own.
"""

from __future__ import annotations

import ctypes
from typing import Dict, Iterable, Mapping, NamedTuple, Optional, Tuple, Type

from . import _abi
from ._native import lib

__all__ = [
    "KrabkaError",
    "InvalidArgumentError",
    "ConfigError",
    "DataError",
    "FencedError",
    "LeaseExpiredError",
    "NotLeaderError",
    "KrabkaTimeoutError",
    "AuthorizationError",
    "AuthenticationError",
    "MessageTooLargeError",
    "UnknownTopicOrPartitionError",
    "TLSError",
    "UnsupportedError",
    "TransportError",
    "ClosedError",
    "ForkedProcessError",
    "ErrorCode",
    "error_for",
    "raise_for",
]

#: The krabka_err_t numbers (they never change), generated from the header.
ErrorCode = _abi.ErrorCode


class ErrorInfo(NamedTuple):
    name: str
    text: str
    retriable: bool
    fatal: bool


def _library_descs() -> Tuple[Tuple[int, str, str, bool, bool], ...]:
    """krabka_get_err_descs of the loaded library."""
    descs = ctypes.POINTER(_abi.ErrDesc)()
    count = ctypes.c_size_t()
    lib.krabka_get_err_descs(ctypes.byref(descs), ctypes.byref(count))
    out = []
    for i in range(count.value if descs else 0):
        d = descs[i]
        out.append((int(d.code), (d.name or b"").decode("utf-8", "replace"),
                    (d.desc or b"").decode("utf-8", "replace"), bool(d.retriable), bool(d.fatal)))
    return tuple(out)


def build_table(descs: Iterable[Tuple[int, str, str, bool, bool]]) -> Dict[int, ErrorInfo]:
    return {code: ErrorInfo(name, text, retriable, fatal) for code, name, text, retriable, fatal in descs}


#: code -> (name, text, retriable, fatal), from the library (else _abi).
TABLE: Dict[int, ErrorInfo] = build_table(_library_descs() or _abi.ERROR_DESCS)


def info_of(code: int, table: Mapping[int, ErrorInfo] = TABLE) -> ErrorInfo:
    """The table's row of a code; for a code no table knows, the library's
    own answers (krabka_err2name says "UNKNOWN")."""
    row = table.get(code)
    if row is not None:
        return row
    return ErrorInfo(
        (lib.krabka_err2name(code) or b"UNKNOWN").decode("utf-8", "replace"),
        (lib.krabka_err2str(code) or b"unknown error").decode("utf-8", "replace"),
        bool(lib.krabka_err_is_retriable(code)),
        bool(lib.krabka_err_is_fatal(code)),
    )


class KrabkaError(Exception):
    """An error reported by libkrabka_coord.

    Attributes:
        code: the krabka_err_t number (stable across releases).
        name: its symbolic name without the prefix, e.g. "FENCED".
        retriable: the same call may succeed when repeated later.
        fatal: the object the call was made on can no longer be used for
            that purpose.
        reason: the human-readable reason (the C errstr, or the generic
            description of the code when the library gave none).
    """

    code: int
    name: str
    retriable: bool
    fatal: bool
    reason: str

    def __init__(self, code: int, reason: Optional[str] = None) -> None:
        self.code = int(code)
        row = info_of(self.code)
        self.name = row.name
        self.retriable = row.retriable
        self.fatal = row.fatal
        self.reason = reason or row.text
        super().__init__(self.code, self.reason)

    def __str__(self) -> str:
        # The library's reason already names the category ("krabka: fenced:
        # ..."); the name is prefixed only to the generic description.
        if self.reason.startswith("krabka: "):
            return self.reason
        return "%s: %s" % (self.name, self.reason)

    def __repr__(self) -> str:
        return "%s(code=%d, name=%r, reason=%r)" % (type(self).__name__, self.code, self.name, self.reason)


class InvalidArgumentError(KrabkaError, ValueError):
    """KRABKA_ERR_INVALID_ARG: an argument the library refused."""


class ConfigError(KrabkaError, ValueError):
    """An unknown configuration property (UNKNOWN_CONFIG) or a value that does
    not parse (INVALID_CONFIG). `key` names the property."""

    key: Optional[str] = None


class DataError(KrabkaError, ValueError):
    """A data error: bytes that do not decode, or a name, token, partition
    count or lease configuration that breaks a rule of the contract.

    `category` is the word of the conformance vocabulary, e.g. "truncated",
    "invalid_utf8", "role_too_long", "token_form".
    """

    @property
    def category(self) -> str:
        return _abi.DATA_CATEGORIES.get(self.code, self.name.lower())


class FencedError(KrabkaError):
    """The cluster superseded this leadership: stop dispatching at once."""


class LeaseExpiredError(KrabkaError):
    """Renewal failed until the lease deadline: the leadership ended by itself."""


class NotLeaderError(KrabkaError):
    """The leadership was resigned or closed by its owner."""


class KrabkaTimeoutError(KrabkaError, TimeoutError):
    """The call's timeout passed (retriable)."""


class AuthorizationError(KrabkaError):
    """A Kafka ACL is missing; the reason names it."""


class AuthenticationError(KrabkaError):
    """The cluster refused the SASL credentials (not a missing ACL)."""


class MessageTooLargeError(KrabkaError):
    """A record is larger than the broker or topic accepts (permanent)."""


class UnknownTopicOrPartitionError(KrabkaError):
    """A guarded write names a topic or partition that does not exist."""


class TLSError(KrabkaError):
    """The TLS handshake failed for a lasting reason (untrusted, expired or
    misnamed broker certificate; client certificate refused)."""


class UnsupportedError(KrabkaError):
    """The cluster lacks transactions or DescribeTransactions."""


class TransportError(KrabkaError):
    """A network or broker error that may pass (retriable)."""


class ClosedError(KrabkaError):
    """The client was closed."""


class ForkedProcessError(KrabkaError, RuntimeError):
    """KRABKA_ERR_FORKED: the library was used in a child process created by
    fork() without exec().

    The Go runtime inside libkrabka_coord does not survive fork(), so the
    library answers every call in the child with FORKED at once (its own
    guard). Create clients in the child after a fresh start (the
    multiprocessing "spawn" or "forkserver" start methods) instead.
    """

    HINT = ("use the multiprocessing 'spawn' or 'forkserver' start method, "
            "or import krabka_coord only in the child")

    def __init__(self, code: int = int(ErrorCode.FORKED), reason: Optional[str] = None) -> None:
        super().__init__(code, reason)
        if self.HINT not in self.reason:
            self.reason = "%s (%s)" % (self.reason, self.HINT)
            self.args = (self.code, self.reason)


#: The classes callers catch by type, by the code's NAME (not its number
#: range): a code not named here is a base KrabkaError, or a DataError when
#: _abi.DATA_CATEGORIES lists it.
CLASS_BY_NAME: Dict[str, Type[KrabkaError]] = {
    "INVALID_ARG": InvalidArgumentError,
    "UNKNOWN_CONFIG": ConfigError,
    "INVALID_CONFIG": ConfigError,
    "FENCED": FencedError,
    "LEASE_EXPIRED": LeaseExpiredError,
    "NOT_LEADER": NotLeaderError,
    "TIMEOUT": KrabkaTimeoutError,
    "AUTHORIZATION": AuthorizationError,
    "UNSUPPORTED": UnsupportedError,
    "TRANSPORT": TransportError,
    "CLOSED": ClosedError,
    "AUTHENTICATION": AuthenticationError,
    "MESSAGE_TOO_LARGE": MessageTooLargeError,
    "UNKNOWN_TOPIC_OR_PARTITION": UnknownTopicOrPartitionError,
    "TLS": TLSError,
    "FORKED": ForkedProcessError,
}


def class_for(code: int, table: Mapping[int, ErrorInfo] = TABLE,
              data: Mapping[int, str] = _abi.DATA_CATEGORIES) -> Type[KrabkaError]:
    """The exception class of a code."""
    if code in data:
        return DataError
    row = table.get(code)
    if row is None:
        return KrabkaError
    return CLASS_BY_NAME.get(row.name, KrabkaError)


_CLASS: Dict[int, Type[KrabkaError]] = {code: class_for(code) for code in TABLE}


def error_for(code: int, errbuf: Optional[object] = None) -> KrabkaError:
    """The exception for a krabka_err_t, with the reason of `errbuf` (a
    ctypes char buffer, or str) when it holds one."""
    reason = None
    if isinstance(errbuf, str):
        reason = errbuf or None
    elif errbuf is not None:
        raw = errbuf.value  # type: ignore[attr-defined]
        if raw:
            reason = raw.decode("utf-8", "replace")
    cls = _CLASS.get(code) or class_for(code)
    return cls(code, reason)


def raise_for(code: int, errbuf: Optional[object] = None) -> None:
    """Raise the exception for a non-zero krabka_err_t."""
    if code:
        raise error_for(code, errbuf)
