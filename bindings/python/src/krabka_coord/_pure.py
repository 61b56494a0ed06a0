"""The pure functions of the C API: fencing tokens, names, murmur2, role
partitions and the frozen record format. None of these blocks. The value
types (FencingToken, Key, Registration, Lease) live in _values."""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Optional, Union

from . import _abi
from ._args import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, Name, check_int, data_bytes, name_bytes
from ._errors import ErrorCode, raise_for
from ._native import ERRSTR_SIZE, lib
from ._values import (
    NO_EPOCH,
    FencingToken,
    Key,
    Kind,
    Lease,
    Registration,
    call_pure,
    format_token,
    parse_token,
    read_name,
    text,
    token_arg,
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


def validate_token(token: FencingToken) -> FencingToken:
    """Return the token if both halves are non-negative, else DataError
    ("negative_token")."""
    return token_arg(token).validate()


def token_compare(a: FencingToken, b: FencingToken) -> int:
    """-1, 0 or 1 as a is below, equal to or above b."""
    return token_arg(a, "a").compare(token_arg(b, "b"))


# --------------------------------------------------------------------------
# Names, hashing, partitions
# --------------------------------------------------------------------------


def validate_role(role: Name) -> str:
    """Check a role name (non-empty, valid UTF-8, at most 249 bytes) and
    return it as str. Raises DataError ("empty_role", "role_too_long",
    "invalid_utf8"), a ValueError. bytes are checked byte for byte."""
    raw = name_bytes(role, "role")
    call_pure(lib.krabka_role_validate, raw, len(raw))
    return text(raw)


def validate_member(member: Name) -> str:
    """Check a member id (same rules as a role; categories "empty_member",
    "member_too_long", "invalid_utf8") and return it as str."""
    raw = name_bytes(member, "member")
    call_pure(lib.krabka_member_validate, raw, len(raw))
    return text(raw)


def murmur2(data: Union[bytes, bytearray, memoryview, str]) -> int:
    """Kafka's murmur2 hash (a signed 32-bit int). str is hashed as UTF-8."""
    if isinstance(data, str):
        raw = data.encode("utf-8", "surrogatepass")
    else:
        raw = data_bytes(data, "data")  # type: ignore[assignment]
    return int(lib.krabka_murmur2(raw, len(raw)))


def role_partition(role: Name, partitions: int) -> int:
    """The coordination partition of a role among `partitions`:
    (murmur2(role) & 0x7fffffff) % partitions. DataError
    "invalid_partition_count" when partitions < 1."""
    raw = name_bytes(role, "role")
    n = check_int(partitions, "partitions", INT32_MIN, INT32_MAX)
    out = ctypes.c_int32()
    call_pure(lib.krabka_role_partition, raw, len(raw), n, ctypes.byref(out))
    return out.value


def is_tombstone(value: Optional[Union[bytes, bytearray, memoryview]]) -> bool:
    """True if a record value read from the log is a tombstone (None or
    empty)."""
    raw = data_bytes(value, "value", allow_none=True)
    return bool(lib.krabka_value_is_tombstone(raw, 0 if raw is None else len(raw)))


# --------------------------------------------------------------------------
# Record format
# --------------------------------------------------------------------------


def write_name(struct: ctypes.Structure, field: str, data: bytes) -> None:
    """Copy `data` and a NUL into a fixed name array (caller checked the size)."""
    off = getattr(type(struct), field).offset
    base = ctypes.addressof(struct) + off
    ctypes.memmove(base, data, len(data))
    ctypes.memset(base + len(data), 0, 1)


def _fill_name(struct: ctypes.Structure, field: str, len_field: str, value: object, what: str, validate: Callable[[bytes], None]) -> None:
    raw = name_bytes(value, what)
    if len(raw) >= _abi.NAME_BUF:
        # Cannot be copied into the fixed C buffer; let the library state
        # the rule that it breaks (role_too_long / member_too_long).
        validate(raw)
        raise ValueError("%s of %d bytes is too long" % (what, len(raw)))
    write_name(struct, field, raw)
    setattr(struct, len_field, len(raw))


def _validate_role_bytes(raw: bytes) -> None:
    call_pure(lib.krabka_role_validate, raw, len(raw))


def _validate_member_bytes(raw: bytes) -> None:
    call_pure(lib.krabka_member_validate, raw, len(raw))


def _encode(fn: Any, struct: ctypes.Structure) -> bytes:
    out_len = ctypes.c_size_t()
    buf = ctypes.create_string_buffer(128 + 2 * _abi.NAME_BUF)
    errbuf = ctypes.create_string_buffer(ERRSTR_SIZE)
    code = fn(ctypes.byref(struct), buf, len(buf), ctypes.byref(out_len), errbuf, len(errbuf))
    if code == ErrorCode.BUFFER_TOO_SMALL:  # never for valid names, but follow the contract
        buf = ctypes.create_string_buffer(out_len.value)
        code = fn(ctypes.byref(struct), buf, len(buf), ctypes.byref(out_len), errbuf, len(errbuf))
    raise_for(code, errbuf)
    return buf.raw[: out_len.value]


def encode_key(key: Key) -> bytes:
    """Encode a record key (version 0)."""
    if not isinstance(key, Key):
        raise TypeError("key must be a Key, not %s" % type(key).__name__)
    s = _abi.Key()
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
    s = _abi.Registration()
    _fill_name(s, "member", "member_len", value.member, "member", _validate_member_bytes)
    s.registered_at = check_int(value.registered_at, "registered_at", INT64_MIN, INT64_MAX)
    return _encode(lib.krabka_registration_encode, s)


def _lease_struct(value: Lease) -> _abi.Lease:
    s = _abi.Lease()
    _fill_name(s, "member", "member_len", value.member, "member", _validate_member_bytes)
    s.token = token_arg(value.token, "lease token")._c()
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
    assert raw is not None
    call_pure(fn, raw, len(raw), ctypes.byref(struct))


def decode_key(data: Union[bytes, bytearray, memoryview]) -> Key:
    """Decode a record key; DataError with the category on failure."""
    s = _abi.Key()
    _decode(lib.krabka_key_decode, data, s)
    return Key(
        Kind(s.kind),
        text(read_name(s, "role", s.role_len)),
        text(read_name(s, "member", s.member_len)),
    )


def decode_registration(data: Union[bytes, bytearray, memoryview]) -> Registration:
    """Decode a registration value (not a tombstone: check is_tombstone
    first); DataError with the category on failure."""
    s = _abi.Registration()
    _decode(lib.krabka_registration_decode, data, s)
    return Registration(text(read_name(s, "member", s.member_len)), s.registered_at)


def decode_lease(data: Union[bytes, bytearray, memoryview]) -> Lease:
    """Decode a lease value (not a tombstone: check is_tombstone first);
    DataError with the category on failure."""
    s = _abi.Lease()
    _decode(lib.krabka_lease_decode, data, s)
    return Lease._from_c(s)
