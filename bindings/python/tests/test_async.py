"""The call runner (_calls) without a broker: blocking calls go through
the *_async forms on completion queues, an abandoned call (a cancelled task,
KeyboardInterrupt) hands its event to the disposer exactly once, asyncio
calls complete on the loop's own thread with no thread of their own, and
several loops in several threads each complete their own calls.

The calls are acquires of a client whose broker refuses connections: the
library retries such failures until the call's timeout and then posts
TIMEOUT, so each call completes by itself after its timeout."""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import threading
import time
from typing import List

import pytest

import krabka_coord as kc
from krabka_coord import _abi, _calls, _dispose
from krabka_coord._native import lib

NOWHERE = {"bootstrap.servers": "127.0.0.1:9", "request.timeout.ms": 2000}


def _event_type(ev: int) -> int:
    out = ctypes.c_int()
    assert lib.krabka_event_type(ev, ctypes.byref(out)) == 0
    return out.value


class Recorder:
    """A dispose that records what it was handed, then disposes as usual."""

    def __init__(self) -> None:
        self.types: List[int] = []
        self.threads: List[str] = []
        self.done = threading.Event()

    def __call__(self, ev: int) -> None:
        self.types.append(_event_type(ev))
        self.threads.append(threading.current_thread().name)
        _dispose.event(ev)
        self.done.set()


def _acquire_start(c: kc.Client, timeout_s: float) -> "_calls.Start":
    start, _role, _member = c._acquire_start(lib.krabka_client_acquire_opts_async, "r", "m", timeout_s, None, None)
    return start


def _wait(ev: threading.Event) -> None:
    # the acquire gives up after its timeout by itself; this only bounds a
    # broken runner
    assert ev.wait(60), "the abandoned call's event never reached its disposer"


def test_a_cancelled_task_hands_its_event_to_the_disposer_once() -> None:
    rec = Recorder()

    async def main() -> None:
        with kc.Client(NOWHERE) as c:
            task = asyncio.ensure_future(_calls.run_async(_acquire_start(c, 3.0), lambda ev: "read", rec))
            await asyncio.sleep(0.05)
            assert not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert rec.types == []  # the C call still runs
            while not rec.done.is_set():  # the loop must keep running to drain its queue
                await asyncio.sleep(0.02)

    asyncio.run(main())
    assert rec.types == [int(_abi.EventType.ACQUIRE)]
    assert rec.threads == ["MainThread"]  # drained by the loop itself


@pytest.mark.usefixtures("sigint_raises")
def test_ctrl_c_abandons_a_sync_call_whose_event_then_goes_to_the_disposer() -> None:
    rec = Recorder()
    interrupted_before_the_end: List[bool] = []
    with kc.Client(NOWHERE) as c:
        start = _acquire_start(c, 3.0)

        def interrupt() -> None:
            time.sleep(0.1)
            os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=interrupt, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            try:
                _calls.run(start, lambda ev: "read", rec)
            except KeyboardInterrupt:
                # Raised while the C call still ran: its event had not come.
                interrupted_before_the_end.append(not rec.done.is_set())
                raise
        _wait(rec.done)
    assert interrupted_before_the_end == [True]
    assert rec.types == [int(_abi.EventType.ACQUIRE)]
    assert rec.threads == ["krabka-completions"]


def _python_threads() -> "set[str]":
    """Threads Python started (not the library's log thread, which enters
    Python through the log callback as a dummy thread)."""
    return {t.name for t in threading.enumerate() if not isinstance(t, threading._DummyThread)}  # type: ignore[attr-defined]


def test_asyncio_calls_start_no_thread_and_complete_on_the_loop() -> None:
    async def main() -> None:
        with kc.Client(NOWHERE) as c:
            before = _python_threads()
            tasks = [asyncio.ensure_future(c.acquire_async("r", "m", timeout=0.3)) for _ in range(50)]
            await asyncio.sleep(0.05)
            during = _python_threads()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            assert all(isinstance(r, kc.KrabkaTimeoutError) for r in results), results
            assert during - before <= {"krabka-completions"}, during - before
            loop = asyncio.get_running_loop()
            q = _calls._loops[loop]
            assert q.waiting == {}  # every call completed and was forgotten

    asyncio.run(main())


def test_several_loops_in_several_threads_complete_their_own_calls() -> None:
    results: List[object] = []
    errors: List[BaseException] = []

    def one_loop() -> None:
        async def main() -> object:
            with kc.Client(NOWHERE) as c:
                try:
                    await c.acquire_async("r", "m", timeout=0.3)
                except kc.KrabkaTimeoutError as e:
                    return (type(e).__name__, threading.current_thread().name)
            return None

        try:
            results.append(asyncio.run(main()))
        except BaseException as e:  # reported below
            errors.append(e)

    ts = [threading.Thread(target=one_loop, name="loop-%d" % i) for i in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert errors == []
    assert sorted(results) == [("KrabkaTimeoutError", "loop-%d" % i) for i in range(3)]  # type: ignore[type-var]


def test_sync_calls_from_many_threads_share_the_process_queue() -> None:
    errors: List[BaseException] = []
    with kc.Client(NOWHERE) as c:

        def call() -> None:
            try:
                c.acquire("r", "m", timeout=0.3)
            except BaseException as e:  # reported below
                errors.append(e)

        ts = [threading.Thread(target=call) for _ in range(20)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
    assert len(errors) == 20 and all(isinstance(e, kc.KrabkaTimeoutError) for e in errors), errors
    assert _calls.process_queue().waiting == {}


def test_a_refused_start_raises_at_once_and_posts_nothing() -> None:
    q = _calls.process_queue()
    with kc.Client(NOWHERE) as c:
        p = c._ptr()
        with pytest.raises(kc.InvalidArgumentError, match="timeout"):
            q.submit(lambda qp, tag, buf: lib.krabka_client_describe_async(p, b"r", 1, -1, qp, tag, buf, len(buf)),
                     lambda ev: None)
        with pytest.raises(kc.DataError) as di:
            q.submit(lambda qp, tag, buf: lib.krabka_client_describe_async(p, b"", 0, 0, qp, tag, buf, len(buf)),
                     lambda ev: None)
        assert di.value.category == "empty_role"
    with pytest.raises(kc.KrabkaError) as ei:
        q.submit(lambda qp, tag, buf: lib.krabka_leadership_renew_async(None, 0, qp, tag, buf, len(buf)), lambda ev: None)
    assert ei.value.name == "INVALID_HANDLE" and type(ei.value) is kc.KrabkaError
    assert q.waiting == {}


def test_async_forms_check_arguments_before_anything_is_submitted() -> None:
    async def main() -> None:
        with kc.Client(NOWHERE) as c:
            with pytest.raises(TypeError):
                await c.acquire_async(None, "m")  # type: ignore[arg-type]
            with pytest.raises(ValueError):
                await c.try_acquire_async("r", "m", timeout=-1)
            # refused before anything was submitted: this loop has no queue yet
            assert asyncio.get_running_loop() not in _calls._loops
        with pytest.raises(kc.ClosedError):
            await c.describe_async("r")

    asyncio.run(main())
