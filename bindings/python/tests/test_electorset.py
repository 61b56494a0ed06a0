"""Elector sets through the Python binding (client.elector_set, ElectorSet,
RoleEvent): one member's election loops over many roles, every role's
events on one iterator.

  * bad arguments (no broker): wrong types name the argument; the
    library's errors name the role (twice, held outside the set, too long,
    not in the set);
  * on the in-process cluster (manual clock): two sets over the same roles;
    a role removed from one fails over to the other alone; the release rule
    per role (a role campaigns again only after the iteration moved past
    its STOPPED); close resigns every role and ends the iteration;
  * on $KRABKA_BOOTSTRAP (transaction.version 2) and $KRABKA_BOOTSTRAP_TV1
    (both required): two sets in two clients over ROLES roles; the holder's
    client is closed; the other set takes every role, each token
    superseding the old holder's; async iteration.
Every wait is bounded (a bound, not a timing check).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any, Callable, Dict, List

import pytest

import krabka_coord as kc
from krabka_coord.testing import Clock, Cluster
from conftest import unique

WAIT = 60.0  # a bound for one wait, not a timing check
ROLES = 12
STARTED = kc.TermEventKind.STARTED
STOPPED = kc.TermEventKind.STOPPED
ENDED = kc.TermEventKind.ELECTOR_STOPPED
LEASES = {
    "krabka.lease.ms": 3000,
    "krabka.renew.interval.ms": 1000,
    "krabka.challenge.stagger.ms": 500,
    "krabka.poll.interval.ms": 200,
}


class Log:
    """Every event of a set, read by a thread of its own (the set's one
    iterator), per role."""

    def __init__(self, s: kc.ElectorSet) -> None:
        self.s = s
        self.events: List[kc.RoleEvent] = []
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self) -> None:
        for ev in self.s:
            with self.lock:
                self.events.append(ev)

    def of(self, role: str) -> List[kc.RoleEvent]:
        with self.lock:
            return [e for e in self.events if e.role == role]

    def count(self, role: str, kind: Any) -> int:
        return sum(1 for e in self.of(role) if e.kind == kind)

    def holding(self) -> Dict[str, kc.RoleEvent]:
        """The roles with a STARTED not yet followed by a STOPPED."""
        out: Dict[str, kc.RoleEvent] = {}
        with self.lock:
            for e in self.events:
                if e.kind == STARTED:
                    out[e.role] = e
                elif e.kind == STOPPED:
                    out.pop(e.role, None)
        return out


def check_pairs(log: Log, roles: List[str]) -> None:
    """Per role: STARTED and STOPPED alternate with the same term number,
    each STARTED carries the role's leadership, nothing after ELECTOR_STOPPED
    but a new life of the role (a STARTED of term 1)."""
    for r in roles:
        open_term = 0
        ended = False
        for e in log.of(r):
            assert e.role == r
            if e.kind == STARTED:
                assert open_term == 0, "%s: STARTED %d while term %d runs" % (r, e.term, open_term)
                assert e.leadership is not None and e.leadership.role == r and e.holder == log.s.member
                assert not ended or e.term == 1, "%s: term %d after ELECTOR_STOPPED" % (r, e.term)
                open_term, ended = e.term, False
            elif e.kind == STOPPED:
                assert open_term == e.term, "%s: STOPPED %d, term %d runs" % (r, e.term, open_term)
                open_term = 0
            elif e.kind == ENDED:
                assert open_term == 0, "%s: ELECTOR_STOPPED while term %d runs" % (r, open_term)
                ended = True


def until(pred: Callable[[], bool], what: str, step: Callable[[], None] = lambda: time.sleep(0.05)) -> None:
    end = time.monotonic() + WAIT
    while not pred():
        if time.monotonic() > end:
            pytest.fail("%s: not within %.0f s" % (what, WAIT), pytrace=False)
        step()


# ---- bad arguments --------------------------------------------------------------------


def test_elector_set_checks_its_arguments(krabka_cluster: Cluster, krabka_clock: Clock) -> None:
    with kc.Client({"bootstrap.servers": "127.0.0.1:1"}) as c:
        with pytest.raises(TypeError, match="member"):
            c.elector_set(None)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="recampaign"):
            c.elector_set("m", recampaign=1)  # type: ignore[arg-type]
        with pytest.raises(kc.DataError):
            c.elector_set("")
        with c.elector_set("m") as s:
            with pytest.raises(TypeError, match="role"):
                s.add(3)  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="role"):
                s.remove(None)  # type: ignore[arg-type]
            with pytest.raises(kc.DataError, match="250 bytes"):
                s.add("o" * (kc.NAME_MAX + 1))
            with pytest.raises(kc.DataError, match=r"r\\xff"):
                s.add(b"r\xff")
            with pytest.raises(kc.KrabkaError, match="role"):
                s.add("")
            with pytest.raises(kc.InvalidArgumentError, match="nowhere-role.*not in the set"):
                s.state("nowhere-role")
            with pytest.raises(kc.InvalidArgumentError, match="nowhere-role.*not in the set"):
                s.remove("nowhere-role", timeout=1)
            assert len(s) == 0 and s.held_count == 0
        with pytest.raises(kc.ClosedError):
            s.add("after-close")
        assert s.next_event(1) is None  # the iteration ended
    role = unique("py-set-held")
    with krabka_cluster.client(LEASES) as c:
        l = c.acquire(role, "m", timeout=WAIT)
        with c.elector_set("m") as s:
            s.add("py-set-twice")
            with pytest.raises(kc.InvalidArgumentError, match="py-set-twice.*already in the set"):
                s.add("py-set-twice")
            with pytest.raises(kc.InvalidArgumentError, match="%s.*already holds" % role):
                s.add(role)
            assert len(s) == 1
        l.resign(timeout=WAIT)


# ---- on the in-process cluster -----------------------------------------------------------


def test_one_role_moves_alone_and_the_release_rule(krabka_cluster: Cluster, krabka_clock: Clock) -> None:
    """Two sets over five roles: a holds them all, b stands by; a removes one
    role: it alone moves to b (no STOPPED of another role in a, no STARTED
    of another in b). The release rule per role: a's iteration is held on
    the STOPPED of a resigned role, and the role is not won again (it stays
    out of the roster) until the iteration moves on."""
    roles = [unique("py-set-mem-%d" % i) for i in range(5)]
    advance = lambda: (krabka_clock.advance(100), time.sleep(0.002))  # noqa: E731
    with krabka_cluster.client(LEASES) as ca, krabka_cluster.client(LEASES) as cb:
        sa = ca.elector_set("a")
        la = Log(sa)
        for r in roles:
            sa.add(r)
        until(lambda: len(la.holding()) == 5, "a holds every role", advance)
        assert len(sa) == 5 and sa.held_count == 5
        assert all(sa.state(r) in (kc.ElectorState.HOLDING, kc.ElectorState.AT_RISK) for r in roles)
        sb = cb.elector_set("b")
        lb = Log(sb)
        for r in roles:
            sb.add(r)
        until(lambda: all([e.member for e in ca.describe(r, timeout=WAIT).roster] == ["a", "b"] for r in roles),
              "b stands by for every role", advance)
        tokens = {r: e.token for r, e in la.holding().items()}
        sa.remove(roles[0], timeout=WAIT)
        until(lambda: lb.count(roles[0], STARTED) == 1, "b wins the removed role", advance)
        assert lb.holding()[roles[0]].token.supersedes(tokens[roles[0]])
        until(lambda: la.count(roles[0], ENDED) == 1, "a's removed role ends", advance)  # (a's reader thread)
        stop = [e for e in la.of(roles[0]) if e.kind == STOPPED]
        assert len(stop) == 1 and stop[0].stop_reason == kc.StopReason.RESIGNED
        for r in roles[1:]:
            assert la.count(r, STOPPED) == 0 and lb.count(r, STARTED) == 0, "%s moved with %s" % (r, roles[0])
            assert la.holding()[r].token == tokens[r]
        with pytest.raises(kc.InvalidArgumentError, match="not in the set"):
            sa.state(roles[0])
        sa.close()
        sb.close()
        la.t.join(WAIT)
        lb.t.join(WAIT)
        check_pairs(la, roles)
        check_pairs(lb, roles)
        # every role ended at close, held ones resigned
        for r in roles[1:]:
            assert la.count(r, ENDED) == 1 and la.of(r)[-1].kind == ENDED and la.of(r)[-1].error is None
            assert la.count(r, STOPPED) == 1
        assert lb.count(roles[0], STOPPED) == 1

    # the release rule: one role resigned under a set whose iteration stands
    # on that role's STOPPED
    def next_started(s: kc.ElectorSet, what: str) -> kc.RoleEvent:
        """s's next STARTED, moving the clock while it waits."""
        end = time.monotonic() + WAIT
        ev = s.next_event(0.01)
        while ev is None or ev.kind != STARTED:
            assert time.monotonic() < end, what
            advance()
            ev = s.next_event(0.01)
        return ev

    role = unique("py-set-release")
    with krabka_cluster.client(LEASES) as ca, krabka_cluster.client(LEASES) as cb:
        with ca.elector_set("a") as sa, cb.elector_set("b") as sb:
            sa.add(role)
            ev = next_started(sa, "a never won")
            sb.add(role)
            until(lambda: [e.member for e in ca.describe(role, timeout=WAIT).roster] == ["a", "b"], "b stands by",
                  advance)
            assert ev.leadership is not None
            ev.leadership.resign(timeout=WAIT)
            stop = sa.next_event(WAIT)
            while stop is not None and stop.kind != STOPPED:
                stop = sa.next_event(WAIT)
            assert stop is not None and stop.role == role and stop.term == 1
            # the iteration stands on the STOPPED: a stays out of the roster
            next_started(sb, "b never won")
            assert [e.member for e in ca.describe(role, timeout=WAIT).roster] == ["b"]
            sb.remove(role, timeout=WAIT)
            for _ in range(20):
                advance()
            assert "a" not in [e.member for e in ca.describe(role, timeout=WAIT).roster]
            # moving on releases it: a wins term 2
            nxt = next_started(sa, "a never won again")
            assert isinstance(nxt, kc.TermEvent)
            assert nxt.role == role and nxt.term == 2


# ---- on real brokers ------------------------------------------------------------------------

CLUSTERS = [("tv2", "KRABKA_BOOTSTRAP"), ("tv1", "KRABKA_BOOTSTRAP_TV1")]


def bootstrap_of(env: str) -> str:
    addr = os.environ.get(env)
    if not addr:
        pytest.fail("%s is not set: the elector set tests need the brokers of `make test`" % env, pytrace=False)
    return addr


@pytest.mark.parametrize("tv,env", CLUSTERS)
def test_a_set_takes_every_role_of_a_dead_one(tv: str, env: str) -> None:
    """a holds ROLES roles; b's set (read with `async for`) stands by; a's
    client is closed: each of a's roles ends (ClosedError), and b takes every
    role, each STARTED tagged with its role and its token superseding a's."""
    bootstrap = bootstrap_of(env)
    roles = [unique("py-set-%s-%02d" % (tv, i)) for i in range(ROLES)]
    ca = kc.Client({"bootstrap.servers": bootstrap, "client.id": "py-set-a", **LEASES})
    cb = kc.Client({"bootstrap.servers": bootstrap, "client.id": "py-set-b", **LEASES})
    try:
        sa = ca.elector_set("a")
        la = Log(sa)
        for r in roles:
            sa.add(r)
        until(lambda: len(la.holding()) == ROLES, "a holds every role")
        a_tokens = {r: e.token for r, e in la.holding().items()}

        async def run_b() -> Dict[str, kc.RoleEvent]:
            won: Dict[str, kc.RoleEvent] = {}
            async with cb.elector_set("b") as sb:
                for r in roles:
                    sb.add(r)
                loop = asyncio.get_running_loop()
                for r in roles:
                    await loop.run_in_executor(None, lambda r=r: until(
                        lambda: [e.member for e in cb.describe(r, timeout=WAIT).roster] == ["a", "b"],
                        "b stands by for " + r))
                ca.close()  # a dies: its leaderships end without resigning
                async def take() -> None:
                    async for ev in sb:
                        if ev.kind == STARTED:
                            won[ev.role] = ev
                            if len(won) == ROLES:
                                return
                await asyncio.wait_for(take(), WAIT * 2)
                assert sb.held_count == ROLES
            return won

        won = asyncio.run(run_b())
        assert sorted(won) == sorted(roles)
        for r, ev in won.items():
            assert ev.role == r and ev.holder == "b" and ev.leadership is not None and ev.leadership.role == r
            assert ev.token.supersedes(a_tokens[r]), "%s: b's token %s, a's %s" % (r, ev.token, a_tokens[r])
        until(lambda: all(la.count(r, ENDED) == 1 for r in roles), "a's roles end")
        for r in roles:
            end = la.of(r)[-1]
            assert end.kind == ENDED and isinstance(end.error, kc.ClosedError), "%s: %r" % (r, end)
            stops = [e.stop_reason for e in la.of(r) if e.kind == STOPPED]
            assert stops == [kc.StopReason.CLOSED], "%s: a's term ended %r (want CLOSED, no resignation)" % (r, stops)
        sa.close()
        la.t.join(WAIT)
        check_pairs(la, roles)
    finally:
        ca.close()
        cb.close()
