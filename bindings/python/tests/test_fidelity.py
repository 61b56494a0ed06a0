"""Fidelity of the in-process cluster (krabka_coord.testing): the same
scenarios run on it and on a real broker, and each test compares what the
binding reported on both, step by step: the events, the errors (by class),
the states, who holds, what was committed.

Scenarios: election, renewal, resign, kill, pause past the lease, at-risk
under a cut link, blind successor then a refused write, watch events,
elector term events. Real brokers: KRABKA_BOOTSTRAP (transaction.version 2)
for every scenario, KRABKA_BOOTSTRAP_TV1 for the ones that depend on the
transaction protocol (resign, kill, blind); the cut link needs
KRABKA_BOOTSTRAP_X1 and its target (kproxy). They fail, never skip, when a
variable is missing (make test sets them all).

What must differ, and is therefore not compared:
- time itself: on the in-process cluster time passes when the test advances
  the manual clock; on a broker the test sleeps through it. Deadlines are
  compared relative to each run (later than before), never as instants.
- at-risk under a cut link: whether the term stops LOST_AT_RISK or EXPIRED
  depends on which of two timers fires first (a timing): the comparison
  accepts either on both, and compares the rest (AT_RISK strictly before
  STOPPED, LeaseExpiredError, the re-campaign's term 2).
- pause past the lease: whether the resumed holder's write is refused by
  its view of the log (FencedError) or by its own expired deadline
  (LeaseExpiredError) depends on which runs first after the resume (a
  timing): either is "refused, fatal"; the record being absent is compared.
- watch: ROSTER_CHANGED and LEASE_RENEWED events come with the timing of
  registrations and renewals; only the holder changes are compared.

Each comparison is written to build/testing/fidelity/python-<scenario>-<tv>.json
({"mem": [...], "real": [...], "same": bool}) for the closing note.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

import krabka_coord as kc
from krabka_coord.testing import Cluster
from conftest import REPO, KafkaTools, unique

HERE = Path(__file__).resolve().parent
WAIT = 60.0  # seconds: the bound of one wait, not a timing check
# Leases long enough that a loaded machine (the suites of several checkouts
# at once) does not run one out between two steps on the broker; the
# scenarios that need time to pass wait a renewal interval or a lease.
LEASE_MS, RENEW_MS = 6000, 2000
LEASES: Dict[str, object] = {"krabka.lease.ms": LEASE_MS, "krabka.renew.interval.ms": RENEW_MS,
                             "krabka.challenge.stagger.ms": 500, "krabka.poll.interval.ms": 200}
Obs = List[Tuple[Any, ...]]


class Env:
    """Where a scenario runs; the scenario itself is the same code."""

    name = ""
    poll = 0.001

    def client(self, **extra: object) -> kc.Client:
        raise NotImplementedError

    def elapse(self, ms: int) -> None:
        """Lets ms of the cluster's time pass."""
        raise NotImplementedError

    def until(self, cond: Callable[[], bool], what: str, step_ms: int = 0) -> None:
        """Waits (bounded) until cond(); step_ms > 0: lets that much of the
        cluster's time pass between two checks (timers that need it)."""
        end = time.monotonic() + WAIT
        while not cond():
            if time.monotonic() > end:
                raise AssertionError("%s: gave up waiting for %s" % (self.name, what))
            if step_ms:
                self.elapse(step_ms)
            time.sleep(self.poll)

    def kill(self, client: kc.Client) -> None:
        raise NotImplementedError

    def blind(self, role: str) -> kc.FencingToken:
        """A blind successor of role (for a holder made by client(blind=True))."""
        raise NotImplementedError

    def topic(self) -> str:
        raise NotImplementedError

    def values(self, topic: str) -> List[bytes]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class MemEnv(Env):
    name = "mem"

    def __init__(self) -> None:
        self.cluster = Cluster()
        self.commands = "commands"

    def client(self, **extra: object) -> kc.Client:
        extra.pop("blind", None)
        conf = dict(LEASES)
        conf.update(extra)  # type: ignore[arg-type]
        return self.cluster.client(conf)  # type: ignore[arg-type]

    def elapse(self, ms: int) -> None:
        self.cluster.clock.advance(ms)

    def kill(self, client: kc.Client) -> None:
        self.cluster.kill(client)
        client.close()

    def blind(self, role: str) -> kc.FencingToken:
        return self.cluster.mint(role)

    def topic(self) -> str:
        return self.commands

    def values(self, topic: str) -> List[bytes]:
        return [v or b"" for v in self.cluster.values(topic)]

    def close(self) -> None:
        self.cluster.close()


class RealEnv(Env):
    poll = 0.02

    def __init__(self, name: str, bootstrap: str, tools: KafkaTools) -> None:
        self.name = name
        self.bootstrap = bootstrap
        self.tools = tools
        self.clients: List[kc.Client] = []
        self.coordination = unique("py-fid-coord")  # the blind successor follows another one
        self._topic: Optional[str] = None

    def client(self, **extra: object) -> kc.Client:
        blind = extra.pop("blind", False)
        conf: Dict[str, object] = {"bootstrap.servers": extra.pop("bootstrap", self.bootstrap)}
        conf.update(LEASES)
        if blind:
            conf["krabka.topic"] = self.coordination
        conf.update(extra)
        c = kc.Client(conf)  # type: ignore[arg-type]
        self.clients.append(c)
        return c

    def elapse(self, ms: int) -> None:
        time.sleep(ms / 1000)

    def kill(self, client: kc.Client) -> None:
        client.close()  # ends its leaderships without resigning, as a dead process's

    def blind(self, role: str) -> kc.FencingToken:
        # Another coordination topic: its acquire mints the role's
        # transactional id again, and the holder's view never sees its lease.
        b = self.client(**{"krabka.topic": unique("py-fid-coord-b")})
        return b.acquire(role, "successor", timeout=WAIT).token

    def topic(self) -> str:
        if self._topic is None:
            self._topic = unique("py-fid-commands")
            self.tools.create_topic(self.bootstrap, self._topic, 1)
        return self._topic

    def values(self, topic: str) -> List[bytes]:
        return [(r.get("value") or "").encode() for r in self.tools.read(self.bootstrap, topic)]

    def close(self) -> None:
        for c in self.clients:
            c.close()


def kinds(events: List[kc.TermEvent]) -> List[str]:
    return [e.kind.name for e in events]


# ---------------------------------------------------------------------------
# The scenarios: the same code on both; each returns what it observed.
# ---------------------------------------------------------------------------


def election(env: Env, role: str) -> Obs:
    a, b = env.client(), env.client()
    la = a.acquire(role, "a", timeout=WAIT)
    obs: Obs = [("a acquired", la.state.name)]
    res = b.try_acquire(role, "b", timeout=WAIT)
    obs.append(("b try_acquire won", res.won, "retry_at given", res.retry_at is not None))
    st = a.describe(role, timeout=WAIT)
    obs.append(("describe", st.holder, st.token == la.token, st.current, [e.member for e in st.roster]))
    return obs


def renewal(env: Env, role: str) -> Obs:
    a = env.client()
    la = a.acquire(role, "a", timeout=WAIT)
    d0 = la.lease.deadline
    obs: Obs = [("due at once", la.renew_due)]
    env.elapse(RENEW_MS + 100)  # past krabka.renew.interval.ms
    obs.append(("due after the interval", la.renew_due))
    la.renew(timeout=WAIT)
    obs.append(("renew()", la.lease.deadline > d0, la.lease.token == la.token, la.state.name, la.renew_due))
    st = a.describe(role, timeout=WAIT)
    obs.append(("describe", st.holder, st.token == la.token, st.lease is not None and st.lease.deadline == la.lease.deadline))
    return obs


def resign(env: Env, role: str) -> Obs:
    a, b = env.client(), env.client()
    la = a.acquire(role, "a", timeout=WAIT)
    assert not b.try_acquire(role, "b", timeout=WAIT).won  # b registers
    la.resign(timeout=WAIT)
    obs: Obs = [("a after resign", la.state.name)]
    try:
        la.produce(env.topic(), b"after resign")
        obs.append(("produce after resign", None))
    except kc.KrabkaError as e:
        obs.append(("produce after resign", type(e).__name__))
    lb = b.try_acquire(role, "b", timeout=WAIT).leadership
    obs.append(("b takes over at once", lb is not None and lb.token.supersedes(la.token)))
    obs.append(("describe", a.describe(role, timeout=WAIT).holder))
    return obs


def kill(env: Env, role: str) -> Obs:
    a, b = env.client(), env.client()
    la = a.acquire(role, "a", timeout=WAIT)
    token = la.token
    env.kill(a)
    obs: Obs = [("b before the deadline", b.try_acquire(role, "b", timeout=WAIT).won)]
    st = b.describe(role, timeout=WAIT)
    obs.append(("describe before the deadline", st.holder, st.token == token))
    env.elapse(LEASE_MS + 100)
    lb = b.acquire(role, "b", timeout=WAIT)
    obs.append(("b after the deadline", lb.token.supersedes(token)))
    return obs


def blind(env: Env, role: str) -> Obs:
    long = {"krabka.lease.ms": 60000, "krabka.renew.interval.ms": 20000}
    a = env.client(blind=True, **long)
    topic = env.topic()
    la = a.acquire(role, "a", timeout=WAIT)
    la.produce(topic, b"%s before" % role.encode())
    minted = env.blind(role)
    obs: Obs = [("minted supersedes", minted.supersedes(la.token)), ("holder after the mint", la.state.name)]
    try:
        la.produce(topic, b"%s after" % role.encode(), timeout=WAIT)
        obs.append(("write after the mint", None))
    except kc.KrabkaError as e:
        obs.append(("write after the mint", type(e).__name__))
    obs.append(("holder after the write", la.state.name))
    mine = [v for v in env.values(topic) if v.startswith(role.encode())]
    obs.append(("committed", [v[len(role):].decode() for v in mine]))
    return obs


def watch_events(env: Env, role: str) -> Obs:
    w = env.client()
    a, b = env.client(), env.client()
    with w.watch(role, timeout=WAIT) as watch:
        la = a.acquire(role, "a", timeout=WAIT)
        assert not b.try_acquire(role, "b", timeout=WAIT).won
        la.resign(timeout=WAIT)
        lb = b.try_acquire(role, "b", timeout=WAIT).leadership
        assert lb is not None
        seen: Obs = []
        end = time.monotonic() + WAIT
        while not seen or seen[-1][1] != "b":
            assert time.monotonic() < end, "watch: gave up waiting for b's lease: %r" % seen
            ev = watch.next(timeout=1)
            if ev is not None and ev.kind in ("HOLDER_CHANGED", "ROLE_FREE"):
                seen.append((ev.kind, ev.holder, ev.prev_holder))
        return seen


def elector_terms(env: Env, role: str) -> Obs:
    a, b = env.client(), env.client()
    with a.elect(role, "a") as ea:
        ta = ea.next_term(timeout=WAIT)
        assert ta is not None
        with b.elect(role, "b") as eb:
            env.until(lambda: eb.leader is not None and eb.leader.holder == "a", "b's NEW_LEADER a")
            ta.resign()
            tb = eb.next_term(timeout=WAIT)
            assert tb is not None
            env.until(lambda: eb.leader is not None and eb.leader.holder == "b", "b's NEW_LEADER b")
            obs: Obs = [("a's term", ta.number, kinds(list(ta.events())), ta.stop_reason.name if ta.stop_reason else None),
                        ("b's term", tb.number, tb.token.supersedes(ta.token), tb.active),
                        ("b's elector", eb.state.name, bool(eb.healthy))]
    return obs


SCENARIOS: Dict[str, Callable[[Env, str], Obs]] = {
    "election": election, "renewal": renewal, "resign": resign, "kill": kill, "blind": blind,
    "watch": watch_events, "elector-terms": elector_terms,
}
TV1_TOO = {"resign", "kill", "blind"}


def record(scenario: str, tv: str, mem: Obs, real: Obs) -> None:
    out = Path(os.environ.get("KRABKA_TESTING_WALL_DIR", str(REPO / "build" / "testing"))) / "fidelity"
    out.mkdir(parents=True, exist_ok=True)
    (out / ("python-%s-%s.json" % (scenario, tv))).write_text(json.dumps(
        {"scenario": scenario, "broker": tv, "mem": mem, "real": real, "same": mem == real}, default=str) + "\n")


def real_env(tv: str, tools: KafkaTools) -> RealEnv:
    var = "KRABKA_BOOTSTRAP" if tv == "tv2" else "KRABKA_BOOTSTRAP_TV1"
    addr = os.environ.get(var)
    if not addr:
        pytest.fail("%s is not set: the fidelity tests need the brokers of `make test`" % var, pytrace=False)
    return RealEnv(tv, addr, tools)


def run_both(scenario: Callable[[Env, str], Obs], real: Env, **kw: Any) -> Tuple[Obs, Obs]:
    mem = MemEnv()
    try:
        got_mem = scenario(mem, unique("py-fid"), **kw)
    finally:
        mem.close()
    try:
        got_real = scenario(real, unique("py-fid"), **kw)
    finally:
        real.close()
    return got_mem, got_real


@pytest.mark.parametrize("scenario, tv", [(s, "tv2") for s in SCENARIOS] + [(s, "tv1") for s in sorted(TV1_TOO)])
def test_the_same_scenario_reports_the_same_on_both(scenario: str, tv: str, kafka_tools: KafkaTools) -> None:
    mem, real = run_both(SCENARIOS[scenario], real_env(tv, kafka_tools))
    record(scenario, tv, mem, real)
    assert mem == real, "%s differs:\n  in-process: %r\n  %s broker: %r" % (scenario, mem, tv, real)


# ---------------------------------------------------------------------------
# Pause past the lease: the holder in a process of its own on the broker
# ---------------------------------------------------------------------------

REFUSED_FATAL = {"FencedError": "refused, fatal", "LeaseExpiredError": "refused, fatal"}


def test_pause_past_the_lease_reports_the_same_on_both(kafka_tools: KafkaTools) -> None:
    role = unique("py-fid-pause")
    # in-process: pause / resume the holder's client
    mem = MemEnv()
    try:
        a, b = mem.client(), mem.client()
        la = a.acquire(role, "a", timeout=WAIT)
        mem.cluster.pause(a)
        mem.elapse(LEASE_MS + 500)
        lb = b.acquire(role, "b", timeout=WAIT)
        mem_obs: Obs = [("b takes over while a is paused", lb.token.supersedes(la.token))]
        mem.cluster.resume(a)
        try:
            la.produce(mem.topic(), b"a after resume", timeout=WAIT)
            err = None
        except kc.KrabkaError as e:
            err = type(e).__name__
        mem_obs.append(("a's write after resume", REFUSED_FATAL.get(str(err), err)))
        mem_obs.append(("committed", mem.values(mem.topic())))
    finally:
        mem.close()
    # broker: SIGSTOP / SIGCONT the holder's process
    real = real_env("tv2", kafka_tools)
    topic = real.topic()
    child = subprocess.Popen([sys.executable, str(HERE / "fidelity_member.py"), real.bootstrap, role, "a",
                              str(LEASE_MS), str(RENEW_MS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = json.loads(child.stdout.readline())  # type: ignore[union-attr]
        assert line["event"] == "acquired", line
        token = kc.FencingToken.parse(line["token"])
        os.kill(child.pid, signal.SIGSTOP)
        b = real.client()
        lb = b.acquire(role, "b", timeout=WAIT)  # waits out a's lease
        real_obs: Obs = [("b takes over while a is paused", lb.token.supersedes(token))]
        os.kill(child.pid, signal.SIGCONT)
        child.stdin.write("produce %s %s-after-resume\n" % (topic, role))  # type: ignore[union-attr]
        child.stdin.flush()  # type: ignore[union-attr]
        res = json.loads(child.stdout.readline())  # type: ignore[union-attr]
        real_obs.append(("a's write after resume", REFUSED_FATAL.get(str(res["error"]), res["error"])))
        real_obs.append(("committed", real.values(topic)))
    finally:
        os.kill(child.pid, signal.SIGCONT)
        child.stdin.close()  # type: ignore[union-attr]
        child.wait(timeout=WAIT)
        real.close()
    record("pause", "tv2", mem_obs, real_obs)
    assert mem_obs == real_obs, "pause differs:\n  in-process: %r\n  broker: %r" % (mem_obs, real_obs)


# ---------------------------------------------------------------------------
# At risk under a cut link: kproxy on the broker, cut() in process
# ---------------------------------------------------------------------------

CUT_LEASES = {"krabka.lease.ms": 3000, "krabka.renew.interval.ms": 1000, "request.timeout.ms": 2000}


def at_risk(env: Env, role: str, cut: Callable[[kc.Client], None], heal: Callable[[kc.Client], None],
            **conf: object) -> Obs:
    c = env.client(**dict(CUT_LEASES, **conf))
    with c.elect(role, "a") as el:
        t1 = el.next_term(timeout=WAIT)
        assert t1 is not None
        cut(c)
        env.until(lambda: t1.stop_reason is not None, "the cut term's stop", step_ms=100)
        ks = kinds(list(t1.events()))
        stop = t1.stop_reason
        obs: Obs = [("events", ks), ("AT_RISK before STOPPED", "AT_RISK" in ks and ks.index("AT_RISK") < ks.index("STOPPED")),
                    # LOST_AT_RISK or EXPIRED: which timer fires first is a timing
                    ("stop", "lease lost" if stop in (kc.StopReason.LOST_AT_RISK, kc.StopReason.EXPIRED) else str(stop)),
                    ("error", type(t1.error).__name__)]
        heal(c)
        got: List[kc.Term] = []

        def term2() -> bool:
            t = el.next_term(timeout=0.01)
            if t is not None:
                got.append(t)
            return bool(got)

        env.until(term2, "the re-campaign's term", step_ms=100)
        obs.append(("re-campaign", got[0].number, got[0].token.supersedes(t1.token)))
    return obs


def test_at_risk_under_a_cut_link_reports_the_same_on_both(tmp_path_factory: pytest.TempPathFactory) -> None:
    x1 = os.environ.get("KRABKA_BOOTSTRAP_X1")
    target = os.environ.get("KRABKA_BOOTSTRAP_X1_TARGET")
    if not x1 or not target:
        pytest.fail("KRABKA_BOOTSTRAP_X1 / KRABKA_BOOTSTRAP_X1_TARGET are not set: this test needs the tv2 cluster's "
                    "extra listener (make test sets them).", pytrace=False)
    mem = MemEnv()
    try:
        mem_obs = at_risk(mem, unique("py-fid-cut"), mem.cluster.cut, mem.cluster.heal)
    finally:
        mem.close()
    from test_elect import Proxy

    binary = tmp_path_factory.mktemp("kproxy") / "kproxy"
    subprocess.run(["go", "build", "-o", str(binary), "./tests/kafka/cmd/kproxy"], cwd=str(REPO), check=True,
                   timeout=600, env={**os.environ, "GOFLAGS": "-buildvcs=false"})
    proxy = Proxy(binary, x1, target)
    real = RealEnv("tv2-x1", x1, None)  # type: ignore[arg-type]
    try:
        real_obs = at_risk(real, unique("py-fid-cut"), lambda _c: proxy.command("cut"), lambda _c: proxy.command("heal"),
                           bootstrap=x1)
    finally:
        real.close()
        proxy.close()
    record("at-risk-cut", "tv2", mem_obs, real_obs)
    assert mem_obs == real_obs, "at risk differs:\n  in-process: %r\n  broker: %r" % (mem_obs, real_obs)
