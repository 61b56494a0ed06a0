"""Exceptions: one base class carrying the C error code, and subclasses
for the outcomes callers handle by type."""

from __future__ import annotations

from typing import Optional

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
    "ErrorCode",
    "raise_for",
]


class ErrorCode:
    """The krabka_err_t numbers (they never change)."""

    OK = 0
    INVALID_ARG = 1
    INVALID_HANDLE = 2
    BUFFER_TOO_SMALL = 3
    UNKNOWN_CONFIG = 4
    INVALID_CONFIG = 5
    TRUNCATED = 10
    TRAILING_BYTES = 11
    UNSUPPORTED_VERSION = 12
    UNKNOWN_KIND = 13
    NEGATIVE_LENGTH = 14
    INVALID_UTF8 = 15
    LEASE_KEY_HAS_MEMBER = 16
    EMPTY_ROLE = 17
    EMPTY_MEMBER = 18
    ROLE_TOO_LONG = 19
    MEMBER_TOO_LONG = 20
    NEGATIVE_TOKEN = 21
    TOKEN_FORM = 22
    INVALID_PARTITION_COUNT = 23
    INVALID_LEASE_CONFIG = 24
    FENCED = 30
    LEASE_EXPIRED = 31
    NOT_LEADER = 32
    TIMEOUT = 33
    AUTHORIZATION = 34
    UNSUPPORTED = 35
    TRANSPORT = 36
    CLOSED = 37
    AUTHENTICATION = 38
    MESSAGE_TOO_LARGE = 39
    UNKNOWN_TOPIC_OR_PARTITION = 40
    TLS = 41
    FORKED = 42
    INTERNAL = 50


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
        self.name = (lib.krabka_err2name(self.code) or b"UNKNOWN").decode("utf-8", "replace")
        self.retriable = bool(lib.krabka_err_is_retriable(self.code))
        self.fatal = bool(lib.krabka_err_is_fatal(self.code))
        if not reason:
            reason = (lib.krabka_err2str(self.code) or b"").decode("utf-8", "replace")
        self.reason = reason
        super().__init__(self.code, reason)

    def __str__(self) -> str:
        # The library's reason already names the category ("krabka: fenced:
        # ...", "krabka: token: producer_epoch: token_form: ..."); the name
        # is prefixed only to the generic description.
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
        return self.name.lower()


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


_BY_CODE: dict[int, type[KrabkaError]] = {
    ErrorCode.INVALID_ARG: InvalidArgumentError,
    ErrorCode.UNKNOWN_CONFIG: ConfigError,
    ErrorCode.INVALID_CONFIG: ConfigError,
    ErrorCode.FENCED: FencedError,
    ErrorCode.LEASE_EXPIRED: LeaseExpiredError,
    ErrorCode.NOT_LEADER: NotLeaderError,
    ErrorCode.TIMEOUT: KrabkaTimeoutError,
    ErrorCode.AUTHORIZATION: AuthorizationError,
    ErrorCode.UNSUPPORTED: UnsupportedError,
    ErrorCode.TRANSPORT: TransportError,
    ErrorCode.CLOSED: ClosedError,
    ErrorCode.AUTHENTICATION: AuthenticationError,
    ErrorCode.MESSAGE_TOO_LARGE: MessageTooLargeError,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: UnknownTopicOrPartitionError,
    ErrorCode.TLS: TLSError,
}
for _c in range(ErrorCode.TRUNCATED, ErrorCode.INVALID_LEASE_CONFIG + 1):
    _BY_CODE[_c] = DataError


def error_for(code: int, errbuf: Optional[object] = None) -> KrabkaError:
    reason = None
    if errbuf is not None:
        raw = errbuf.value  # type: ignore[attr-defined]
        if raw:
            reason = raw.decode("utf-8", "replace")
    cls = _BY_CODE.get(code, KrabkaError)
    return cls(code, reason)


def raise_for(code: int, errbuf: Optional[object] = None) -> None:
    """Raise the exception for a non-zero krabka_err_t."""
    if code:
        raise error_for(code, errbuf)

