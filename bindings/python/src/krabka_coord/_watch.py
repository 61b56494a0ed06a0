"""Watching a role: client.watch(role) -> Watch, iterated with `for` or
`async for`."""

from __future__ import annotations

import ctypes
import dataclasses
import threading
from dataclasses import dataclass
from typing import Any, AsyncIterator, Iterator, Optional, Tuple

from . import _events, _native
from ._errors import ErrorCode, KrabkaError, raise_for
from ._native import WatchEventStruct, lib, read_name
from ._pure import FencingToken, Lease

__all__ = ["Watch", "WatchEvent", "WATCH_EVENT_KINDS"]

#: krabka_watch_event_kind_t by number.
WATCH_EVENT_KINDS = ("HOLDER_CHANGED", "LEASE_RENEWED", "ROSTER_CHANGED", "ROLE_FREE")

# Poll slice of a blocking iteration, so that Ctrl-C and close() are seen.
_SLICE_MS = 500


def _name(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


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
    roster: Tuple[Any, ...]  #: RosterEntry values, in succession order
    offset: int  #: offset of the record that caused it (-1: ROLE_FREE by the clock)
    at_ms: int  #: when this client observed it (epoch ms)
    #: the current term's metadata (krabka.meta of the lease), or None. A
    #: set_metadata by the holder arrives as LEASE_RENEWED even without
    #: renewals=True.
    metadata: Optional[bytes] = None


def read_event(ev: WatchEventStruct) -> WatchEvent:
    from ._client import RosterEntry

    roster = tuple(
        RosterEntry(_name(read_name(r, "member", r.member_len)), r.offset, r.registered_at, r.rank)
        for r in (ev.roster[i] for i in range(ev.roster_count))
    )
    return WatchEvent(
        kind=WATCH_EVENT_KINDS[ev.kind] if 0 <= ev.kind < len(WATCH_EVENT_KINDS) else "UNKNOWN(%d)" % ev.kind,
        role=_name(read_name(ev, "role", ev.role_len)),
        holder=_name(read_name(ev, "holder", ev.holder_len)) if ev.has_holder else None,
        token=FencingToken._from_c(ev.token),
        prev_holder=_name(read_name(ev, "prev_holder", ev.prev_holder_len)) if ev.has_prev_holder else None,
        prev_token=FencingToken._from_c(ev.prev_token),
        lease=Lease._from_c(ev.lease) if ev.has_lease else None,
        roster=roster,
        offset=ev.offset,
        at_ms=ev.at_ms,
    )


def _metadata_of(watch_ptr: int) -> Optional[bytes]:
    """krabka_watch_metadata: the term's metadata of the event the watch
    last handed out."""
    if "krabka_watch_metadata" in _native.MISSING:
        return None
    from ._client import _read_metadata

    return _read_metadata(lambda b, size, n: lib.krabka_watch_metadata(watch_ptr, b, size, n))


def _read_ptr(p: int) -> WatchEvent:
    return read_event(ctypes.cast(p, ctypes.POINTER(WatchEventStruct)).contents)


_events.watch_reader = _read_ptr


class Watch:
    """A subscription to the changes of one role (Client.watch). It holds no
    epoch and registers nothing. Iterate it::

        for ev in client.watch("controller"):      # blocks between events
            print(ev.kind, ev.holder, ev.token)

        async for ev in client.watch("controller"): # no thread while waiting
            ...

    The iteration ends when the watch is closed (close(), or its client's).
    Use it as a context manager to close it."""

    def __init__(self, ptr: int, role: str) -> None:
        from ._client import _Handle

        self._h = _Handle(ptr, lib.krabka_watch_destroy)
        self.role = role
        # krabka_watch_next and krabka_watch_metadata (the metadata of the
        # event last taken) as one step when threads share the watch.
        self._take = threading.Lock()

    def _ptr(self) -> int:
        _native.check_fork()
        p = self._h.get()
        if p is None:
            raise KrabkaError(ErrorCode.CLOSED, "this Watch was closed")
        return p

    def next(self, timeout: Optional[float] = None) -> Optional[WatchEvent]:
        """The next event; None when `timeout` seconds passed first (None:
        wait as long as it takes). Raises ClosedError once the watch ended and
        every event was taken. The GIL is released while it waits."""
        from ._args import timeout_ms

        ms = timeout_ms(timeout)
        out = WatchEventStruct()
        buf = ctypes.create_string_buffer(_native.ERRSTR_SIZE)
        ptr = self._ptr()
        with self._take:
            code = lib.krabka_watch_next(ptr, ms, ctypes.byref(out), buf, len(buf))
            if code == ErrorCode.TIMEOUT:
                return None
            raise_for(code, buf)
            return dataclasses.replace(read_event(out), metadata=_metadata_of(ptr))

    def __iter__(self) -> Iterator[WatchEvent]:
        return self

    def __next__(self) -> WatchEvent:
        while True:
            if self._h.get() is None:
                raise StopIteration
            out = WatchEventStruct()
            buf = ctypes.create_string_buffer(_native.ERRSTR_SIZE)
            ptr = self._ptr()
            with self._take:
                code = lib.krabka_watch_next(ptr, _SLICE_MS, ctypes.byref(out), buf, len(buf))
                if code == ErrorCode.TIMEOUT:
                    continue
                if code in (ErrorCode.CLOSED, ErrorCode.INVALID_HANDLE):
                    raise StopIteration
                raise_for(code, buf)
                return dataclasses.replace(read_event(out), metadata=_metadata_of(ptr))

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self

    async def __anext__(self) -> WatchEvent:
        """The next event without a thread: the library waits and completes
        through the event loop's queue fd."""
        q = _events.loop_queue()
        ptr = self._ptr()

        def convert(c: _events.Completion) -> Optional[WatchEvent]:
            # Run by the loop's drain as soon as the event was taken from the
            # queue: the watch's metadata is still that of this event (the
            # next one is asked for only after this await resumes).
            ev: Optional[WatchEvent] = c.watch_event
            if ev is None:
                return None
            try:
                meta = _metadata_of(ptr)
            except KrabkaError:
                if self._h.get() is not None:
                    raise
                meta = None  # closed meanwhile: the event is still delivered
            return dataclasses.replace(ev, metadata=meta)

        tag, fut = _events.future_for(q, convert, raise_errors=False)
        try:
            raise_for(lib.krabka_watch_next_async(ptr, 0, q.ptr, tag))
        except KrabkaError as exc:
            q.forget(tag)
            if exc.code in (ErrorCode.CLOSED, ErrorCode.INVALID_HANDLE):
                raise StopAsyncIteration from None
            raise
        ev = await fut
        if ev is None:  # the watch ended
            raise StopAsyncIteration
        return ev  # type: ignore[no-any-return]

    def fileno(self) -> int:
        """An eventfd readable exactly while events wait (for selectors).
        Owned by the watch: never close it yourself."""
        fd = ctypes.c_int()
        raise_for(lib.krabka_watch_event_fd(self._ptr(), ctypes.byref(fd)))
        return fd.value

    def close(self) -> None:
        """End the watch (idempotent); iterations end."""
        self._h.release()

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._h.release()
        except Exception:
            pass
