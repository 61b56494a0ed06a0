"""The completion path of the asyncio forms, and the log bridge.

asyncio: one krabka_queue_t per event loop. The *_async calls of the C API
wait on the library's own threads and post one event each to that queue; the
loop watches the queue's fd (loop.add_reader) and resolves the matching
future on the loop's thread. No executor thread is held while a call waits,
so any number of acquires, ended() and watches can be pending at once.

Logs: the library's lines (krabka.log.level, krabka.debug) go to
logging.getLogger("krabka_coord") through the C log callback, which the
library calls from its own delivery thread, one line at a time (never inside
another call of the library). Every Client sets that callback, so the
library never writes to stderr itself (it does without a callback or queue),
and the logger carries a NullHandler, so an application that configured no
logging gets nothing on stderr either (Python's last-resort handler would
print warnings there); what is emitted, and where, is the application's
logging configuration.
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import itertools
import logging
import threading
import weakref
from typing import Any, Callable, Dict, Optional

from . import _native
from ._errors import KrabkaError, raise_for
from ._native import EventStruct, lib

EVENT_NONE, EVENT_ACQUIRE, EVENT_ENDED, EVENT_LOG, EVENT_WATCH = 0, 1, 2, 3, 4

logger = logging.getLogger("krabka_coord")
# A library's logger (the logging HOWTO, "Configuring Logging for a
# Library"): without it, records of an application that configured no
# logging would reach logging.lastResort, which prints WARNING and above to
# stderr (the topic-settings warning, FENCED ends).
logger.addHandler(logging.NullHandler())

# krabka_log_level_t -> logging level
_LEVELS = {3: logging.ERROR, 4: logging.WARNING, 6: logging.INFO, 7: logging.DEBUG}


def _on_log(_opaque: Any, level: int, line: Optional[bytes]) -> None:
    try:
        text = (line or b"").decode("utf-8", "replace")
        logger.log(_LEVELS.get(level, logging.INFO), "%s", text)
    except Exception:  # never raise into C
        pass


LOG_CALLBACK = _native.LOG_CB(_on_log)


def library_log_level() -> str:
    """krabka.log.level matching the krabka_coord logger's effective level
    (used when the configuration does not set it)."""
    lvl = logger.getEffectiveLevel()
    if lvl <= logging.DEBUG:
        return "debug"
    if lvl <= logging.INFO:
        return "info"
    if lvl <= logging.WARNING:
        return "warn"
    return "error"


# Clients still open at interpreter exit are closed first, so that no
# library thread calls back into a finalising interpreter.
_open_clients: "weakref.WeakSet[Any]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for c in list(_open_clients):
        try:
            c.close()
        except Exception:
            pass


# --------------------------------------------------------------------------
# Event queue per asyncio loop
# --------------------------------------------------------------------------


class Completion:
    """One event taken from a queue, copied into Python values."""

    __slots__ = ("type", "tag", "err", "errstr", "leadership", "state", "watch_event")

    def __init__(self, ev: EventStruct, watch_reader: Optional[Callable[[int], Any]]) -> None:
        self.type = ev.type
        self.tag = ev.tag
        self.err = ev.err
        self.errstr = (ev.errstr or b"").decode("utf-8", "replace")
        self.leadership = ev.leadership
        self.state = ev.state
        self.watch_event = watch_reader(ev.watch_event) if (ev.watch_event and watch_reader) else None

    def error(self) -> KrabkaError:
        from ._errors import error_for

        buf = ctypes.create_string_buffer(self.errstr.encode("utf-8"))
        return error_for(self.err, buf)


# A reader for watch events (set by the watch module; it copies the C event).
watch_reader: Optional[Callable[[int], Any]] = None


class LoopQueue:
    """The krabka_queue_t of one asyncio loop and the futures waiting on it."""

    _tags = itertools.count(1)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        out = ctypes.c_void_p()
        raise_for(lib.krabka_queue_new(ctypes.byref(out)))
        self._q: Optional[int] = out.value
        fd = ctypes.c_int()
        raise_for(lib.krabka_queue_fd(self._q, ctypes.byref(fd)))
        self._loop_ref = weakref.ref(loop)
        self._waiting: Dict[int, Callable[[Completion], None]] = {}
        loop.add_reader(fd.value, self._drain)
        self._fd = fd.value

    @property
    def ptr(self) -> int:
        assert self._q is not None
        return self._q

    def expect(self, on_event: Callable[[Completion], None]) -> int:
        """Registers a handler for the one event of a new call; returns its tag."""
        tag = next(self._tags)
        self._waiting[tag] = on_event
        return tag

    def forget(self, tag: int) -> None:
        self._waiting.pop(tag, None)

    def _drain(self) -> None:
        if self._q is None:
            return
        ev = EventStruct()
        while True:
            if lib.krabka_queue_poll(self._q, ctypes.byref(ev)) != 0 or ev.type == EVENT_NONE:
                return
            c = Completion(ev, watch_reader)
            handler = self._waiting.pop(c.tag, None)
            if handler is not None:
                try:
                    handler(c)
                except Exception:  # a handler bug must not stop the drain
                    logger.exception("krabka_coord: completion handler failed")
            elif c.leadership:
                # Nobody waits any more (the task was cancelled): release it.
                lib.krabka_leadership_destroy(c.leadership)

    def close(self) -> None:
        if self._q is None:
            return
        loop = self._loop_ref()
        try:
            if loop is not None and not loop.is_closed():
                loop.remove_reader(self._fd)
        except Exception:
            pass
        q, self._q = self._q, None
        if not _native.in_forked_child():
            lib.krabka_queue_destroy(q)


_queues: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopQueue]" = weakref.WeakKeyDictionary()
_queues_lock = threading.Lock()


def loop_queue() -> LoopQueue:
    """The queue of the running loop (created on first use; closed with the
    loop when it is garbage collected)."""
    loop = asyncio.get_running_loop()
    with _queues_lock:
        q = _queues.get(loop)
        if q is None:
            q = LoopQueue(loop)
            _queues[loop] = q
            weakref.finalize(loop, q.close)
    return q


def future_for(
    q: LoopQueue,
    convert: Callable[[Completion], Any],
    release: Optional[Callable[[Completion], None]] = None,
    raise_errors: bool = True,
) -> "tuple[int, asyncio.Future[Any]]":
    """A future resolved by the event with the returned tag: convert(event),
    or its error when raise_errors (an ENDED event's error is its reason, not
    a failure). If the future was cancelled meanwhile, release(event) runs
    instead (so a won leadership is not leaked)."""
    fut: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()

    def on_event(c: Completion) -> None:
        if fut.done():
            if release is not None:
                release(c)
            return
        if c.err and raise_errors:
            fut.set_exception(c.error())
            return
        try:
            fut.set_result(convert(c))
        except BaseException as exc:  # noqa: BLE001
            fut.set_exception(exc)

    tag = q.expect(on_event)
    return tag, fut
