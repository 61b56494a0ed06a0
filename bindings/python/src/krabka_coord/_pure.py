"""The pure functions of the C API: fencing tokens, names, murmur2, role
partitions and the frozen record format. None of these blocks."""

from __future__ import annotations

import ctypes
import enum
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from . import _native
from ._args import Name, check_int, data_bytes, name_bytes
from ._errors import error_for, raise_for
from ._native import (
    INT16_MAX,
    INT16_MIN,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    NAME_BUF,
    KeyStruct,
    LeaseStruct,
    RegistrationStruct,
    Token,
    lib,
    read_name,
    write_name,
)

__all__ = [
    "FencingToken",
    "NO_EPOCH",
    "Kind",
    "Key",
    "Registration",
    "Lease",
    "parse_token",
    "format_token",
    "validate_token",
    "token_compare",
    "validate_role",
    "validate_member",
    "murmur2",
    "role_partition",
    "is_tombstone",
    "encode_key",
    "decode_key",
    "encode_registration",
    "decode_registration",
    "encode_lease",
    "decode_lease",
]

_check = _native.check_fork


def _call_pure(fn: Any, *args: Any) -> int:
    """Call a pure C function whose last two parameters are errstr and
    errstr_size, without a buffer first; on failure call again with one to
    get the reason (pure calls answer the same way twice). This keeps the
    common path free of a buffer allocation."""
    code = fn(*args, None, 0)
    if code:
        buf = ctypes.create_string_buffer(_native.ERRSTR_SIZE)
        code2 = fn(*args, buf, len(buf))
        raise error_for(code2 or code, buf)
    return 0


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


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

    # -- construction ----------------------------------------------------
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
    def _from_c(cls, t: Token) -> "FencingToken":
        obj = object.__new__(cls)
        object.__setattr__(obj, "producer_id", t.producer_id)
        object.__setattr__(obj, "producer_epoch", t.producer_epoch)
        return obj

    def _c(self) -> Token:
        # The C value is built once per token (tokens are immutable).
        try:
            return self._ct  # type: ignore[attr-defined,no-any-return]
        except AttributeError:
            ct = Token(self.producer_id, self.producer_epoch)
            object.__setattr__(self, "_ct", ct)
            return ct

    # -- rules (all in the library) --------------------------------------
    def validate(self) -> "FencingToken":
        """Return self if both halves are non-negative, else raise DataError
        ("negative_token")."""
        _check()
        _call_pure(lib.krabka_token_validate, self._c())
        return self

    def compare(self, other: "FencingToken") -> int:
        """-1, 0 or 1 as self is below, equal to or above other."""
        if not isinstance(other, FencingToken):
            raise TypeError("cannot compare FencingToken with %s" % type(other).__name__)
        _check()
        return int(lib.krabka_token_compare(self._c(), other._c()))

    def supersedes(self, other: "FencingToken") -> bool:
        """True if self is a newer token than other (compare == 1)."""
        if not isinstance(other, FencingToken):
            raise TypeError("supersedes() needs a FencingToken, not %s" % type(other).__name__)
        _check()
        return bool(lib.krabka_token_supersedes(self._c(), other._c()))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, FencingToken):
            return NotImplemented
        _check()
        return bool(lib.krabka_token_compare(self._c(), other._c()) < 0)

    def __le__(self, other: object) -> bool:
        if not isinstance(other, FencingToken):
            return NotImplemented
        _check()
        return bool(lib.krabka_token_compare(self._c(), other._c()) <= 0)

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, FencingToken):
            return NotImplemented
        _check()
        return bool(lib.krabka_token_compare(self._c(), other._c()) > 0)

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, FencingToken):
            return NotImplemented
        _check()
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


def _no_epoch() -> FencingToken:
    return FencingToken._from_c(lib.krabka_token_no_epoch())


NO_EPOCH: FencingToken = _no_epoch()
"""The token of a role nobody has taken: (-1, -1). Ranks below every minted
token and equals only itself."""


def _token_arg(token: object, what: str = "token") -> FencingToken:
    if not isinstance(token, FencingToken):
        raise TypeError("%s must be a FencingToken, not %s" % (what, type(token).__name__))
    return token


def format_token(token: FencingToken) -> str:
    """The text form "<producer_id>:<producer_epoch>", e.g. "4242:7"."""
    t = _token_arg(token)
    _check()
    buf = ctypes.create_string_buffer(_native.TOKEN_TEXT_MAX)
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
    _check()
    out = Token()
    _call_pure(lib.krabka_token_parse, raw, len(raw), ctypes.byref(out))
    return FencingToken._from_c(out)


def validate_token(token: FencingToken) -> FencingToken:
    """Return the token if both halves are non-negative, else DataError
    ("negative_token")."""
    return _token_arg(token).validate()


def token_compare(a: FencingToken, b: FencingToken) -> int:
    """-1, 0 or 1 as a is below, equal to or above b."""
    return _token_arg(a, "a").compare(_token_arg(b, "b"))


# --------------------------------------------------------------------------
# Names, hashing, partitions
# --------------------------------------------------------------------------


def validate_role(role: Name) -> str:
    """Check a role name (non-empty, valid UTF-8, at most 249 bytes) and
    return it as str. Raises DataError ("empty_role", "role_too_long",
    "invalid_utf8"), a ValueError. bytes are checked byte for byte."""
    raw = name_bytes(role, "role")
    _check()
    _call_pure(lib.krabka_role_validate, raw, len(raw))
    return _text(raw)


def validate_member(member: Name) -> str:
    """Check a member id (same rules as a role; categories "empty_member",
    "member_too_long", "invalid_utf8") and return it as str."""
    raw = name_bytes(member, "member")
    _check()
    _call_pure(lib.krabka_member_validate, raw, len(raw))
    return _text(raw)


def murmur2(data: Union[bytes, bytearray, memoryview, str]) -> int:
    """Kafka's murmur2 hash (a signed 32-bit int). str is hashed as UTF-8."""
    if isinstance(data, str):
        raw = data.encode("utf-8", "surrogatepass")
    else:
        raw = data_bytes(data, "data")  # type: ignore[assignment]
    _check()
    return int(lib.krabka_murmur2(raw, len(raw)))


def role_partition(role: Name, partitions: int) -> int:
    """The coordination partition of a role among `partitions`:
    (murmur2(role) & 0x7fffffff) % partitions. DataError
    "invalid_partition_count" when partitions < 1."""
    raw = name_bytes(role, "role")
    n = check_int(partitions, "partitions", INT32_MIN, INT32_MAX)
    _check()
    out = ctypes.c_int32()
    _call_pure(lib.krabka_role_partition, raw, len(raw), n, ctypes.byref(out))
    return out.value


def is_tombstone(value: Optional[Union[bytes, bytearray, memoryview]]) -> bool:
    """True if a record value read from the log is a tombstone (None or
    empty)."""
    raw = data_bytes(value, "value", allow_none=True)
    _check()
    return bool(lib.krabka_value_is_tombstone(raw, 0 if raw is None else len(raw)))


# --------------------------------------------------------------------------
# Record format
# --------------------------------------------------------------------------


class Kind(enum.IntEnum):
    """Record kinds of the coordination topic."""

    REGISTRATION = 0
    LEASE = 1


@dataclass(frozen=True)
class Key:
    """A record key. A lease key (kind LEASE) has member "" (the encoder
    writes the empty member whatever `member` holds)."""

    kind: Kind
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
    def _from_c(cls, s: LeaseStruct) -> "Lease":
        return cls(
            _text(read_name(s, "member", s.member_len)),
            FencingToken._from_c(s.token),
            s.granted_at,
            s.deadline,
        )


def _fill_name(struct: ctypes.Structure, field: str, len_field: str, value: object, what: str, validate: Callable[[bytes], None]) -> None:
    raw = name_bytes(value, what)
    if len(raw) >= NAME_BUF:
        # Cannot be copied into the fixed C buffer; let the library state
        # the rule that it breaks (role_too_long / member_too_long).
        validate(raw)
        raise ValueError("%s of %d bytes is too long" % (what, len(raw)))
    write_name(struct, field, raw)
    setattr(struct, len_field, len(raw))


def _validate_role_bytes(raw: bytes) -> None:
    _call_pure(lib.krabka_role_validate, raw, len(raw))


def _validate_member_bytes(raw: bytes) -> None:
    _call_pure(lib.krabka_member_validate, raw, len(raw))


def _encode(fn: Any, struct: ctypes.Structure) -> bytes:
    _check()
    out_len = ctypes.c_size_t()
    buf = ctypes.create_string_buffer(128 + 2 * NAME_BUF)
    errbuf = ctypes.create_string_buffer(_native.ERRSTR_SIZE)
    code = fn(ctypes.byref(struct), buf, len(buf), ctypes.byref(out_len), errbuf, len(errbuf))
    if code == 3:  # BUFFER_TOO_SMALL: never for valid names, but follow the contract
        buf = ctypes.create_string_buffer(out_len.value)
        code = fn(ctypes.byref(struct), buf, len(buf), ctypes.byref(out_len), errbuf, len(errbuf))
    raise_for(code, errbuf)
    return buf.raw[: out_len.value]


def encode_key(key: Key) -> bytes:
    """Encode a record key (version 0)."""
    if not isinstance(key, Key):
        raise TypeError("key must be a Key, not %s" % type(key).__name__)
    s = KeyStruct()
    s.kind = check_int(int(key.kind) if isinstance(key.kind, Kind) else key.kind, "kind", INT32_MIN, INT32_MAX)
    _fill_name(s, "role", "role_len", key.role, "role", _validate_role_bytes)
    if key.kind == Kind.LEASE:
        s.member_len = 0
    else:
        _fill_name(s, "member", "member_len", key.member, "member", _validate_member_bytes)
    return _encode(lib.krabka_key_encode, s)


def encode_registration(value: Registration) -> bytes:
    """Encode a registration value (version 0)."""
    if not isinstance(value, Registration):
        raise TypeError("value must be a Registration, not %s" % type(value).__name__)
    s = RegistrationStruct()
    _fill_name(s, "member", "member_len", value.member, "member", _validate_member_bytes)
    s.registered_at = check_int(value.registered_at, "registered_at", INT64_MIN, INT64_MAX)
    return _encode(lib.krabka_registration_encode, s)


def _lease_struct(value: Lease) -> LeaseStruct:
    s = LeaseStruct()
    _fill_name(s, "member", "member_len", value.member, "member", _validate_member_bytes)
    s.token = _token_arg(value.token, "lease token")._c()
    s.granted_at = check_int(value.granted_at, "granted_at", INT64_MIN, INT64_MAX)
    s.deadline = check_int(value.deadline, "deadline", INT64_MIN, INT64_MAX)
    return s


def encode_lease(value: Lease) -> bytes:
    """Encode a lease value (version 0)."""
    if not isinstance(value, Lease):
        raise TypeError("value must be a Lease, not %s" % type(value).__name__)
    return _encode(lib.krabka_lease_encode, _lease_struct(value))


def _decode(fn: Any, data: object, struct: ctypes.Structure) -> None:
    raw = data_bytes(data, "data")
    _check()
    assert raw is not None
    _call_pure(fn, raw, len(raw), ctypes.byref(struct))


def decode_key(data: Union[bytes, bytearray, memoryview]) -> Key:
    """Decode a record key; DataError with the category on failure."""
    s = KeyStruct()
    _decode(lib.krabka_key_decode, data, s)
    return Key(
        Kind(s.kind),
        _text(read_name(s, "role", s.role_len)),
        _text(read_name(s, "member", s.member_len)),
    )


def decode_registration(data: Union[bytes, bytearray, memoryview]) -> Registration:
    """Decode a registration value (not a tombstone: check is_tombstone
    first); DataError with the category on failure."""
    s = RegistrationStruct()
    _decode(lib.krabka_registration_decode, data, s)
    return Registration(_text(read_name(s, "member", s.member_len)), s.registered_at)


def decode_lease(data: Union[bytes, bytearray, memoryview]) -> Lease:
    """Decode a lease value (not a tombstone: check is_tombstone first);
    DataError with the category on failure."""
    s = LeaseStruct()
    _decode(lib.krabka_lease_decode, data, s)
    return Lease._from_c(s)
