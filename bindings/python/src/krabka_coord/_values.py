"""The value types of the binding and the readers that copy them out of C
objects: fencing tokens, record values (Key, Registration, Lease), describe
results (Status, RosterEntry), watch events (WatchEvent), guarded-write
results (ProduceResult) and leadership states. Values are plain immutable
Python objects: none holds a C handle.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Optional, Tuple, Union

from . import _abi
from ._args import INT16_MAX, INT16_MIN, INT64_MAX, INT64_MIN, check_int
from ._errors import ErrorCode, error_for, raise_for
from ._native import ERRSTR_SIZE, lib

__all__ = [
    "FencingToken",
    "NO_EPOCH",
    "Kind",
    "Key",
    "Registration",
    "Lease",
    "LeadershipState",
    "ProduceResult",
    "RosterEntry",
    "Status",
    "WatchEvent",
    "WATCH_EVENT_KINDS",
    "format_token",
    "parse_token",
    "read_status",
    "read_watch_event",
    "read_metadata",
]

#: krabka_leadership_state_t: ACTIVE, FENCED, EXPIRED, RESIGNED, CLOSED.
LeadershipState = _abi.LeadershipState
#: krabka_kind_t: record kinds of the coordination topic.
Kind = _abi.Kind
#: krabka_watch_event_kind_t names by number (the WatchEvent.kind strings).
WATCH_EVENT_KINDS = tuple(k.name for k in sorted(_abi.WatchEventKind))


def text(raw: bytes) -> str:
    """A name read from C: UTF-8, any invalid byte kept (surrogateescape)."""
    return raw.decode("utf-8", "surrogateescape")


def call_pure(fn: Any, *args: Any) -> int:
    """Call a C function whose last two parameters are errstr and
    errstr_size, without a buffer first; on failure call again with one to
    get the reason (these calls answer the same way twice). This keeps the
    common path free of a buffer allocation."""
    code = fn(*args, None, 0)
    if code:
        buf = ctypes.create_string_buffer(ERRSTR_SIZE)
        code2 = fn(*args, buf, len(buf))
        raise error_for(code2 or code, buf)
    return 0


def read_name(struct: ctypes.Structure, field: str, length: int) -> bytes:
    """The first `length` bytes of a fixed name array inside a struct."""
    length = min(length, _abi.NAME_BUF)
    off = getattr(type(struct), field).offset
    return ctypes.string_at(ctypes.addressof(struct) + off, length)


# --------------------------------------------------------------------------
# Fencing tokens
# --------------------------------------------------------------------------


@dataclass(frozen=True, eq=True)
class FencingToken:
    """A fencing token: (producer id, producer epoch), ordered
    lexicographically (producer id first). Never compare epochs alone.

    The constructor takes the raw pair (checked only for the 64-bit and
    16-bit widths), so NO_EPOCH = (-1, -1) can be represented. Use
    `FencingToken.of(...)` (or `validate()`) to also require the
    non-negative rule of minted tokens, and `FencingToken.parse(text)` for
    the "id:epoch" text form.
    """

    __slots__ = ("producer_id", "producer_epoch", "_ct")

    producer_id: int
    producer_epoch: int

    def __post_init__(self) -> None:
        check_int(self.producer_id, "producer_id", INT64_MIN, INT64_MAX)
        check_int(self.producer_epoch, "producer_epoch", INT16_MIN, INT16_MAX)

    @classmethod
    def of(cls, producer_id: int, producer_epoch: int) -> "FencingToken":
        """Build a token from values, requiring both to be non-negative
        (DataError "negative_token" otherwise)."""
        return cls(producer_id, producer_epoch).validate()

    @classmethod
    def parse(cls, text: Union[str, bytes]) -> "FencingToken":
        """Parse "<producer_id>:<producer_epoch>" (DataError "token_form" or
        "negative_token")."""
        return parse_token(text)

    @classmethod
    def _from_c(cls, t: _abi.Token) -> "FencingToken":
        obj = object.__new__(cls)
        object.__setattr__(obj, "producer_id", t.producer_id)
        object.__setattr__(obj, "producer_epoch", t.producer_epoch)
        return obj

    def _c(self) -> _abi.Token:
        # The C value is built once per token (tokens are immutable).
        try:
            return self._ct  # type: ignore[attr-defined,no-any-return]
        except AttributeError:
            ct = _abi.Token(self.producer_id, self.producer_epoch)
            object.__setattr__(self, "_ct", ct)
            return ct

    def validate(self) -> "FencingToken":
        """Return self if both halves are non-negative, else raise DataError
        ("negative_token")."""
        call_pure(lib.krabka_token_validate, self._c())
        return self

    def compare(self, other: "FencingToken") -> int:
        """-1, 0 or 1 as self is below, equal to or above other."""
        if not isinstance(other, FencingToken):
            raise TypeError("cannot compare FencingToken with %s" % type(other).__name__)
        return int(lib.krabka_token_compare(self._c(), other._c()))

    def supersedes(self, other: "FencingToken") -> bool:
        """True if self is a newer token than other (compare == 1)."""
        if not isinstance(other, FencingToken):
            raise TypeError("supersedes() needs a FencingToken, not %s" % type(other).__name__)
        return bool(lib.krabka_token_supersedes(self._c(), other._c()))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, FencingToken):
            return NotImplemented
        return bool(lib.krabka_token_compare(self._c(), other._c()) < 0)

    def __le__(self, other: object) -> bool:
        if not isinstance(other, FencingToken):
            return NotImplemented
        return bool(lib.krabka_token_compare(self._c(), other._c()) <= 0)

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, FencingToken):
            return NotImplemented
        return bool(lib.krabka_token_compare(self._c(), other._c()) > 0)

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, FencingToken):
            return NotImplemented
        return bool(lib.krabka_token_compare(self._c(), other._c()) >= 0)

    def __reduce__(self) -> "tuple[type, tuple[int, int]]":
        return (FencingToken, (self.producer_id, self.producer_epoch))

    @property
    def is_no_epoch(self) -> bool:
        """True for NO_EPOCH, the token of a role nobody has taken."""
        return self.producer_id == -1 and self.producer_epoch == -1

    def __str__(self) -> str:
        return format_token(self)

    def __repr__(self) -> str:
        return "FencingToken(producer_id=%d, producer_epoch=%d)" % (self.producer_id, self.producer_epoch)


NO_EPOCH: FencingToken = FencingToken._from_c(lib.krabka_token_no_epoch())
"""The token of a role nobody has taken: (-1, -1). Ranks below every minted
token and equals only itself."""


def token_arg(token: object, what: str = "token") -> FencingToken:
    if not isinstance(token, FencingToken):
        raise TypeError("%s must be a FencingToken, not %s" % (what, type(token).__name__))
    return token


def format_token(token: FencingToken) -> str:
    """The text form "<producer_id>:<producer_epoch>", e.g. "4242:7"."""
    t = token_arg(token)
    buf = ctypes.create_string_buffer(_abi.TOKEN_TEXT_MAX)
    raise_for(lib.krabka_token_format(t._c(), buf, len(buf)))
    return buf.value.decode("ascii")


def parse_token(text: Union[str, bytes]) -> FencingToken:
    """Parse the text form: exactly one colon, a 64-bit id and a 16-bit
    epoch in ASCII decimal, both non-negative. Raises DataError with
    category "token_form" or "negative_token"."""
    if isinstance(text, str):
        raw = text.encode("utf-8", "surrogatepass")
    elif isinstance(text, (bytes, bytearray, memoryview)):
        raw = bytes(text)
    else:
        raise TypeError("token text must be str or bytes, not %s" % type(text).__name__)
    out = _abi.Token()
    call_pure(lib.krabka_token_parse, raw, len(raw), ctypes.byref(out))
    return FencingToken._from_c(out)


# --------------------------------------------------------------------------
# Record values
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Key:
    """A record key. A lease key (kind LEASE) has member "" (the encoder
    writes the empty member whatever `member` holds)."""

    kind: _abi.Kind
    role: str
    member: str = ""

    @classmethod
    def registration(cls, role: str, member: str) -> "Key":
        return cls(Kind.REGISTRATION, role, member)

    @classmethod
    def lease(cls, role: str) -> "Key":
        return cls(Kind.LEASE, role, "")


@dataclass(frozen=True)
class Registration:
    """A registration value. registered_at is in epoch milliseconds."""

    member: str
    registered_at: int


@dataclass(frozen=True)
class Lease:
    """A lease value. granted_at and deadline are epoch milliseconds; the
    lease is live while now < deadline."""

    member: str
    token: FencingToken
    granted_at: int
    deadline: int

    @classmethod
    def _from_c(cls, s: _abi.Lease) -> "Lease":
        return cls(text(read_name(s, "member", s.member_len)), FencingToken._from_c(s.token), s.granted_at, s.deadline)


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------


class ProduceResult(NamedTuple):
    """Where a guarded write landed; unpacks as (partition, offset)."""

    partition: int
    offset: int


@dataclass(frozen=True)
class RosterEntry:
    """One member of the succession order (rank 0 = lease holder or first
    standby)."""

    member: str
    offset: int
    registered_at: int
    rank: int
    #: the member's own metadata (the registration's krabka.meta), or None.
    #: Always None in a WatchEvent's roster (the C ABI reports it only in
    #: describe results).
    metadata: Optional[bytes] = None


@dataclass(frozen=True)
class Status:
    """The third-party check of a role (Client.describe).

    holder: the member named by the last lease, or None.
    token: the coordinator's current token for the role (NO_EPOCH if nobody
        ever took it).
    current: a lease exists and its token is `token`.
    lease: the last lease, or None.
    roster: registered members in succession order, with ranks.
    skipped: undecodable records the read skipped.
    partition: the role's partition of the coordination topic.
    removed: registrations removed by a tombstone (members that resigned,
        were pruned by a winner or left); they are not in `roster`.
    metadata: the metadata of the term the last lease belongs to
        (krabka.meta, set by acquire(metadata=...) or set_metadata), or None.
    """

    role: str
    holder: Optional[str]
    token: FencingToken
    current: bool
    lease: Optional[Lease]
    roster: Tuple[RosterEntry, ...]
    skipped: int
    partition: int
    removed: int = 0
    metadata: Optional[bytes] = None


@dataclass(frozen=True)
class WatchEvent:
    """One change of a watched role (the same fields as Go's coord.Event, C's
    krabka_watch_event_t and Node's watch events)."""

    kind: str  #: "HOLDER_CHANGED", "LEASE_RENEWED", "ROSTER_CHANGED" or "ROLE_FREE"
    role: str
    holder: Optional[str]  #: the member the current lease names (None: no lease)
    token: FencingToken  #: the current lease's token (NO_EPOCH without one)
    prev_holder: Optional[str]  #: HOLDER_CHANGED: the previous lease's member
    prev_token: FencingToken  #: HOLDER_CHANGED: the previous lease's token
    lease: Optional[Lease]
    roster: Tuple[RosterEntry, ...]  #: in succession order (metadata None)
    offset: int  #: offset of the record that caused it (-1: ROLE_FREE by the clock)
    at_ms: int  #: when this client observed it (epoch ms)
    #: the current term's metadata (krabka.meta of the lease), or None. A
    #: set_metadata by the holder arrives as LEASE_RENEWED even without
    #: renewals=True.
    metadata: Optional[bytes] = None


# --------------------------------------------------------------------------
# Readers of C objects
# --------------------------------------------------------------------------


def read_metadata(fn: Callable[[Any, int, Any], int]) -> Optional[bytes]:
    """Metadata through one of the C copy-out calls (fn(buf, size, &len)):
    None when there is none (length 0; empty metadata is none)."""
    size = _abi.MAX_METADATA_BYTES
    while True:
        buf = ctypes.create_string_buffer(size)
        n = ctypes.c_size_t()
        code = fn(buf, size, ctypes.byref(n))
        if code in (ErrorCode.INVALID_ARG, ErrorCode.BUFFER_TOO_SMALL) and n.value > size:
            size = n.value  # never with this library (the maximum always suffices)
            continue
        raise_for(code)
        return buf.raw[: n.value] if n.value else None


def _read_optional_name(fn: Callable[..., int], ptr: int) -> Optional[str]:
    has = ctypes.c_int()
    buf = ctypes.create_string_buffer(_abi.NAME_BUF)
    n = ctypes.c_size_t()
    raise_for(fn(ptr, ctypes.byref(has), buf, len(buf), ctypes.byref(n)))
    return text(buf.raw[: n.value]) if has.value else None


def _read_token(fn: Callable[..., int], ptr: int) -> FencingToken:
    tok = _abi.Token()
    raise_for(fn(ptr, ctypes.byref(tok)))
    return FencingToken._from_c(tok)


def _read_lease(fn: Callable[..., int], ptr: int) -> Optional[Lease]:
    has = ctypes.c_int()
    ls = _abi.Lease()
    raise_for(fn(ptr, ctypes.byref(has), ctypes.byref(ls)))
    return Lease._from_c(ls) if has.value else None


def _read_int(fn: Callable[..., int], ptr: int, ctype: Any = ctypes.c_int64) -> int:
    out = ctype()
    raise_for(fn(ptr, ctypes.byref(out)))
    return int(out.value)


def _roster_entry(e: _abi.RosterEntry, metadata: Optional[bytes]) -> RosterEntry:
    return RosterEntry(text(read_name(e, "member", e.member_len)), e.offset, e.registered_at, e.rank, metadata)


def read_status(st: int, role: str) -> Status:
    """A Status out of a krabka_status_t (which the caller destroys)."""
    roster = []
    for i in range(_read_int(lib.krabka_status_roster_count, st, ctypes.c_size_t)):
        e = _abi.RosterEntry()
        raise_for(lib.krabka_status_roster_entry(st, i, ctypes.byref(e)))
        meta = read_metadata(lambda b, size, n: lib.krabka_status_roster_metadata(st, i, b, size, n))
        roster.append(_roster_entry(e, meta))
    return Status(
        role=role,
        holder=_read_optional_name(lib.krabka_status_holder, st),
        token=_read_token(lib.krabka_status_token, st),
        current=bool(_read_int(lib.krabka_status_current, st, ctypes.c_int)),
        lease=_read_lease(lib.krabka_status_lease, st),
        roster=tuple(roster),
        skipped=_read_int(lib.krabka_status_skipped, st),
        partition=_read_int(lib.krabka_status_partition, st, ctypes.c_int32),
        removed=_read_int(lib.krabka_status_removed, st),
        metadata=read_metadata(lambda b, size, n: lib.krabka_status_metadata(st, b, size, n)),
    )


def watch_kind_name(kind: int) -> str:
    try:
        return _abi.WatchEventKind(kind).name
    except ValueError:  # a kind newer than this binding's header
        return "KIND_%d" % kind


def read_watch_event(ev: int) -> WatchEvent:
    """A WatchEvent out of a krabka_watch_event_t (which the caller
    destroys)."""
    role = ctypes.create_string_buffer(_abi.NAME_BUF)
    n = ctypes.c_size_t()
    raise_for(lib.krabka_watch_event_role(ev, role, len(role), ctypes.byref(n)))
    roster = []
    for i in range(_read_int(lib.krabka_watch_event_roster_count, ev, ctypes.c_size_t)):
        e = _abi.RosterEntry()
        raise_for(lib.krabka_watch_event_roster_entry(ev, i, ctypes.byref(e)))
        roster.append(_roster_entry(e, None))
    return WatchEvent(
        kind=watch_kind_name(_read_int(lib.krabka_watch_event_kind, ev, ctypes.c_int)),
        role=text(role.raw[: n.value]),
        holder=_read_optional_name(lib.krabka_watch_event_holder, ev),
        token=_read_token(lib.krabka_watch_event_token, ev),
        prev_holder=_read_optional_name(lib.krabka_watch_event_prev_holder, ev),
        prev_token=_read_token(lib.krabka_watch_event_prev_token, ev),
        lease=_read_lease(lib.krabka_watch_event_lease, ev),
        roster=tuple(roster),
        offset=_read_int(lib.krabka_watch_event_offset, ev),
        at_ms=_read_int(lib.krabka_watch_event_at, ev),
        metadata=read_metadata(lambda b, size, n: lib.krabka_watch_event_metadata(ev, b, size, n)),
    )
