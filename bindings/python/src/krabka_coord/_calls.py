"""The call runner: every blocking call of the binding runs as its *_async
form of the C ABI on a completion queue (krabka_queue_t).

A call is `submit(start, deliver)`: `start(queue, tag, errstr)` issues the C
*_async function (which checks its arguments at once and returns an error,
posting nothing, or posts exactly one event with `tag` later); `deliver(ev)`
receives that event when it is taken from the queue. Two things drive the
queues, and they share this code:

- run() (the synchronous methods): one process-wide queue whose fd a daemon
  thread ("krabka-completions") waits on. The calling thread blocks on a
  lock the event releases. On the main thread (the only one Python runs
  signal handlers on) it waits in 0.1 s slices: the kernel may deliver
  SIGINT to any thread of the process (the Go runtime's included), and
  then only the flag Python's C handler sets tells the main thread, which
  it reads between two slices, so Ctrl-C raises KeyboardInterrupt within
  about 100 ms. Other threads wait without slices. Any number of threads
  may wait.
- run_async() (the asyncio methods): one queue per event loop, whose fd the
  loop itself watches (loop.add_reader): the event is read and the future
  completed on the loop's own thread, without a thread hop. Several loops
  (in several threads) each have their own queue; a call is always
  completed on the loop it was awaited in.

A caller that gives up (KeyboardInterrupt, a cancelled task) leaves the C
call running; its event is then handed to the call's `dispose` (see
_dispose), never dropped, so whatever the call won is disposed of exactly
once. Every event is destroyed exactly once: by complete() after it was
read, or by the disposer.

Per-call costs: no thread is started and no executor is used; a blocking
call costs one ctypes call to submit, and the queue poll, the reads and
the destroy of its event.
"""

from __future__ import annotations

import asyncio
import ctypes
import itertools
import logging
import select
import threading
import time
import weakref
from typing import Any, Awaitable, Callable, Dict, List, Optional, TypeVar

from ._errors import ErrorCode, KrabkaError, error_for, raise_for
from ._native import ERRSTR_SIZE, glib, lib

__all__ = ["Queue", "process_queue", "loop_queue", "run", "run_async", "complete", "Shared", "errbuf", "take"]

T = TypeVar("T")

#: start(queue_ptr, tag, errstr_buffer) -> krabka_err_t of the *_async call.
Start = Callable[[int, int, Any], int]
#: read(event_ptr) -> the call's value (takes what the event carries).
Read = Callable[[int], T]
#: dispose(event_ptr): an event whose caller gave up (destroys it).
Dispose = Callable[[int], None]

logger = logging.getLogger("krabka_coord")

_tags = itertools.count(1)  # next() is atomic under the GIL
_local = threading.local()


def errbuf() -> ctypes.Array[ctypes.c_char]:
    """This thread's errstr buffer: written by the library only on failure,
    and read (copied by error_for) at once by the same thread."""
    buf: Optional[ctypes.Array[ctypes.c_char]] = getattr(_local, "buf", None)
    if buf is None:
        buf = _local.buf = ctypes.create_string_buffer(ERRSTR_SIZE)
    return buf


def take(ev: int, take_fn: Callable[..., int], what: str) -> int:
    """The handle a succeeded call's event carries (krabka_event_take_*),
    which now belongs to the caller; `what` names the call for the error
    when the event carried none."""
    out = ctypes.c_void_p()
    buf = errbuf()
    raise_for(take_fn(ev, ctypes.byref(out), buf, len(buf)), buf)
    if not out.value:
        raise KrabkaError(ErrorCode.INTERNAL, "%s succeeded without a result to take" % what)
    return out.value


class Queue:
    """A krabka_queue_t and the calls waiting on it (tag -> deliver)."""

    def __init__(self) -> None:
        out = ctypes.c_void_p()
        raise_for(lib.krabka_queue_new(ctypes.byref(out)))
        self.ptr: Optional[int] = out.value
        fd = ctypes.c_int()
        code = lib.krabka_queue_fd(self.ptr, ctypes.byref(fd))
        if code:
            lib.krabka_queue_destroy(self.ptr)
            raise_for(code)
        self.fd = fd.value
        # dict operations are atomic under the GIL: submit() runs on any
        # thread, drain() on the queue's driver.
        self.waiting: Dict[int, Callable[[int], None]] = {}

    def submit(self, start: Start, deliver: Callable[[int], None]) -> None:
        """Issue one *_async call; `deliver` gets its event. Raises the
        call's error when it refused to start (nothing was posted)."""
        q = self.ptr
        if q is None:
            raise RuntimeError("krabka_coord: the completion queue was closed")
        tag = next(_tags)
        self.waiting[tag] = deliver
        buf = errbuf()
        try:
            code = start(q, tag, buf)
        except BaseException:
            self.waiting.pop(tag, None)
            raise
        if code:
            self.waiting.pop(tag, None)
            raise error_for(code, buf)

    def drain(self) -> None:
        """Take every waiting event and hand each to its call."""
        q = self.ptr
        if q is None:
            return
        out = ctypes.c_void_p()
        tag = ctypes.c_uint64()
        while True:
            if glib.krabka_queue_poll(q, ctypes.byref(out)) or not out.value:
                return
            ev = out.value
            glib.krabka_event_tag(ev, ctypes.byref(tag))
            deliver = self.waiting.pop(tag.value, None)
            if deliver is None:  # not ours (never happens): release it
                lib.krabka_event_destroy(ev)
                continue
            try:
                deliver(ev)
            except Exception:  # a bug in a deliver must not stop the queue
                logger.exception("krabka_coord: completing a call failed")

    def close(self) -> None:
        """Destroys the queue: events still in it are dropped (the library
        disposes of what they carry), and calls still pending complete
        without posting, their winnings destroyed by the library."""
        q, self.ptr = self.ptr, None
        if q is not None:
            lib.krabka_queue_destroy(q)


class _ThreadDriven(Queue):
    """The process-wide queue: a daemon thread waits on its fd."""

    def __init__(self) -> None:
        super().__init__()
        threading.Thread(target=self._run, name="krabka-completions", daemon=True).start()

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        while self.ptr is not None:
            poller.poll()
            self.drain()


_process: Optional[_ThreadDriven] = None
_process_lock = threading.Lock()


def process_queue() -> Queue:
    """The process-wide queue of the synchronous calls (made on first use;
    it lives as long as the process)."""
    global _process
    q = _process
    if q is None:
        with _process_lock:
            if _process is None:
                _process = _ThreadDriven()
            q = _process
    return q


class _LoopDriven(Queue):
    """The queue of one asyncio loop, drained by the loop (add_reader)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._loop = weakref.ref(loop)
        try:
            loop.add_reader(self.fd, self.drain)
        except BaseException:
            Queue.close(self)
            raise

    def close(self) -> None:
        loop = self._loop()
        if loop is not None and not loop.is_closed() and self.ptr is not None:
            try:
                loop.remove_reader(self.fd)
            except Exception:  # the loop is going away
                pass
        Queue.close(self)


_loops: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopDriven]" = weakref.WeakKeyDictionary()
_loops_lock = threading.Lock()


def loop_queue(loop: asyncio.AbstractEventLoop) -> Queue:
    """The queue of `loop` (made on first use, destroyed when the loop is
    garbage collected). A call still pending then completes without
    posting, and the library destroys what it wins (a leadership without
    resigning: standbys take over at its lease deadline)."""
    q = _loops.get(loop)
    if q is None:
        with _loops_lock:
            q = _loops.get(loop)
            if q is None:
                q = _loops[loop] = _LoopDriven(loop)
                weakref.finalize(loop, q.close)
    return q


def complete(ev: int, read: Read[T]) -> T:
    """The value of a completed call: its error raised, else read(ev). The
    event is destroyed here, whatever happens."""
    try:
        code = ctypes.c_int()
        buf = errbuf()
        raise_for(glib.krabka_event_error(ev, ctypes.byref(code), buf, len(buf)))
        if code.value:
            raise error_for(code.value, buf)
        return read(ev)
    finally:
        # what the event carried was taken by read(), or it carried nothing
        # (an error): a destroy that releases nothing else
        glib.krabka_event_destroy(ev)


#: The wait slice of the main thread (see the module's doc).
SLICE = 0.1


def wait_lock(lock: "threading.Lock") -> None:
    """lock.acquire(), in slices on the main thread so that a pending
    KeyboardInterrupt is raised within SLICE seconds."""
    if threading.current_thread() is threading.main_thread():
        while not lock.acquire(timeout=SLICE):
            pass
    else:
        lock.acquire()


def wait_event(ev: threading.Event, timeout: Optional[float]) -> bool:
    """ev.wait(timeout), in slices on the main thread (as wait_lock)."""
    if threading.current_thread() is not threading.main_thread():
        return ev.wait(timeout)
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        left = SLICE if end is None else min(SLICE, end - time.monotonic())
        if left <= 0:
            return ev.is_set()
        if ev.wait(left):
            return True


# One lock for the hand-over between a call's waiter and its event (held
# for a few instructions).
_handover = threading.Lock()


class _Waiter:
    __slots__ = ("ready", "ev", "abandoned", "dispose")

    def __init__(self, dispose: Dispose) -> None:
        self.ready = threading.Lock()
        self.ready.acquire()
        self.ev: Optional[int] = None
        self.abandoned = False
        self.dispose = dispose

    def deliver(self, ev: int) -> None:  # on the completions thread
        with _handover:
            keep = not self.abandoned
            if keep:
                self.ev = ev
        if keep:
            self.ready.release()
        else:
            self.dispose(ev)


def run(start: Start, read: Read[T], dispose: Dispose) -> T:
    """A blocking call, synchronously: submit it on the process queue and
    wait for its event. KeyboardInterrupt (or any exception) while waiting
    abandons the call: its event goes to `dispose`, now if it came already,
    else when it comes."""
    w = _Waiter(dispose)
    process_queue().submit(start, w.deliver)
    try:
        wait_lock(w.ready)
    except BaseException:
        with _handover:
            w.abandoned = True
            ev, w.ev = w.ev, None
        if ev is not None:
            dispose(ev)
        raise
    ev = w.ev
    assert ev is not None
    return complete(ev, read)


async def run_async(start: Start, read: Read[T], dispose: Dispose,
                    release: Optional[Callable[[T], None]] = None) -> T:
    """A blocking call as a coroutine: submit it on the running loop's
    queue; the loop completes the future. A cancelled task abandons the
    call: its event goes to `dispose` when it comes; a value that was
    already read when the cancellation arrived goes to `release`."""
    loop = asyncio.get_running_loop()
    fut: "asyncio.Future[T]" = loop.create_future()

    def deliver(ev: int) -> None:  # on the loop's thread
        if fut.done():  # cancelled
            dispose(ev)
            return
        try:
            value = complete(ev, read)
        except Exception as exc:
            fut.set_exception(exc)
            return
        fut.set_result(value)

    loop_queue(loop).submit(start, deliver)
    try:
        return await fut
    except asyncio.CancelledError:
        if release is not None and fut.done() and not fut.cancelled() and fut.exception() is None:
            release(fut.result())
        raise


class Shared:
    """One call many waiters share, sync and asyncio alike (a leadership's
    end): submitted on the process queue on first use; its value, read(ev)
    (which sees the event's error code itself), is kept.
    Waiters on asyncio loops are completed with call_soon_threadsafe."""

    def __init__(self, start: Start, read: Read[Any]) -> None:
        self._start = start
        self._read = read
        self._lock = threading.Lock()
        self._submitted = False
        self._done = threading.Event()
        self._value: Any = None
        self._exc: Optional[BaseException] = None
        self._futures: List["asyncio.Future[Any]"] = []

    def _ensure(self) -> None:
        with self._lock:
            if self._submitted:
                return
            self._submitted = True
        try:
            process_queue().submit(self._start, self._deliver)
        except BaseException:
            with self._lock:
                self._submitted = False
            raise

    def _deliver(self, ev: int) -> None:  # on the completions thread
        try:
            self._value = self._read(ev)
        except Exception as exc:
            self._exc = exc
        finally:
            lib.krabka_event_destroy(ev)
        with self._lock:
            self._done.set()
            futs, self._futures = self._futures, []
        for f in futs:
            self._wake(f)

    def _wake(self, f: "asyncio.Future[Any]") -> None:
        def settle() -> None:
            if f.done():
                return
            if self._exc is not None:
                f.set_exception(self._exc)
            else:
                f.set_result(self._value)

        try:
            f.get_loop().call_soon_threadsafe(settle)
        except RuntimeError:  # that loop is closed: nobody waits there
            pass

    def _result(self) -> Any:
        if self._exc is not None:
            raise self._exc
        return self._value

    def wait(self, timeout: Optional[float]) -> "tuple[bool, Any]":
        """(True, value) once it completed, (False, None) when `timeout`
        seconds passed first (None: no limit). Interruptible."""
        self._ensure()
        if not wait_event(self._done, timeout):
            return False, None
        return True, self._result()

    def wait_async(self) -> Awaitable[Any]:
        self._ensure()
        fut: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        with self._lock:
            if not self._done.is_set():
                self._futures.append(fut)
                return fut
        self._wake(fut)
        return fut
