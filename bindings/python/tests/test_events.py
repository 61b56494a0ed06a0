"""Leadership events, logs, statistics and the thread-free asyncio
completion path, on a real single-node Kafka (KRABKA_BOOTSTRAP)."""

from __future__ import annotations

import asyncio
import logging
import os
import select
import subprocess
import sys
import threading
import time
from typing import Dict

import pytest

import krabka_coord as kc
from conftest import FAST_LEASES, SRC, unique

pytestmark = pytest.mark.kafka


def conf(bootstrap: str, **extra: object) -> Dict[str, object]:
    c: Dict[str, object] = {"bootstrap.servers": bootstrap, "krabka.poll.interval.ms": 200}
    c.update(FAST_LEASES)
    c.update(extra)
    return c


def os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_ended_resolves_fenced_when_a_restarted_member_takes_over(bootstrap: str) -> None:
    role = unique("py-ended")

    async def main() -> None:
        with kc.Client(conf(bootstrap, **{"krabka.renew.background": True})) as old, kc.Client(conf(bootstrap)) as new:
            lead = await old.acquire_async(role, "node-a", timeout=30)
            ended = asyncio.ensure_future(lead.ended())
            await asyncio.sleep(0.1)
            assert not ended.done() and lead.end_error is None
            # The member restarts: the fresh acquire mints a newer epoch; the
            # old incarnation's next (background) renewal is refused.
            newer = await new.acquire_async(role, "node-a", timeout=30)
            assert newer.token.supersedes(lead.token)
            state = await asyncio.wait_for(ended, 60)
            assert state == kc.LeadershipState.FENCED
            assert isinstance(lead.end_error, kc.FencedError)
            assert lead.wait_ended(timeout=0.001) == kc.LeadershipState.FENCED
            newer.close()

    asyncio.run(main())


def test_wait_ended_returns_on_resign_and_active_on_timeout(bootstrap: str) -> None:
    with kc.Client(conf(bootstrap)) as c:
        lead = c.acquire(unique("py-wait"), "node-a", timeout=30)
        assert lead.wait_ended(timeout=0.1) == kc.LeadershipState.ACTIVE
        fd = lead.event_fd()
        t = threading.Timer(0.2, lead.resign)
        t.start()
        assert lead.wait_ended() == kc.LeadershipState.RESIGNED
        t.join()
        # the event fd is signalled (by the library's own thread, so possibly a
        # moment after wait_ended returned)
        readable, _, _ = select.select([fd], [], [], 10)
        assert readable == [fd] and os.read(fd, 8) != b""
        assert isinstance(lead.end_error, kc.NotLeaderError)
        lead.close()


def test_log_records_reach_the_krabka_coord_logger_at_their_levels(bootstrap: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="krabka_coord")
    role = unique("py-log")
    c = kc.Client(conf(bootstrap))  # krabka.log.level follows the logger: debug
    lead = c.acquire(role, "node-a", timeout=30)
    token = str(lead.token)
    lead.resign()
    c.close()  # returns after the last line was delivered
    recs = [r for r in caplog.records if r.name == "krabka_coord"]
    assert any(r.levelno == logging.DEBUG and r.getMessage().startswith("krabka: registered") and role in r.getMessage() for r in recs), recs
    assert any(r.levelno == logging.INFO and r.getMessage().startswith("krabka: role won") and ("token=" + token) in r.getMessage() for r in recs), recs
    assert any(r.levelno == logging.INFO and "state=RESIGNED" in r.getMessage() for r in recs), recs


def test_stats_count_what_happened(bootstrap: str) -> None:
    role = unique("py-stats")
    with kc.Client(conf(bootstrap, **{"client.id": "py-stats"})) as c:
        lead = c.acquire(role, "node-a", timeout=30)
        lead.renew()
        s = c.stats()
        r = s["roles"][role]
        assert s["client_id"] == "py-stats" and s["leaders"] == 1 and s["acquisitions"] == 1
        assert r["is_leader"] and r["member"] == "node-a" and r["token"] == str(lead.token)
        assert r["renewals_ok"] == 1 and 0 < r["lease_remaining_ms"] <= 3000 and r["view_lag_ms"] >= 0
        lead.resign()
        r = c.stats()["roles"][role]
        assert not r["is_leader"] and r["ends_resigned"] == 1 and r["lease_remaining_ms"] == -1


def test_200_concurrent_acquires_wait_without_200_threads(bootstrap: str) -> None:
    role = unique("py-many")

    async def main() -> None:
        holder = kc.Client(conf(bootstrap, **{"krabka.lease.ms": 60000, "krabka.renew.interval.ms": 20000}))
        waiters = kc.Client(conf(bootstrap, **{"krabka.poll.interval.ms": 5000}))
        try:
            await holder.acquire_async(role, "holder", timeout=30)
            before = os_threads()
            tasks = [asyncio.ensure_future(waiters.acquire_async(role, "w%03d" % i)) for i in range(200)]
            # Every waiter registers: all 201 members are in the roster.
            for _ in range(600):
                st = await holder.describe_async(role, timeout=30)
                if len(st.roster) == 201:
                    break
                await asyncio.sleep(0.1)
            assert len(st.roster) == 201
            during = os_threads()
            assert not any(t.done() for t in tasks)
            assert during < 60, "200 waiting acquires hold %d OS threads (%d before)" % (during, before)
            waiters.close()  # every pending acquire ends with ClosedError
            results = await asyncio.gather(*tasks, return_exceptions=True)
            assert all(isinstance(r, kc.ClosedError) for r in results), {type(r).__name__ for r in results}
        finally:
            waiters.close()
            holder.close()

    asyncio.run(main())


def test_a_process_with_a_pending_ended_exits_cleanly(bootstrap: str) -> None:
    script = """
import asyncio, sys, threading
sys.path.insert(0, %r)
import krabka_coord as kc
c = kc.Client({"bootstrap.servers": %r})
lead = c.acquire(%r, "node-a", timeout=30)
threading.Thread(target=lead.wait_ended, daemon=True).start()
async def main():
    asyncio.ensure_future(lead.ended())
    await asyncio.sleep(0.1)
asyncio.run(main())
print("done", flush=True)
""" % (str(SRC), bootstrap, unique("py-exit"))
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "done" and "Traceback" not in p.stderr


def _holder_changes(events):
    return [e for e in events if e.kind == "HOLDER_CHANGED"]


def test_a_watch_follows_two_failovers(bootstrap: str) -> None:
    role = unique("py-watch")
    with kc.Client(conf(bootstrap)) as watcher, kc.Client(conf(bootstrap)) as a, kc.Client(conf(bootstrap)) as b:
        seen = []
        with watcher.watch(role) as w:
            assert w.next(timeout=0.2) is None  # nobody touched the role
            la = a.acquire(role, "node-a", timeout=30)
            la.close()  # no resign: node-b waits out the lease
            lb = b.acquire(role, "node-b", timeout=30)
            lb.resign()  # node-a (registered again) takes over at once
            la2 = a.acquire(role, "node-a", timeout=30)
            for ev in w:
                seen.append(ev)
                if ev.kind == "HOLDER_CHANGED" and ev.holder == "node-a" and ev.prev_holder == "node-b":
                    break
        hc = _holder_changes(seen)
        assert [(e.prev_holder, e.holder) for e in hc] == [(None, "node-a"), ("node-a", "node-b"), ("node-b", "node-a")], seen
        assert hc[1].token.supersedes(hc[0].token) and hc[2].token.supersedes(hc[1].token)
        assert hc[1].prev_token == hc[0].token and hc[2].token == la2.token
        assert all(e.role == role and e.at_ms > 0 for e in seen)
        assert any(e.kind == "ROLE_FREE" for e in seen)
        la2.close()


def test_async_for_over_a_watch(bootstrap: str) -> None:
    role = unique("py-awatch")

    async def main() -> None:
        with kc.Client(conf(bootstrap)) as watcher, kc.Client(conf(bootstrap)) as a:
            w = watcher.watch(role)
            lead = await a.acquire_async(role, "node-a", timeout=30)
            got = []
            async for ev in w:
                got.append(ev)
                if ev.kind == "HOLDER_CHANGED":
                    break
            assert got[-1].holder == "node-a" and got[-1].token == lead.token and got[-1].lease is not None
            nxt = asyncio.ensure_future(w.__anext__())
            await asyncio.sleep(0.1)
            w.close()  # a pending async next ends the iteration
            with pytest.raises(StopAsyncIteration):
                await asyncio.wait_for(nxt, 30)
            lead.close()

    asyncio.run(main())
