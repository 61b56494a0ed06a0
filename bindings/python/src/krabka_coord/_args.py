"""Argument checks done in Python before anything reaches C: types, integer
widths and timeouts. Rules of the contract (name lengths, UTF-8, token signs)
are left to the library."""

from __future__ import annotations

import datetime
import math
from typing import List, Mapping, Optional, Sequence, Tuple, Union

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT16_MIN, INT16_MAX = -(2**15), 2**15 - 1

Name = Union[str, bytes, bytearray, memoryview]
Timeout = Union[int, float, datetime.timedelta, None]
Bytes = Union[bytes, bytearray, memoryview]
#: Record headers of a guarded write: a mapping of names to values, or a
#: sequence of (name, value) pairs (which may repeat a name).
Headers = Union[Mapping[str, Bytes], Sequence[Tuple[str, Bytes]], None]


def name_bytes(value: object, what: str) -> bytes:
    """A role or member id as bytes: str is encoded as UTF-8 (a lone
    surrogate is passed through so the library reports invalid_utf8); bytes
    are taken as they are."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError("%s must be str or bytes, not %s" % (what, type(value).__name__))


def data_bytes(value: object, what: str, allow_none: bool = False) -> Optional[bytes]:
    if value is None:
        if allow_none:
            return None
        raise TypeError("%s must be bytes, not None" % what)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError("%s must be bytes-like, not %s" % (what, type(value).__name__))


def metadata_bytes(value: object, what: str) -> Optional[bytes]:
    """Metadata of a term or a member: bytes-like or None (none). str is
    refused: metadata is opaque bytes (encode it yourself). The size limit
    (MAX_METADATA_BYTES) is the library's rule, checked there."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError("%s must be bytes or None, not %s" % (what, type(value).__name__))


def header_pairs(headers: object, what: str = "headers") -> List[Tuple[bytes, bytes]]:
    """Record headers as (UTF-8 name, value) pairs, in order. Names must be
    str without NUL, values bytes-like; the reserved "krabka." names are the
    library's rule (INVALID_ARG there)."""
    if headers is None:
        return []
    if isinstance(headers, Mapping):
        items: Sequence[object] = list(headers.items())
    elif isinstance(headers, (list, tuple)):
        items = headers
    else:
        raise TypeError(
            "%s must be a dict of str to bytes or a sequence of (str, bytes) pairs, not %s"
            % (what, type(headers).__name__)
        )
    out: List[Tuple[bytes, bytes]] = []
    for i, item in enumerate(items):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise TypeError("%s[%d] must be a (name, value) pair, not %r" % (what, i, item))
        name, value = item
        if not isinstance(name, str):
            raise TypeError("%s[%d]: the header name must be str, not %s" % (what, i, type(name).__name__))
        if "\x00" in name:
            raise ValueError("%s[%d]: the header name %r contains NUL" % (what, i, name))
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(
                "%s[%d]: the value of header %r must be bytes, not %s" % (what, i, name, type(value).__name__)
            )
        out.append((name.encode("utf-8"), bytes(value)))
    return out


def payload_bytes(value: object, what: str) -> Optional[bytes]:
    """A message key or value: bytes, str (UTF-8) or None (a null key/value)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError("%s must be bytes, str or None, not %s" % (what, type(value).__name__))


def check_int(value: object, what: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be int, not %s" % (what, type(value).__name__))
    if not lo <= value <= hi:
        raise ValueError("%s=%d is outside [%d, %d]" % (what, value, lo, hi))
    return int(value)


def timeout_ms(timeout: Timeout, what: str = "timeout") -> int:
    """Seconds (int, float or timedelta) to milliseconds for the C API.
    None gives KRABKA_TIMEOUT_DEFAULT (0). The value must be positive; it is
    rounded up to whole milliseconds."""
    if timeout is None:
        return 0
    if isinstance(timeout, datetime.timedelta):
        seconds = timeout.total_seconds()
    elif isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError("%s must be a number of seconds, a timedelta or None, not %s" % (what, type(timeout).__name__))
    else:
        seconds = float(timeout)
    if math.isnan(seconds) or seconds <= 0:
        raise ValueError("%s must be positive (or None for the default), got %r" % (what, timeout))
    if math.isinf(seconds):
        raise ValueError("%s must be finite; pass None for the default" % what)
    ms = math.ceil(seconds * 1000)
    return min(ms, INT64_MAX)
