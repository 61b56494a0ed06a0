"""The elector (client.elect -> Elector, Term) on real brokers
(KRABKA_BOOTSTRAP, KRABKA_BOOTSTRAP_TV1, and KRABKA_BOOTSTRAP_X1 for the cut
link), plus misuse without a broker. They fail, never skip, when a broker is
not given. The elector's own logic (a term block left early, the release
rule, eligibility, no re-campaign) is tested on the in-process cluster in
test_elect_mem.py. Waits are bounded (WAIT) only so that a broken test ends; no
assertion is about timing: takeover times are printed, not checked."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

import krabka_coord as kc
from conftest import REPO, KafkaTools, Proxy, unique

HERE = Path(__file__).resolve().parent
WAIT = 60.0  # seconds: the bound of one wait (a broken test ends), not a timing check

STARTED, AT_RISK, RECOVERED, STOPPED, NEW_LEADER = (
    kc.TermEventKind.STARTED, kc.TermEventKind.AT_RISK, kc.TermEventKind.RECOVERED,
    kc.TermEventKind.STOPPED, kc.TermEventKind.NEW_LEADER)

LEASES = {
    "krabka.lease.ms": 2000,
    "krabka.renew.interval.ms": 500,
    "krabka.challenge.stagger.ms": 500,
    "krabka.poll.interval.ms": 200,
}

NOWHERE = {"bootstrap.servers": "127.0.0.1:9", "request.timeout.ms": 2000}


def conf(bootstrap: str, **extra: object) -> Dict[str, Any]:
    c: Dict[str, Any] = {"bootstrap.servers": bootstrap}
    c.update(LEASES)
    c.update(extra)
    return c


def check_log(log: List[kc.TermEvent]) -> int:
    """The event log of one elector: STARTED and STOPPED alternate, starting
    with STARTED; each STOPPED carries its STARTED's term number; terms
    count 1, 2, ...; AT_RISK / RECOVERED only inside a term. Returns the
    number of terms."""
    expect, open_ = 1, None
    for ev in log:
        if ev.kind == STARTED:
            assert open_ is None, "STARTED %d before the STOPPED of %s: %r" % (ev.term, open_, log)
            assert ev.term == expect, "term %d where %d was due: %r" % (ev.term, expect, log)
            open_ = ev.term
        elif ev.kind in (AT_RISK, RECOVERED, kc.TermEventKind.SUSPENDED):
            assert open_ == ev.term, "%s of term %d outside it: %r" % (ev.kind.name, ev.term, log)
        elif ev.kind == STOPPED:
            assert open_ == ev.term, "STOPPED %d without its STARTED: %r" % (ev.term, log)
            assert ev.stop_reason != kc.StopReason.NONE and ev.error is not None
            open_ = None
            expect += 1
        else:
            raise AssertionError("unexpected %r in a term's events" % (ev,))
    assert open_ is None, "term %s never stopped: %r" % (open_, log)
    return expect - 1


def roster(client: kc.Client, role: str) -> List[str]:
    return [e.member for e in client.describe(role, timeout=WAIT).roster]


def wait_roster(client: kc.Client, role: str, want: List[str]) -> None:
    end = time.monotonic() + WAIT
    got = roster(client, role)
    while got != want and time.monotonic() < end:
        time.sleep(0.1)
        got = roster(client, role)
    assert got == want, "roster %r, expected %r" % (got, want)


# ---------------------------------------------------------------------------
# Members: in this process, and in a process of their own
# ---------------------------------------------------------------------------


class Member:
    """A member in this process: a client, its current elector, and the
    event log of every elector it ran (one list each)."""

    def __init__(self, bootstrap: str, role: str, name: str) -> None:
        self.bootstrap, self.role, self.name = bootstrap, role, name
        self.client = kc.Client(conf(bootstrap))
        self.logs: List[List[kc.TermEvent]] = []
        self.term: Optional[kc.Term] = None
        self.start()

    def start(self) -> None:
        self.elector = self.client.elect(self.role, self.name)
        self.logs.append([])

    def wait_term(self) -> kc.Term:
        t = self.elector.next_term(timeout=WAIT)
        assert t is not None, "%s won no term" % self.name
        self.term = t
        return t

    def record_stop(self) -> "kc.StopReason":
        t = self.term
        assert t is not None
        with t:  # leaving it hands the stopped term back (the elector may campaign again)
            r = t.wait_stopped(timeout=WAIT)
        assert r is not None, "term %d of %s never stopped" % (t.number, self.name)
        self.logs[-1].extend(t.events())  # STARTED ... STOPPED, then the iteration ends
        self.term = None
        return r

    def close(self) -> None:
        self.elector.close()
        self.client.close()


class ProcessMember:
    """elect_member.py in a subprocess; its JSON lines come through a queue."""

    def __init__(self, bootstrap: str, role: str, name: str) -> None:
        self.name = name
        self.p = subprocess.Popen([sys.executable, str(HERE / "elect_member.py"), bootstrap, role, name],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.lines: "queue.Queue[Dict[str, Any]]" = queue.Queue()
        self.log: List[Dict[str, Any]] = []
        self.killed = False
        threading.Thread(target=self._read, daemon=True).start()
        assert self.next()["event"] == "ready"

    def _read(self) -> None:
        for line in self.p.stdout:  # type: ignore[union-attr]
            self.lines.put(json.loads(line))
        self.lines.put({"event": "eof"})

    def next(self) -> Dict[str, Any]:
        got = self.lines.get(timeout=WAIT)
        if got["event"] in ("started", "stopped"):
            self.log.append(got)
        return got

    def wait(self, event: str) -> Dict[str, Any]:
        got = self.next()
        assert got["event"] == event, "%s: %r, expected %s" % (self.name, got, event)
        return got

    def leave(self) -> None:
        self.p.stdin.close()  # type: ignore[union-attr]
        assert self.wait("stopped")["reason"] == "RESIGNED"
        assert self.wait("left")
        assert self.p.wait(timeout=WAIT) == 0

    def kill(self) -> None:
        self.killed = True
        self.p.kill()
        self.p.wait(timeout=WAIT)

    def check_log(self, killed: bool) -> None:
        """started/stopped alternate with the same term, counting up; a
        killed process may end inside a term."""
        expect, open_ = 1, None
        for ev in self.log:
            if ev["event"] == "started":
                assert open_ is None and ev["term"] == expect, self.log
                open_ = ev["term"]
            else:
                assert ev["term"] == open_, self.log
                open_, expect = None, expect + 1
        assert (open_ is not None) == killed, self.log


# ---------------------------------------------------------------------------
# Failovers
# ---------------------------------------------------------------------------


def _failovers(bootstrap: str, n: int) -> None:
    """Three members, A and B in this process and P in a process of its own,
    and n forced failovers of whoever holds: in-process holders leave their
    elector's block (close), withdraw (set_eligible(False)) or have their
    client closed abruptly; the process holder is killed (SIGKILL) or
    leaves. Each time the first standby in the roster must win, and the old
    holder comes back at the tail."""
    role = unique("py-elect-failover")
    a = Member(bootstrap, role, "a")
    first = a.wait_term()
    b = Member(bootstrap, role, "b")
    p: Optional[ProcessMember] = ProcessMember(bootstrap, role, "p")
    procs: List[ProcessMember] = [p]
    members: Dict[str, Any] = {"a": a, "b": b, "p": p}
    wait_roster(a.client, role, ["a", "b", "p"])
    holder = "a"
    assert first.number == 1
    kinds_in = ["leave", "ineligible", "close"]
    kinds_p = ["kill", "leave"]
    seen: Dict[str, List[float]] = {}
    done: List[str] = []
    step = step_p = 0
    try:
        while len(done) < n:
            order = roster(a.client if holder != "a" else b.client, role)
            assert order[0] == holder, "roster %r with holder %s" % (order, holder)
            winner = order[1]
            if holder == "p":
                kind = kinds_p[step_p % len(kinds_p)]
                step_p += 1
            else:
                kind = kinds_in[step % len(kinds_in)]
                step += 1
            h = members[holder]
            t0 = time.monotonic()
            if kind == "kill":
                h.kill()
            elif kind == "leave" and holder == "p":
                h.leave()
            elif kind == "leave":
                h.elector.close()  # what leaving its with block does
                assert h.record_stop() == kc.StopReason.RESIGNED
            elif kind == "ineligible":
                h.elector.set_eligible(False)
                assert h.record_stop() == kc.StopReason.RESIGNED
            elif kind == "close":
                h.client.close()
                assert h.record_stop() == kc.StopReason.CLOSED
                assert h.elector.next_term(timeout=WAIT) is None  # the loop ended with its client
            # the standby first in the roster takes over
            w = members[winner]
            if winner == "p":
                got = w.wait("started")
                token = kc.FencingToken.parse(got["token"])
            else:
                token = w.wait_term().token
            took = time.monotonic() - t0
            seen.setdefault(kind, []).append(took)
            done.append("%s:%s->%s" % (kind, holder, winner))
            # the old holder comes back as a standby, at the tail
            if kind in ("kill", "leave") and holder == "p":
                p = ProcessMember(bootstrap, role, "p")
                procs.append(p)
                members["p"] = p
            elif kind == "leave":
                h.start()
            elif kind == "ineligible":
                h.elector.set_eligible(True)
            elif kind == "close":
                h.elector.close()
                h.client = kc.Client(conf(bootstrap))
                h.start()
            wait_roster(members["a" if winner != "a" else "b"].client, role,
                        [winner] + [m for m in order[2:]] + [holder])
            assert token.producer_id >= 0
            holder = winner
    finally:
        for name in ("a", "b"):
            m = members[name]
            try:
                m.elector.close()
                if m.term is not None:
                    m.record_stop()
                m.client.close()
            except Exception:
                pass
        for pm in procs:
            if pm.p.poll() is None:
                try:
                    pm.p.stdin.close()  # type: ignore[union-attr]
                    pm.p.wait(timeout=WAIT)
                    while pm.next()["event"] != "eof":
                        pass
                finally:
                    if pm.p.poll() is None:
                        pm.p.kill()
                        pm.p.wait()
    print("\n%d failovers on %s: %s" % (len(done), bootstrap, " ".join(done)))
    for kind, times in sorted(seen.items()):
        print("  %-10s n=%d takeover ms: %s" % (kind, len(times), " ".join("%.0f" % (t * 1000) for t in times)))
    terms = 0
    for m in (a, b):
        for log in m.logs:
            terms += check_log(log)
    for i, pm in enumerate(procs):
        pm.check_log(killed=pm.killed)
    assert terms + sum(len([e for e in pm.log if e["event"] == "started"]) for pm in procs) == n + 1
    assert len(done) == n


def test_twenty_failovers_between_electors(bootstrap: str) -> None:
    _failovers(bootstrap, 20)


def test_failovers_on_transaction_version_1(bootstrap_tv1: str) -> None:
    _failovers(bootstrap_tv1, 6)


# ---------------------------------------------------------------------------
# Leaving the block resigns; the standby takes over
# ---------------------------------------------------------------------------


class Boom(Exception):
    pass


@pytest.mark.parametrize("tv", ["tv2", "tv1"])
def test_leaving_the_block_resigns_and_the_standby_takes_over(tv: str, bootstrap: str, bootstrap_tv1: str) -> None:
    """Leaving the elector's with block normally, by an exception and by
    KeyboardInterrupt resigns the held term (RESIGNED, delivered to the Term)
    and the standby wins at once."""
    addr = bootstrap if tv == "tv2" else bootstrap_tv1
    role = unique("py-elect-exit")
    with kc.Client(conf(addr)) as ca, kc.Client(conf(addr)) as cb:
        sb = cb.elect(role, "standby", eligible=False)
        sb_log: List[kc.TermEvent] = []
        try:
            for how in ("normal", "exception", "KeyboardInterrupt"):
                held: List[kc.Term] = []
                with pytest.raises(Boom if how == "exception" else KeyboardInterrupt) if how != "normal" else _nothing():
                    with ca.elect(role, "holder-" + how) as el:
                        t = el.next_term(timeout=WAIT)
                        assert t is not None and t.active
                        held.append(t)
                        sb.set_eligible(True)
                        wait_roster(ca, role, ["holder-" + how, "standby"])
                        t0 = time.monotonic()
                        if how == "exception":
                            raise Boom()
                        if how == "KeyboardInterrupt":
                            raise KeyboardInterrupt()
                t = held[0]
                assert t.stop_reason == kc.StopReason.RESIGNED and not t.active
                assert isinstance(t.error, kc.NotLeaderError)
                assert el.closed and el.next_term(timeout=1) is None
                with pytest.raises(kc.NotLeaderError):  # the handle was closed with the term
                    t.produce("any-topic", b"late")
                won = sb.next_term(timeout=WAIT)
                took = time.monotonic() - t0
                assert won is not None and won.member == "standby"
                assert won.token.supersedes(t.token)
                assert cb.describe(role).holder == "standby"
                print("\n%s: block left (%s): the standby STARTED after %.0f ms" % (tv, how, took * 1000))
                # the standby withdraws for the next round (a holder: it resigns)
                sb.set_eligible(False)
                assert won.wait_stopped(timeout=WAIT) == kc.StopReason.RESIGNED
                assert sb.next_term(timeout=0.5) is None  # hands it back; withdrawn: no term
                assert check_log(list(t.events())) == 1
                sb_log.extend(won.events())
        finally:
            sb.close()
        assert check_log(sb_log) == 3


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: Any) -> None:
        return None



# ---------------------------------------------------------------------------
# The release rule, re-campaigns after losses
# ---------------------------------------------------------------------------



@pytest.mark.parametrize("tv", ["tv2", "tv1"])
def test_a_fenced_term_stops_and_the_elector_campaigns_again(tv: str, bootstrap: str, bootstrap_tv1: str) -> None:
    """Another client acquires the role under the same member id (a
    restarted process): the elector's term is fenced (FENCED, FencedError);
    the elector campaigns again and wins term 2."""
    addr = bootstrap if tv == "tv2" else bootstrap_tv1
    role = unique("py-elect-fenced")
    with kc.Client(conf(addr)) as ca, kc.Client(conf(addr)) as other:
        with ca.elect(role, "a") as ea:
            t1 = ea.next_term(timeout=WAIT)
            assert t1 is not None
            restarted = other.acquire(role, "a", timeout=WAIT)
            assert restarted.token.supersedes(t1.token)
            assert t1.wait_stopped(timeout=WAIT) == kc.StopReason.FENCED
            assert isinstance(t1.error, kc.FencedError)
            with pytest.raises((kc.FencedError, kc.NotLeaderError)):
                t1.produce("any-topic", b"zombie")
            # the elector campaigns again (the same member id: it takes over
            # at once, superseding the other client's leadership in turn)
            t2 = ea.next_term(timeout=WAIT)
            assert t2 is not None and t2.number == 2 and t2.token.supersedes(restarted.token)
            assert t2.active and t2.leadership.token == t2.token
            assert restarted.wait_ended(timeout=WAIT) == kc.LeadershipState.FENCED
            restarted.close()
            assert ea.healthy
            wait = time.monotonic() + WAIT
            while (ea.leader is None or ea.leader.token != t2.token) and time.monotonic() < wait:
                time.sleep(0.05)
            assert ea.leader is not None and ea.leader.holder == "a" and ea.leader.token == t2.token
        check_log(list(t1.events()) + list(t2.events()))


def test_at_risk_before_the_term_stops_on_a_cut_link(kproxy: Path) -> None:
    """A client whose every connection goes through kproxy wins a term; the
    link is cut (silent): AT_RISK comes strictly before the term stops with
    LOST_AT_RISK (or EXPIRED); the elector is unhealthy meanwhile; healed, it
    campaigns again and wins term 2."""
    x1 = os.environ.get("KRABKA_BOOTSTRAP_X1")
    target = os.environ.get("KRABKA_BOOTSTRAP_X1_TARGET")
    if not x1 or not target:
        pytest.fail("KRABKA_BOOTSTRAP_X1 / KRABKA_BOOTSTRAP_X1_TARGET are not set: this test needs the tv2 cluster's "
                    "extra listener (make test sets them; cluster.sh start --extra-listeners 1:ADV and "
                    "cluster.sh env print them).", pytrace=False)
    role = unique("py-elect-cut")
    proxy = Proxy(kproxy, x1, target)
    try:
        with kc.Client(conf(x1, **{"krabka.lease.ms": 3000, "krabka.renew.interval.ms": 1000,
                                   "request.timeout.ms": 2000})) as c:
            with c.elect(role, "a") as el:
                t1 = el.next_term(timeout=WAIT)
                assert t1 is not None and el.healthy and not t1.at_risk
                proxy.command("cut")
                t0 = time.monotonic()
                events = t1.events()
                kinds = []
                health_at_risk: Optional[kc.Health] = None
                state_at_risk: Optional[kc.ElectorState] = None
                for ev in events:
                    kinds.append(ev.kind)
                    if ev.kind == AT_RISK and health_at_risk is None:
                        state_at_risk = el.state
                        health_at_risk = el.healthy
                        at_risk_at = time.monotonic()
                        assert ev.term == 1 and ev.deadline_ms > 0
                stop = t1.stop_reason
                assert AT_RISK in kinds and kinds.index(AT_RISK) < kinds.index(STOPPED), kinds
                assert kinds[-1] == STOPPED
                assert stop in (kc.StopReason.LOST_AT_RISK, kc.StopReason.EXPIRED), stop
                assert isinstance(t1.error, kc.LeaseExpiredError)
                assert health_at_risk is not None
                # Read before the stop came: AT_RISK (and unhealthy); read
                # after it: between terms.
                assert state_at_risk in (kc.ElectorState.AT_RISK, kc.ElectorState.CAMPAIGNING), state_at_risk
                if state_at_risk == kc.ElectorState.AT_RISK:
                    assert not health_at_risk
                print("\ncut link: AT_RISK %.0f ms after the cut, then %s %.0f ms later"
                      % ((at_risk_at - t0) * 1000, stop.name, (time.monotonic() - at_risk_at) * 1000))
                proxy.command("heal")
                t2 = el.next_term(timeout=WAIT)  # the re-campaign after the loss
                assert t2 is not None and t2.number == 2 and t2.token.supersedes(t1.token)
            check_log(list(t1.events()) + list(t2.events()))
    finally:
        proxy.close()


def test_a_term_rides_out_a_cut_link_with_ride_outage(kproxy: Path) -> None:
    """krabka.elector.ride.outage: the only link to the cluster is cut past
    the lease deadline; the term is SUSPENDED (state SUSPENDED, unhealthy,
    never stopped) and, healed, RECOVERED under the same token."""
    x1 = os.environ.get("KRABKA_BOOTSTRAP_X1")
    target = os.environ.get("KRABKA_BOOTSTRAP_X1_TARGET")
    if not x1 or not target:
        pytest.fail("KRABKA_BOOTSTRAP_X1 / KRABKA_BOOTSTRAP_X1_TARGET are not set: this test needs the tv2 cluster's "
                    "extra listener (make test sets them).", pytrace=False)
    role = unique("py-elect-ride")
    proxy = Proxy(kproxy, x1, target)
    try:
        with kc.Client(conf(x1, **{"krabka.lease.ms": 3000, "krabka.renew.interval.ms": 1000,
                                   "request.timeout.ms": 2000, "krabka.elector.ride.outage": "true"})) as c:
            with c.elect(role, "a") as el:
                t1 = el.next_term(timeout=WAIT)
                assert t1 is not None and el.state == kc.ElectorState.HOLDING
                proxy.command("cut")
                events = t1.events()
                for ev in events:
                    if ev.kind == kc.TermEventKind.SUSPENDED:
                        break
                    assert ev.kind in (kc.TermEventKind.STARTED, AT_RISK), ev
                assert t1.suspended and t1.active and el.state == kc.ElectorState.SUSPENDED and not el.healthy
                time.sleep(4.0)  # past the lease deadline: the term is kept
                assert t1.active and t1.suspended and t1.stop_reason is None
                proxy.command("heal")
                ev = events.next(timeout=WAIT)
                assert ev is not None and ev.kind == kc.TermEventKind.RECOVERED, ev
                assert ev.token == t1.token and not t1.suspended and t1.active
                assert el.state == kc.ElectorState.HOLDING and el.healthy
                st = c.describe(role, timeout=WAIT)
                assert st.holder == "a" and st.token == t1.token and st.current
    finally:
        proxy.close()


# ---------------------------------------------------------------------------
# asyncio
# ---------------------------------------------------------------------------


def test_async_with_and_async_for(bootstrap: str, kafka_tools: KafkaTools) -> None:
    role = unique("py-elect-async")
    topic = unique("py-elect-async-topic")
    kafka_tools.create_topic(bootstrap, topic)

    async def main() -> None:
        ticks = 0
        stop_ticking = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop_ticking.is_set():
                ticks += 1
                # 1 ms: an in-process handoff can take under 10 ms, and the
                # ticks below must show the loop ran meanwhile.
                await asyncio.sleep(0.001)

        tick_task = asyncio.ensure_future(ticker())
        async with kc.Client(conf(bootstrap)) as ca, kc.Client(conf(bootstrap)) as cb:
            async with ca.elect(role, "a") as ea:
                n = 0
                async for term in ea:
                    async with term:
                        assert term.active and term.number == n + 1
                        res = await term.produce_async(topic, b"term %d" % term.number)
                        assert res.offset >= 0
                    assert term.stop_reason == kc.StopReason.RESIGNED
                    assert [e.kind async for e in term.events()] == [STARTED, STOPPED]
                    n += 1
                    if n == 2:
                        break
            assert ea.closed
            # the cancelled task's term is resigned, and the standby takes over
            eb = cb.elect(role, "b", eligible=False)  # a standby only once a holds
            got: "asyncio.Queue[kc.Term]" = asyncio.Queue()

            async def holder() -> None:
                async with ca.elect(role, "a") as el:
                    async for t in el:
                        await got.put(t)
                        await t.stopped()

            task = asyncio.ensure_future(holder())
            t_a = await asyncio.wait_for(got.get(), WAIT)
            await eb.set_eligible_async(True)
            end = time.monotonic() + WAIT
            while [e.member for e in (await cb.describe_async(role)).roster] != ["a", "b"]:
                assert time.monotonic() < end, "b never registered behind a"
                await asyncio.sleep(0.1)
            before = ticks
            t0 = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert t_a.stop_reason == kc.StopReason.RESIGNED
            t_b = await asyncio.wait_for(eb.__anext__(), WAIT)
            print("\nasync: cancelled holder, the standby STARTED after %.0f ms" % ((time.monotonic() - t0) * 1000))
            assert t_b.member == "b" and t_b.token.supersedes(t_a.token)
            assert ticks > before  # the loop ran while the elector waited
            await eb.set_eligible_async(False)
            assert await t_b.stopped() == kc.StopReason.RESIGNED
            await eb.set_eligible_async(True)
            await eb.close_async()
            await eb.close_async()  # idempotent
            with pytest.raises(kc.ClosedError):
                await eb.set_eligible_async(True)
        stop_ticking.set()
        await tick_task

    asyncio.run(main())
    # the written records: one per term
    values = sorted(r["value"] for r in kafka_tools.read(bootstrap, topic))
    assert values == ["term 1", "term 2"], values


# ---------------------------------------------------------------------------
# The example controller
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_example_controller_writes_inside_its_term_and_resigns_on_a_signal(sig: int, bootstrap: str,
                                                                           kafka_tools: KafkaTools) -> None:
    role = unique("py-elect-controller")
    topic = unique("py-elect-commands")
    kafka_tools.create_topic(bootstrap, topic)
    p = subprocess.Popen([sys.executable, str(REPO / "examples" / "python" / "controller.py"), bootstrap, role,
                          "node-1", topic], stdout=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": str(HERE.parent / "src")})
    lines: "queue.Queue[str]" = queue.Queue()

    def read() -> None:
        for line in p.stdout:  # type: ignore[union-attr]
            lines.put(line.rstrip("\n"))
        lines.put("<eof>")

    threading.Thread(target=read, daemon=True).start()
    try:
        seen: List[str] = []
        while not any(s.startswith("dispatched") for s in seen):
            seen.append(lines.get(timeout=WAIT))
        assert any(s.startswith("leading term 1") for s in seen), seen
        with kc.Client(conf(bootstrap)) as c:
            st = c.describe(role)
            assert st.holder == "node-1" and st.current
            with c.elect(role, "standby") as sb:
                wait_roster(c, role, ["node-1", "standby"])
                p.send_signal(sig)
                assert p.wait(timeout=WAIT) == 0
                won = sb.next_term(timeout=WAIT)  # the resign hands over at once
                assert won is not None and won.member == "standby"
        while True:
            s = lines.get(timeout=WAIT)
            if s == "<eof>":
                break
            seen.append(s)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    dispatched = [s for s in seen if s.startswith("dispatched")]
    assert any(s.startswith("term 1 stopped: RESIGNED") for s in seen), seen
    values = [r["value"] for r in kafka_tools.read(bootstrap, topic)]
    assert len(values) == len(dispatched) >= 1, (values, dispatched)
    assert values == ["command %d" % (i + 1) for i in range(len(values))], values


# ---------------------------------------------------------------------------
# Misuse (no broker)
# ---------------------------------------------------------------------------


@pytest.fixture
def nowhere() -> Iterator[kc.Client]:
    c = kc.Client(NOWHERE)
    yield c
    c.close()


@pytest.mark.parametrize("role, member, exc, words", [
    (None, "m", TypeError, "role must be str or bytes"),
    ("r", None, TypeError, "member must be str or bytes"),
    (42, "m", TypeError, "role"),
    ("", "m", ValueError, "role"),
    ("r", "", ValueError, "member"),
    ("r" * 250, "m", ValueError, "role"),
    ("r", "m" * 1000, ValueError, "member"),
    (b"\xff\xfe", "m", ValueError, "UTF-8"),
    ("r", b"\xc3", ValueError, "UTF-8"),
    ("r", "\udc80", ValueError, "UTF-8"),
])
def test_bad_names_are_refused_naming_the_problem(nowhere: kc.Client, role: Any, member: Any, exc: type,
                                                  words: str) -> None:
    with pytest.raises(exc) as ei:
        nowhere.elect(role, member)
    assert words.lower() in str(ei.value).lower(), str(ei.value)


def test_bad_options_and_a_closed_client(nowhere: kc.Client) -> None:
    with pytest.raises(TypeError, match="recampaign must be bool"):
        nowhere.elect("r", "m", recampaign=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="eligible must be bool"):
        nowhere.elect("r", "m", eligible=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="metadata"):
        nowhere.elect("r", "m", metadata="text")  # type: ignore[arg-type]
    with pytest.raises(kc.InvalidArgumentError):
        nowhere.elect("r", "m", metadata=b"x" * (kc.MAX_METADATA_BYTES + 1))
    c = kc.Client(NOWHERE)
    c.close()
    with pytest.raises(kc.ClosedError, match="Client was closed"):
        c.elect("r", "m")


def test_use_after_close_and_bad_arguments_of_the_elector(nowhere: kc.Client) -> None:
    el = nowhere.elect("r", "m")
    assert not el.closed and el.eligible
    assert el.healthy  # campaigning (the broker is unreachable: it keeps trying)
    assert el.state == kc.ElectorState.CAMPAIGNING and el.error is None
    with pytest.raises(TypeError, match="eligible must be bool"):
        el.set_eligible(1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        el.set_eligible(False, timeout=-1)
    with pytest.raises(TypeError, match="timeout"):
        el.next_term(timeout="soon")  # type: ignore[arg-type]
    assert el.next_term(timeout=0.2) is None
    assert el.leader is None
    el.close()
    el.close()  # idempotent
    assert el.closed and repr(el).endswith("closed>")
    h = el.healthy
    assert not h and el.state == kc.ElectorState.STOPPED and el.error is None
    with pytest.raises(kc.ClosedError, match="Elector was closed"):
        el.set_eligible(True)
    assert el.next_term() is None
    assert list(el) == []
    assert list(el.leaders()) == []

    async def after() -> None:
        assert [t async for t in el] == []
        with pytest.raises(kc.ClosedError):
            await el.set_eligible_async(False)

    asyncio.run(after())


def test_a_client_closed_under_a_standing_by_elector_ends_the_iteration() -> None:
    c = kc.Client(NOWHERE)
    el = c.elect("r", "m")
    done: List[Optional[kc.Term]] = []
    th = threading.Thread(target=lambda: done.append(el.next_term()))
    th.start()
    c.close()
    th.join(WAIT)
    assert not th.is_alive() and done == [None]
    assert el.state == kc.ElectorState.STOPPED and not el.healthy
    assert isinstance(el.error, kc.ClosedError)
    el.close()


def test_ctrl_c_interrupts_waiting_for_a_term(nowhere: kc.Client, sigint_raises: None) -> None:
    el = nowhere.elect("r", "m")
    try:
        timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            for _ in el:
                pass
        timer.join()
    finally:
        el.close()
    assert el.closed
