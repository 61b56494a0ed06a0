"""Pipelines: input read under a leadership (Input, InputRecord) and the
offsets a guarded write carries (Offset).

A leader reads requests with ``leadership.consume(*topics)`` and commits
what it consumed in the same transaction as the commands it dispatched
(``leadership.produce_many(..., offsets=inp.position())``): a deposed
leader's offsets are refused by the broker with its writes, and the
successor's input starts exactly after the last request whose commands
were committed (docs/PIPELINES.md).
"""

from __future__ import annotations

import ctypes
from typing import Any, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from . import _abi, _calls, _dispose
from ._args import INT32_MAX, INT64_MAX, Timeout, check_int, timeout_ms
from ._errors import ClosedError, ErrorCode, KrabkaTimeoutError, raise_for
from ._native import Handle, glib, lib

__all__ = ["Input", "InputRecord", "Offset", "offsets_array", "topics_array"]

#: The most records one poll returns (the library's limit).
MAX_POLL = 1000000


class Offset(NamedTuple):
    """A position in an input partition: `offset` is the next offset to
    read (the last consumed + 1), as Kafka commits it."""

    topic: str
    partition: int
    offset: int


class InputRecord(NamedTuple):
    """One committed input record. `key`/`value` None: a null key or value;
    `headers`: (name, value) pairs in order."""

    topic: str
    partition: int
    offset: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: Tuple[Tuple[str, bytes], ...]


def _ptr_field(struct: ctypes.Structure, name: str) -> Optional[int]:
    """The raw address in a pointer field (ctypes would turn a c_char_p
    into bytes cut at the first NUL)."""
    off = getattr(type(struct), name).offset
    return ctypes.c_void_p.from_buffer(struct, off).value


def _bytes_at(addr: Optional[int], n: int) -> Optional[bytes]:
    if addr is None:
        return None
    return ctypes.string_at(addr, n) if n else b""


def topics_array(topics: Sequence[object]) -> "ctypes.Array[ctypes.c_char_p]":
    """The const char ** of consume: str names without NUL (the rules on
    length and characters are the library's)."""
    if not topics:
        raise ValueError("consume needs at least one topic")
    arr = (ctypes.c_char_p * len(topics))()
    for i, t in enumerate(topics):
        if not isinstance(t, str):
            raise TypeError("topic %d must be str, not %s" % (i, type(t).__name__))
        if "\x00" in t:
            raise ValueError("topic %d must not contain NUL, got %r" % (i, t))
        arr[i] = t.encode("utf-8", "surrogatepass")
    return arr


def offsets_array(offsets: object) -> "Optional[ctypes.Array[_abi.Offset]]":
    """The krabka_offset_t array of a guarded write's offsets: a sequence of
    Offset (or (topic, partition, offset) tuples); None: none."""
    if offsets is None:
        return None
    if not isinstance(offsets, (list, tuple)):
        raise TypeError("offsets must be a list of Offset (topic, partition, offset), not %s" % type(offsets).__name__)
    arr = (_abi.Offset * len(offsets))()
    for i, o in enumerate(offsets):
        if not isinstance(o, tuple) or len(o) != 3:
            raise TypeError("offsets[%d] must be an Offset (topic, partition, offset), not %s" % (i, type(o).__name__))
        topic, partition, offset = o
        if not isinstance(topic, str):
            raise TypeError("offsets[%d].topic must be str, not %s" % (i, type(topic).__name__))
        t = topic.encode("utf-8", "surrogatepass")
        if len(t) > _abi.NAME_MAX:
            raise ValueError("offsets[%d].topic is %d bytes, longer than %d" % (i, len(t), _abi.NAME_MAX))
        arr[i].topic_len = len(t)
        arr[i].topic = t
        arr[i].partition = check_int(partition, "offsets[%d].partition" % i, 0, INT32_MAX)
        arr[i].offset = check_int(offset, "offsets[%d].offset" % i, 0, INT64_MAX)
    return arr


def _read_offsets(call: Any) -> List[Offset]:
    count = ctypes.c_size_t()
    raise_for(call(None, 0, ctypes.byref(count)))
    n = count.value
    if n == 0:
        return []
    out = (_abi.Offset * n)()
    raise_for(call(out, n, ctypes.byref(count)))
    return [Offset(o.topic[: o.topic_len].decode("utf-8"), o.partition, o.offset) for o in out[: min(n, count.value)]]


def read_records(ptr: int) -> List[InputRecord]:
    """Copies the records of a krabka_records_t into Python objects (the
    caller destroys it)."""
    count = ctypes.c_size_t()
    raise_for(lib.krabka_records_count(ptr, ctypes.byref(count)))
    out: List[InputRecord] = []
    rec = _abi.InputRecord()
    for i in range(count.value):
        raise_for(lib.krabka_records_get(ptr, i, ctypes.byref(rec)))
        headers = []
        for j in range(rec.header_count):
            h = rec.headers[j]
            headers.append(((h.key or b"").decode("utf-8"), _bytes_at(_ptr_field(h, "value"), h.value_len) or b""))
        out.append(
            InputRecord(
                (rec.topic or b"").decode("utf-8"),
                rec.partition,
                rec.offset,
                _bytes_at(_ptr_field(rec, "key"), rec.key_len),
                _bytes_at(_ptr_field(rec, "value"), rec.value_len),
                tuple(headers),
            )
        )
    return out


def _read_poll(ev: int) -> List[InputRecord]:
    recs = _calls.take(ev, glib.krabka_event_take_records, "krabka_input_poll_async")
    try:
        return read_records(recs)
    finally:
        lib.krabka_records_destroy(recs)


class Input:
    """Input partitions read ``read_committed`` under a leadership, from the
    offsets committed for the role's pipeline group (Leadership.consume).

    ``poll()`` returns the next records (in offset order per partition);
    ``position()`` the next offset to read per partition: pass it (or the
    entries of the partitions handled) as the ``offsets`` of the guarded
    write that dispatches their commands. Iterating yields records one by
    one until the leadership ends (its error is raised). Use it as a
    context manager (``with lead.consume("requests") as inp:``); close()
    is idempotent. Polls of one Input must not overlap."""

    def __init__(self, ptr: int, leadership: object) -> None:
        self._h = Handle(ptr, lib.krabka_input_destroy)
        self._leadership = leadership  # keeps the leadership (and client) alive

    def _ptr(self) -> int:
        p = self._h.get()
        if p is None:
            raise ClosedError(ErrorCode.CLOSED, "this Input was closed")
        return p

    def _poll_start(self, max: object, timeout: Timeout) -> _calls.Start:
        n = check_int(max, "max", 1, MAX_POLL)
        ms = timeout_ms(timeout)
        ptr = self._ptr()
        return lambda q, tag, buf: glib.krabka_input_poll_async(ptr, n, ms, q, tag, buf, len(buf))

    def poll(self, max: int = 500, timeout: Timeout = None) -> List[InputRecord]:
        """Up to `max` records: blocks until at least one committed record
        arrives, or `timeout` seconds pass (default request.timeout.ms;
        then []). Raises the leadership's end (FencedError,
        LeaseExpiredError, NotLeaderError, ClosedError) once it ended.
        TypeError unless `max` is an int (1 to 1000000)."""
        try:
            return _calls.run(self._poll_start(max, timeout), _read_poll, _dispose.event)
        except KrabkaTimeoutError:
            return []

    async def poll_async(self, max: int = 500, timeout: Timeout = None) -> List[InputRecord]:
        """poll() as a coroutine, completed through the loop's queue."""
        try:
            return await _calls.run_async(self._poll_start(max, timeout), _read_poll, _dispose.event)
        except KrabkaTimeoutError:
            return []

    def __iter__(self) -> Iterator[InputRecord]:
        while True:
            for rec in self.poll():
                yield rec

    def position(self) -> List[Offset]:
        """Where the input reads next, one Offset per partition read. Never
        blocks."""
        ptr = self._ptr()
        return _read_offsets(lambda out, cap, n: lib.krabka_input_position(ptr, out, cap, n))

    def committed(self) -> List[Offset]:
        """The offsets committed for the role's pipeline group when the
        input started (where it started reading). Never blocks."""
        ptr = self._ptr()
        return _read_offsets(lambda out, cap, n: lib.krabka_input_committed(ptr, out, cap, n))

    def close(self) -> None:
        """Stops reading (a poll in flight raises ClosedError). Idempotent."""
        self._h.release()

    def __enter__(self) -> "Input":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.close()

    async def __aenter__(self) -> "Input":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._h.release()
        except Exception:
            pass
