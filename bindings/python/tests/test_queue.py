"""The completion path on a real broker (KRABKA_BOOTSTRAP): a leadership
won by a call whose caller gave up (a cancelled asyncio task, Ctrl-C in a
synchronous acquire) is disposed of, so another member takes the role;
every queue event is destroyed exactly once, over a thousand calls of each
path."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from typing import Any, Dict, Iterator, List

import pytest

import krabka_coord as kc
from krabka_coord import _calls
from krabka_coord._native import glib, lib
from conftest import FAST_LEASES, KafkaTools, unique

pytestmark = pytest.mark.kafka


def conf(bootstrap: str, **extra: object) -> Dict[str, object]:
    c: Dict[str, object] = {"bootstrap.servers": bootstrap, "krabka.poll.interval.ms": 200}
    c.update(FAST_LEASES)
    c.update(extra)
    return c


def _takes_over(bootstrap: str, role: str, holder: kc.Leadership, old_token: kc.FencingToken) -> None:
    """The holder resigns; the abandoned call of "b" wins behind it and is
    disposed of (resigned), so "c", waiting behind b, gets the role at once
    or at b's lease deadline, and b is no longer registered."""
    with kc.Client(conf(bootstrap)) as cc:
        got: List[object] = []

        def acquire_c() -> None:
            try:
                got.append(cc.acquire(role, "c", timeout=60))
            except BaseException as e:  # reported below
                got.append(e)

        t = threading.Thread(target=acquire_c)
        t.start()
        deadline = time.monotonic() + 30
        while "c" not in [e.member for e in cc.describe(role, timeout=10).roster]:  # c queues behind b
            assert time.monotonic() < deadline, "c never registered"
            time.sleep(0.1)
        holder.resign(timeout=10)
        t.join(90)
        assert not t.is_alive() and len(got) == 1, got
        c_lead = got[0]
        assert isinstance(c_lead, kc.Leadership), c_lead
        assert c_lead.token > old_token
        st = cc.describe(role, timeout=10)
        assert st.holder == "c" and st.current and st.token == c_lead.token
        assert "b" not in [e.member for e in st.roster], st.roster
        c_lead.resign(timeout=10)


def _wait_registered(c: kc.Client, role: str, member: str) -> None:
    deadline = time.monotonic() + 30
    while member not in [e.member for e in c.describe(role, timeout=10).roster]:
        assert time.monotonic() < deadline, "%s never registered" % member
        time.sleep(0.1)


def test_a_cancelled_acquire_async_leaves_no_lease_held(bootstrap: str) -> None:
    role = unique("py-q-cancel")
    with kc.Client(conf(bootstrap, **{"krabka.renew.background": True})) as ca:
        holder = ca.acquire(role, "a", timeout=60)

        async def main() -> None:
            with kc.Client(conf(bootstrap)) as cb:
                task = asyncio.ensure_future(cb.acquire_async(role, "b"))
                await asyncio.get_running_loop().run_in_executor(None, _wait_registered, ca, role, "b")
                assert not task.done()
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                # the loop goes on running (and draining its queue) while c takes over
                await asyncio.get_running_loop().run_in_executor(None, _takes_over, bootstrap, role, holder, holder.token)

        asyncio.run(main())
        holder.close()


@pytest.mark.usefixtures("sigint_raises")
def test_an_acquire_abandoned_by_ctrl_c_leaves_no_lease_held(bootstrap: str) -> None:
    role = unique("py-q-sigint")
    with kc.Client(conf(bootstrap, **{"krabka.renew.background": True})) as ca, kc.Client(conf(bootstrap)) as cb:
        holder = ca.acquire(role, "a", timeout=60)

        interrupted = threading.Event()

        def interrupt_once_b_waits() -> None:
            _wait_registered(ca, role, "b")
            os.kill(os.getpid(), signal.SIGINT)
            # Only if the interrupt did not end the wait: free the role, so
            # the broken acquire returns (and the test fails) instead of
            # hanging.
            if not interrupted.wait(30):
                holder.resign(timeout=10)

        threading.Thread(target=interrupt_once_b_waits, daemon=True).start()
        try:
            won = cb.acquire(role, "b")  # no timeout: only the interrupt ends the wait
        except KeyboardInterrupt:
            interrupted.set()
        else:
            won.close()
            pytest.fail("acquire returned a leadership instead of raising KeyboardInterrupt")
        _takes_over(bootstrap, role, holder, holder.token)
        holder.close()


class DestroyCounter:
    """Wraps krabka_event_destroy (of both handles of the library, the one
    that releases the GIL and the one that keeps it): how many events were
    destroyed, and what each destroy answered (a second destroy of one
    event answers INVALID_HANDLE)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.codes: List[int] = []

    def __call__(self, ev: int) -> int:
        rc = self.real(ev)
        with _lock:
            self.codes.append(rc)
        return rc  # type: ignore[no-any-return]


_lock = threading.Lock()


class Destroys:
    def __init__(self) -> None:
        self.counters = [DestroyCounter(lib.krabka_event_destroy), DestroyCounter(glib.krabka_event_destroy)]

    @property
    def codes(self) -> List[int]:
        return self.counters[0].codes + self.counters[1].codes


@pytest.fixture
def destroys() -> Iterator[Destroys]:
    d = Destroys()
    lib.krabka_event_destroy, glib.krabka_event_destroy = d.counters
    try:
        yield d
    finally:
        lib.krabka_event_destroy, glib.krabka_event_destroy = d.counters[0].real, d.counters[1].real


def _rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_every_event_is_destroyed_exactly_once_over_a_thousand_calls(
        bootstrap: str, kafka_tools: KafkaTools, destroys: Destroys) -> None:
    topic = unique("py-q-leak")
    kafka_tools.create_topic(bootstrap, topic, 1)
    n = 1000
    with kc.Client(conf(bootstrap)) as c:
        lead = c.acquire(unique("py-q-leak"), "a", timeout=60)
        base = len(destroys.codes)  # the acquire's event
        assert base == 1 and destroys.codes == [0]

        # synchronous: the process queue
        rss0 = _rss_kb()
        for i in range(n):
            lead.produce(topic, b"sync %d" % i)
        assert len(destroys.codes) == base + n

        # asyncio: the loop's queue, 64 in flight at once
        async def main() -> None:
            sem = asyncio.Semaphore(64)

            async def one(i: int) -> None:
                async with sem:
                    await lead.produce_async(topic, b"async %d" % i)

            await asyncio.gather(*(one(i) for i in range(n)))
            assert _calls._loops[asyncio.get_running_loop()].waiting == {}

        asyncio.run(main())
        assert len(destroys.codes) == base + 2 * n
        rss1 = _rss_kb()
        for i in range(n):
            lead.produce(topic, b"sync again %d" % i)
        rss2 = _rss_kb()
        lead.resign(timeout=10)
    assert set(destroys.codes) == {0}, "an event was destroyed twice or was not ours"
    assert len(destroys.codes) == 1 + 3 * n + 1  # acquire, 3000 writes, the resign
    assert _calls.process_queue().waiting == {}
    # Memory stays bounded: a second thousand calls does not grow the process
    # by what a leak per call would (generous: 8 KiB per call).
    assert rss2 - rss1 < 8 * n, (rss0, rss1, rss2)
