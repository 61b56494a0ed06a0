"""Role groups through the Python binding (client.join_group, GroupMember,
GroupEvent). Bad arguments need no broker; the rest runs on
$KRABKA_BOOTSTRAP (transaction.version 2) and $KRABKA_BOOTSTRAP_TV1, both
required (`make test` sets them).

On each cluster, one group of 16 shards and three members: a and b in this
process, c in a child process (examples/group/member.py, so that it can be
killed):
  * balanced: every shard held by exactly one member, 5/5/6; what a's and
    b's events say (ASSIGNED minus REVOKED) is what `held` answers;
  * b leaves: only b's shards move (a and c keep every shard they held),
    8/8 after; every ASSIGNED of b was followed by its REVOKED;
  * c is SIGKILLed: a takes c's shards once their leases ran out (16), and
    keeps its own;
  * a blind successor (a client on another coordination topic, which a's
    view never reads) acquires one of a's shards' roles: a's next write
    under that shard's leadership is refused (FencedError from the broker,
    or LeaseExpiredError when a renewal raced the mint and ended the term
    first), the group reports the shard REVOKED, and the command topic
    holds a's record before and none after.
Every wait is bounded (a bound, not a timing check).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Set

import pytest

import krabka_coord as kc
from conftest import REPO, KafkaTools, unique

SHARDS = 16
WAIT = 90.0  # a bound for one wait, not a timing check
MEMBER_PY = REPO / "examples" / "group" / "member.py"
CLUSTERS = [("tv2", "KRABKA_BOOTSTRAP"), ("tv1", "KRABKA_BOOTSTRAP_TV1")]


def conf(bootstrap: str, client_id: str, **extra: Any) -> Dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "krabka.lease.ms": 3000,
        "krabka.renew.interval.ms": 1000,
        "krabka.challenge.stagger.ms": 500,
        "krabka.poll.interval.ms": 200,
        **extra,
    }


def bootstrap_of(env: str) -> str:
    addr = os.environ.get(env)
    if not addr:
        pytest.fail("%s is not set: the group tests need the brokers of `make test`" % env, pytrace=False)
    return addr


def until(pred: Callable[[], bool], what: str, bound: float = WAIT, state: Callable[[], object] = lambda: "") -> None:
    end = time.monotonic() + bound
    while not pred():
        if time.monotonic() > end:
            pytest.fail("%s: not within %.0f s %s" % (what, bound, state()), pytrace=False)
        time.sleep(0.1)


# ---- bad arguments (no broker) ----------------------------------------------------


def test_join_group_checks_its_arguments() -> None:
    with kc.Client({"bootstrap.servers": "127.0.0.1:1"}) as c:
        for kwargs, name in [
            (dict(group=1, shards=4, member="m"), "group"),
            (dict(group="g", shards="4", member="m"), "shards"),
            (dict(group="g", shards=4.0, member="m"), "shards"),
            (dict(group="g", shards=True, member="m"), "shards"),
            (dict(group="g", shards=4, member=None), "member"),
            (dict(group="g", shards=4, member="m", weight="2"), "weight"),
            (dict(group="g", shards=4, member="m", eligible=1), "eligible"),
        ]:
            with pytest.raises(TypeError, match=name):
                c.join_group(**kwargs)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="slots"):
            c.join_semaphore("s", "2", "m")  # type: ignore[arg-type]
        for n in (0, -1, kc.MAX_SHARDS + 1):
            with pytest.raises(kc.InvalidArgumentError, match="count %d out of range" % n):
                c.join_group("g", n, "m")
            with pytest.raises(kc.InvalidArgumentError, match="slots count %d" % n):
                c.join_semaphore("s", n, "m")
        with pytest.raises(ValueError, match="shards"):
            c.join_group("g", 2**40, "m")
        for w in (0, -3):
            with pytest.raises(kc.InvalidArgumentError, match="weight %d" % w):
                c.join_group("g", 4, "m", weight=w)
        with pytest.raises(kc.InvalidArgumentError, match="UTF-8"):
            c.join_group(b"g\xff", 4, "m")
        with pytest.raises(kc.KrabkaError, match="too long"):
            c.join_group("g" * (kc.NAME_MAX - 4), 4, "m")
        with pytest.raises(kc.KrabkaError):
            c.join_group("", 4, "m")
        with c.join_group("g-misuse-%d" % os.getpid(), 4, "m", eligible=False) as m:
            with pytest.raises(TypeError, match="eligible"):
                m.set_eligible("yes")  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="weight"):
                m.set_weight(None)  # type: ignore[arg-type]
            with pytest.raises(kc.InvalidArgumentError, match="weight 0"):
                m.set_weight(0)
            with pytest.raises(ValueError, match="shard"):
                m.shard_role(4)
            assert m.shard_role(3).endswith("/shard/3")
            assert m.held == []
            m.close()
            assert m.next_event(1) is None  # the iteration ended
        with pytest.raises(kc.ClosedError):
            m.set_weight(2)


# ---- members ----------------------------------------------------------------------------


class Member:
    """A GroupMember of this process and what its events said."""

    def __init__(self, client: kc.Client, group: str, name: str) -> None:
        self.name = name
        self.m = client.join_group(group, SHARDS, name)
        self.owned: Set[int] = set()
        self.lead: Dict[int, kc.Leadership] = {}
        self.revoked: Dict[int, List[Optional[kc.KrabkaError]]] = {}
        self.errors: List[str] = []
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self._consume, daemon=True)
        self.t.start()

    def _consume(self) -> None:
        for ev in self.m:
            with self.lock:
                if ev.kind == kc.GroupEventKind.ASSIGNED:
                    if ev.shard in self.owned:
                        self.errors.append("ASSIGNED %d twice" % ev.shard)
                    if ev.leadership is None or ev.leadership.token != ev.token:
                        self.errors.append("ASSIGNED %d: the leadership is not the event's term" % ev.shard)
                    self.owned.add(ev.shard)
                    if ev.leadership is not None:
                        self.lead[ev.shard] = ev.leadership
                else:
                    if ev.shard not in self.owned:
                        self.errors.append("REVOKED %d it did not hold" % ev.shard)
                    if ev.error is None:
                        self.errors.append("REVOKED %d without a reason" % ev.shard)
                    self.owned.discard(ev.shard)
                    self.revoked.setdefault(ev.shard, []).append(ev.error)

    def held(self) -> Set[int]:
        return set(self.m.held)

    def agrees(self) -> bool:
        with self.lock:
            return self.owned == self.held()


class Child:
    """examples/group/member.py in a process of its own."""

    def __init__(self, bootstrap: str, group: str, name: str, env: Optional[Dict[str, str]] = None) -> None:
        self.name = name
        self.p = subprocess.Popen([sys.executable, str(MEMBER_PY), bootstrap, group, str(SHARDS), name],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env={**os.environ, **(env or {})})
        self.lines: List[Dict[str, Any]] = []
        self.owned: Set[int] = set()
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                self.lines.append(ev)
                if "held" in ev:
                    self.owned = set(ev["held"])

    def held(self) -> Set[int]:
        with self.lock:
            return set(self.owned)

    def kill(self) -> None:
        self.p.send_signal(signal.SIGKILL)
        self.p.wait(30)

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait(30)


def partition_ok(sets: List[Set[int]]) -> bool:
    """Every shard held by exactly one of sets."""
    total = sum(len(s) for s in sets)
    union: Set[int] = set().union(*sets)
    return total == SHARDS and union == set(range(SHARDS))


@pytest.mark.parametrize("cluster,env", CLUSTERS, ids=[c for c, _ in CLUSTERS])
def test_group_on_brokers(cluster: str, env: str, kafka_tools: KafkaTools) -> None:
    bootstrap = bootstrap_of(env)
    group = unique("py-group-" + cluster)
    topic = unique("py-group-cmd")
    kafka_tools.create_topic(bootstrap, topic)
    ca = kc.Client(conf(bootstrap, "a"))
    cb = kc.Client(conf(bootstrap, "b"))
    intruder: Optional[kc.Client] = None
    a = b = None
    c = None
    try:
        a = Member(ca, group, "a")
        b = Member(cb, group, "b")
        c = Child(bootstrap, group, "c")

        # balanced: 16 over three of weight 1 is 5/5/6
        until(lambda: partition_ok([a.held(), b.held(), c.held()])
              and sorted([len(a.held()), len(b.held()), len(c.held())]) == [5, 5, 6]
              and a.agrees() and b.agrees(), "balance 5/5/6",
              state=lambda: (sorted(a.held()), sorted(b.held()), sorted(c.held())))

        # b leaves: only its shards move
        with b.lock:
            b.revoked.clear()  # the moves of the balancing before
            had_b = set(b.owned)
        before_a, before_c = a.held(), c.held()
        b.m.leave(60)
        b.t.join(WAIT)
        assert not b.t.is_alive(), "b's iteration did not end after leave()"
        assert b.m.error is None
        assert b.owned == set() and set(b.revoked) == had_b, (b.owned, b.revoked, had_b)
        b.m.close()
        until(lambda: partition_ok([a.held(), c.held()]) and len(a.held()) == 8 and len(c.held()) == 8
              and a.agrees(), "8/8 after b left", state=lambda: (sorted(a.held()), sorted(c.held()), c.lines[-3:]))
        assert before_a <= a.held(), "a lost %s when b left" % (before_a - a.held())
        assert before_c <= c.held(), "c lost %s when b left" % (before_c - c.held())

        # c is killed: a takes its shards after their deadlines, keeps its own
        before_a = a.held()
        c.kill()
        until(lambda: len(a.held()) == SHARDS and a.agrees(), "a holding all 16 after c was killed",
              state=lambda: sorted(a.held()))
        assert before_a <= a.held()

        # a blind successor mints one of a's shards: the broker refuses a's next write
        # (The intruder's client warms up first, creating its coordination
        # topic, so that its mint and a's next write are close together: a
        # renewal of a in between would end the leadership first.)
        intruder = kc.Client(conf(bootstrap, "intruder", **{"krabka.topic": unique("py-group-blind")}))
        intruder.acquire(unique("warm"), "intruder", timeout=60).resign()
        k = min(a.held())
        with a.lock:
            lead = a.lead[k]
        lead.produce(topic, b"a-before")
        il = intruder.acquire(a.m.shard_role(k), "intruder", timeout=60)
        assert il.token > lead.token
        # The broker refuses the write (FencedError); when a renewal of a
        # raced the mint first, that renewal ended the leadership
        # (LeaseExpiredError: REQUEST-TO-CORE.md 6) and the write is refused
        # before it is sent. Either way nothing of a's lands after the mint.
        refused = (kc.FencedError, kc.LeaseExpiredError)
        with pytest.raises(refused) as how:
            lead.produce(topic, b"a-after")
        print("group %s: a's write under shard %d after the blind mint: %s" % (cluster, k, how.value.name))
        until(lambda: k in a.revoked and any(isinstance(e, refused) for e in a.revoked[k]),
              "shard %d REVOKED (FENCED or LEASE_EXPIRED)" % k)
        values = [r["value"] for r in kafka_tools.read(bootstrap, topic)]
        assert "a-before" in values and "a-after" not in values, values
        assert not a.errors and not b.errors, (a.errors, b.errors)
    finally:
        for m in (a, b):
            if m is not None:
                m.m.close()
        if c is not None:
            c.stop()
        for cl in (ca, cb, intruder):
            if cl is not None:
                cl.close()


def test_group_async_iteration(kafka_tools: KafkaTools) -> None:
    """`async for` over a lone member's events: all 4 shards ASSIGNED (each
    with its leadership), then `async with` leaves: 4 REVOKED and the
    iteration ends; the loop was never blocked (a ticker ran meanwhile)."""
    bootstrap = bootstrap_of("KRABKA_BOOTSTRAP")
    group = unique("py-group-async")

    async def run() -> None:
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0.001)

        tick = asyncio.ensure_future(ticker())
        with kc.Client(conf(bootstrap, "solo")) as client:
            m = client.join_group(group, 4, "solo")
            got: List[kc.GroupEvent] = []
            async with m:
                async for ev in m:
                    got.append(ev)
                    if len(got) == 4:
                        break
                assert sorted(e.shard for e in got) == [0, 1, 2, 3]
                assert all(e.kind == kc.GroupEventKind.ASSIGNED and e.leadership is not None for e in got)
                assert all(e.role == m.shard_role(e.shard) for e in got)
                await m.leave_async(60)
                rest = [ev async for ev in m]
            assert sorted(e.shard for e in rest) == [0, 1, 2, 3], rest
            assert all(e.kind == kc.GroupEventKind.REVOKED for e in rest)
        stop.set()
        await tick
        assert ticks > 0

    asyncio.run(asyncio.wait_for(run(), WAIT))
