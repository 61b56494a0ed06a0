"""The delivery machinery an Elector and a GroupMember share: a completion
queue of their own, one daemon thread that waits on its fd (and on a wake
pipe) and hands every event to `_handle` under one Condition, and the waits
built on that Condition: synchronous ones in slices on the main thread (so
Ctrl-C works), asyncio ones on futures completed with call_soon_threadsafe
(so a loop never blocks).
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import select
import threading
from typing import Any, Callable, List, Optional

from . import _calls
from ._elect_events import _NOT_YET, _now, _settle
from ._errors import ErrorCode, KrabkaError, raise_for
from ._native import Handle, glib


class _Pump:
    """Subclasses implement _handle(ev) (which destroys the event, or keeps
    it) and make their C object with _open, which starts the delivery."""

    _what = "object"  # for log lines: "elector", "group member"

    def _init_pump(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._futures: List["asyncio.Future[None]"] = []
        self._pump_lock = threading.Lock()
        self._stop_pump = False
        self._queue = _calls.Queue()
        self._wake_r, self._wake_w = os.pipe()
        self._thread: Optional[threading.Thread] = None
        self._closing = False
        self._close_lock = threading.Lock()

    def _open(self, start: Callable[[int, Any, Any], int], fn: str, destroy: Any, thread: str) -> Handle:
        """Runs start(queue, out, errbuf), the C call that makes the object
        posting to this queue (fn names it), and starts the delivery thread;
        the object's Handle (destroyed with `destroy`). Raises what the call
        refused with (the queue is then gone)."""
        out = ctypes.c_void_p()
        buf = _calls.errbuf()
        try:
            raise_for(start(self._queue.ptr or 0, ctypes.byref(out), buf), buf)
            if not out.value:
                raise KrabkaError(ErrorCode.INTERNAL, "%s returned no handle" % fn)
        except BaseException:
            self._drop_pump()
            raise
        h = Handle(out.value, destroy)
        self._thread = threading.Thread(target=self._pump_loop, name=thread, daemon=True)
        self._thread.start()
        return h

    def _begin_close(self) -> bool:
        """True for the first close (it runs the close), False after."""
        with self._close_lock:
            if self._closing:
                return False
            self._closing = True
            return True

    def _drop_pump(self) -> None:
        """Undoes _init_pump when the C object could not be made."""
        self._queue.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _handle(self, ev: int) -> None:
        raise NotImplementedError

    def _pump_loop(self) -> None:
        poller = select.poll()
        poller.register(self._queue.fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        while not self._stop_pump:
            poller.poll()
            try:
                self._pump()
            except Exception:  # never let a bug stop the delivery
                _calls.logger.exception("krabka_coord: %s %r: handling an event failed", self._what, self)

    def _pump(self) -> None:
        """Takes every event of the queue, in order, into Python state."""
        with self._pump_lock:
            q = self._queue.ptr
            if q is None:
                return
            out = ctypes.c_void_p()
            while glib.krabka_queue_poll(q, ctypes.byref(out)) == 0 and out.value:
                self._handle(out.value)

    def _stop_pump_thread(self) -> None:
        """Ends the thread and delivers what the queue still holds."""
        self._stop_pump = True
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass
        if self._thread is not None and threading.current_thread() is not self._thread:
            self._thread.join()
        self._pump()

    def _close_queue(self) -> None:
        with self._pump_lock:
            self._queue.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _notify_locked(self) -> None:
        self._cond.notify_all()
        futs, self._futures = self._futures, []
        for f in futs:
            try:
                f.get_loop().call_soon_threadsafe(_settle, f)
            except RuntimeError:  # that loop is closed: nobody waits there
                pass

    def _wait(self, pick: Callable[[], Any], timeout: Optional[float]) -> Any:
        """pick() under the lock until it answers something other than
        _NOT_YET, or `timeout` seconds passed (then _NOT_YET). In slices on
        the main thread (Ctrl-C)."""
        main = threading.current_thread() is threading.main_thread()
        end = None if timeout is None else _now() + timeout
        with self._cond:
            while True:
                got = pick()
                if got is not _NOT_YET:
                    return got
                left = None if end is None else end - _now()
                if left is not None and left <= 0:
                    return _NOT_YET
                if main:
                    left = _calls.SLICE if left is None else min(left, _calls.SLICE)
                self._cond.wait(left)

    async def _wait_async(self, pick: Callable[[], Any]) -> Any:
        loop = asyncio.get_running_loop()
        while True:
            with self._cond:
                got = pick()
                if got is not _NOT_YET:
                    return got
                fut: "asyncio.Future[None]" = loop.create_future()
                self._futures.append(fut)
            await fut
