"""Watching a role: client.watch(role) -> Watch, iterated with `for` or
`async for`. Each next event is one krabka_watch_next_async through the call
runner (_calls); the event's data is copied into a WatchEvent (_values)."""

from __future__ import annotations

import ctypes
from typing import Any, AsyncIterator, Iterator, Optional

from . import _calls, _dispose
from ._args import Timeout, timeout_ms
from ._errors import ClosedError, ErrorCode, KrabkaError, raise_for
from ._native import Handle, glib, lib
from ._values import WATCH_EVENT_KINDS, WatchEvent, read_watch_event

__all__ = ["Watch", "WatchEvent", "WATCH_EVENT_KINDS", "watch_of"]


def _read_next(ev: int) -> WatchEvent:
    we = _calls.take(ev, glib.krabka_event_take_watch_event, "krabka_watch_next_async")
    try:
        return read_watch_event(we)
    finally:
        lib.krabka_watch_event_destroy(we)


class Watch:
    """A subscription to the changes of one role (Client.watch). It holds no
    epoch and registers nothing. Iterate it::

        for ev in client.watch("controller"):      # blocks between events
            print(ev.kind, ev.holder, ev.token)

        async for ev in client.watch("controller"): # no thread while waiting
            ...

    The iteration ends when the watch is closed (close(), or its client's).
    Use it as a context manager to close it. A next() abandoned by Ctrl-C
    or a cancelled task takes the event it was waiting for with it (that
    event is dropped): the watch goes on with the one after it."""

    def __init__(self, ptr: int, role: str) -> None:
        self._h = Handle(ptr, lib.krabka_watch_destroy)
        self.role = role

    def _ptr(self) -> int:
        p = self._h.get()
        if p is None:
            raise ClosedError(ErrorCode.CLOSED, "this Watch was closed")
        return p

    def _next_start(self, ms: int) -> _calls.Start:
        ptr = self._ptr()
        return lambda q, tag, _buf: glib.krabka_watch_next_async(ptr, ms, q, tag)

    def next(self, timeout: Timeout = None) -> Optional[WatchEvent]:
        """The next event; None when `timeout` seconds passed first (None:
        wait as long as it takes). Raises ClosedError once the watch ended
        and every event was taken. Interruptible (Ctrl-C)."""
        try:
            return _calls.run(self._next_start(timeout_ms(timeout)), _read_next, _dispose.event)
        except KrabkaError as exc:
            if exc.code == ErrorCode.TIMEOUT:
                return None
            raise

    def __iter__(self) -> Iterator[WatchEvent]:
        return self

    def __next__(self) -> WatchEvent:
        if self._h.get() is None:
            raise StopIteration
        try:
            return _calls.run(self._next_start(0), _read_next, _dispose.event)
        except KrabkaError as exc:
            if exc.code in (ErrorCode.CLOSED, ErrorCode.INVALID_HANDLE):
                raise StopIteration from None
            raise

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self

    async def __anext__(self) -> WatchEvent:
        """The next event, completed through the loop's queue."""
        if self._h.get() is None:
            raise StopAsyncIteration
        try:
            return await _calls.run_async(self._next_start(0), _read_next, _dispose.event)
        except KrabkaError as exc:
            if exc.code in (ErrorCode.CLOSED, ErrorCode.INVALID_HANDLE):
                raise StopAsyncIteration from None
            raise

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


def watch_of(role: str) -> "_calls.Read[Watch]":
    """The reader of a WATCH_OPEN event: the Watch it carries."""

    def read(ev: int) -> Watch:
        out = ctypes.c_void_p()
        buf = _calls.errbuf()
        raise_for(glib.krabka_event_take_watch(ev, ctypes.byref(out), buf, len(buf)), buf)
        if not out.value:
            raise KrabkaError(ErrorCode.INTERNAL, "krabka_client_watch_async succeeded without a watch")
        try:
            return Watch(out.value, role)
        except BaseException:
            lib.krabka_watch_destroy(out.value)
            raise

    return read
