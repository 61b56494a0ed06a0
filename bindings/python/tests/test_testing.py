"""krabka_coord.testing and its pytest plugin, without a broker: the
in-process cluster's controls through the binding, bad input (wrong types
name the argument; what the library refuses names the problem) and a
controller's failover (win, fenced mid-command by a blind successor,
standby takes over once the clock passes the deadline), whose wall time is
printed and written to build/testing/python-failover.json, never checked.
Waits are bounded (WAIT) only so that a broken test ends."""

from __future__ import annotations

import datetime
import json
import os
import time
from pathlib import Path
from typing import Any, List

import pytest

import krabka_coord as kc
from krabka_coord import testing
from krabka_coord.testing import Cluster, Record
from conftest import REPO

WAIT = 30.0  # seconds: the bound of one wait, not a timing check
LEASE_MS = 30000  # krabka.lease.ms default: the manual clock is advanced past it


def wait_for(cond: Any, what: str) -> None:
    end = time.monotonic() + WAIT
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("gave up waiting for " + what)
        time.sleep(0.001)


# ---------------------------------------------------------------------------
# The cluster and its clock
# ---------------------------------------------------------------------------


def test_a_cluster_registers_mem_name_and_its_clients_join_it(krabka_cluster: Cluster) -> None:
    assert krabka_cluster.bootstrap == "mem://" + krabka_cluster.name
    assert krabka_cluster.config({"client.id": "x"}) == {"client.id": "x", "bootstrap.servers": krabka_cluster.bootstrap}
    with kc.Client(krabka_cluster.config()) as a, kc.Client({"bootstrap.servers": krabka_cluster.bootstrap}) as b:
        lead = a.acquire("ctl", "a", timeout=WAIT)
        st = b.describe("ctl", timeout=WAIT)  # another client of the process sees it
        assert st.holder == "a" and st.token == lead.token
        lead.resign(timeout=WAIT)
        st = b.describe("ctl", timeout=WAIT)
        assert st.lease is not None and st.lease.deadline == testing.CLOCK_START_MS  # released at once
        assert st.roster == ()


def test_two_clusters_are_separate(krabka_cluster_factory: Any) -> None:
    one, two = krabka_cluster_factory(), krabka_cluster_factory()
    assert one.name != two.name
    a, b = one.client(), two.client()
    a.acquire("ctl", "a", timeout=WAIT)
    lead = b.acquire("ctl", "b", timeout=WAIT)  # no wait: two's ctl is free
    assert lead.active and one.client().describe("ctl", timeout=WAIT).holder == "a"
    one.clock.advance(1000)
    assert one.clock.now_ms() == testing.CLOCK_START_MS + 1000 and two.clock.now_ms() == testing.CLOCK_START_MS


def test_the_manual_clock_moves_only_when_advanced(krabka_clock: testing.Clock) -> None:
    assert krabka_clock.now_ms() == testing.CLOCK_START_MS
    assert krabka_clock.now() == datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    time.sleep(0.01)
    assert krabka_clock.now_ms() == testing.CLOCK_START_MS
    assert krabka_clock.advance(250) == testing.CLOCK_START_MS + 250
    assert krabka_clock.advance(datetime.timedelta(seconds=2, microseconds=1500)) == testing.CLOCK_START_MS + 2251
    assert krabka_clock.advance(0) == testing.CLOCK_START_MS + 2251
    assert not krabka_clock.real_time


@pytest.mark.krabka_cluster(real_time=True, partitions=3)
def test_the_marker_sets_the_fixtures_options(krabka_cluster: Cluster) -> None:
    assert krabka_cluster.partitions == 3 and krabka_cluster.real_time
    now = int(time.time() * 1000)
    assert abs(krabka_cluster.clock.now_ms() - now) < 60_000  # the system clock, not 2026-01-01
    with pytest.raises(kc.InvalidArgumentError, match="real"):
        krabka_cluster.clock.advance(10)


def test_a_lease_expires_by_the_clock_not_by_real_time(krabka_cluster: Cluster, krabka_clock: testing.Clock) -> None:
    a, b = krabka_cluster.client(), krabka_cluster.client()
    lead = a.acquire("ctl", "a", timeout=WAIT)
    assert lead.lease.deadline == krabka_clock.now_ms() + LEASE_MS
    krabka_cluster.kill(a)  # no renewal, no resign
    won, retry_at = b.try_acquire("ctl", "b", timeout=WAIT)
    assert won is None and retry_at is not None
    krabka_clock.advance(LEASE_MS - 1)
    assert not b.try_acquire("ctl", "b", timeout=WAIT).won  # one millisecond before the deadline
    krabka_clock.advance(1)
    took = b.try_acquire("ctl", "b", timeout=WAIT).leadership
    assert took is not None and took.token.supersedes(lead.token)


# ---------------------------------------------------------------------------
# Faults
# ---------------------------------------------------------------------------


def test_cut_refuses_every_request_until_healed(krabka_cluster: Cluster) -> None:
    a = krabka_cluster.client()
    krabka_cluster.cut(a)
    with pytest.raises(kc.TransportError):
        a.describe("ctl", timeout=WAIT)
    krabka_cluster.heal(a)
    assert a.describe("ctl", timeout=WAIT).holder is None


def test_a_paused_client_holds_its_requests_until_resumed(krabka_cluster: Cluster) -> None:
    a = krabka_cluster.client()
    krabka_cluster.pause(a)
    with pytest.raises(kc.KrabkaTimeoutError):
        a.describe("ctl", timeout=0.05)  # held, until its (real-time) timeout
    krabka_cluster.resume(a)
    assert a.describe("ctl", timeout=WAIT).holder is None


def test_an_unavailable_cluster_refuses_every_client(krabka_cluster: Cluster) -> None:
    a, b = krabka_cluster.client(), krabka_cluster.client()
    krabka_cluster.set_available(False)
    for c in (a, b):
        with pytest.raises(kc.TransportError):
            c.describe("ctl", timeout=WAIT)
    with pytest.raises(kc.TransportError):
        krabka_cluster.mint("ctl")
    krabka_cluster.set_available(True)
    assert a.describe("ctl", timeout=WAIT).holder is None


def test_a_killed_holder_neither_resigns_nor_leaves(krabka_cluster: Cluster, krabka_clock: testing.Clock) -> None:
    a, b = krabka_cluster.client(), krabka_cluster.client()
    lead = a.acquire("ctl", "a", timeout=WAIT)
    krabka_cluster.kill(a)
    krabka_cluster.kill(a)  # idempotent
    a.close()  # would resign and leave on a live client
    st = b.describe("ctl", timeout=WAIT)
    assert st.holder == "a" and st.token == lead.token and [e.member for e in st.roster] == ["a"]
    krabka_clock.advance(LEASE_MS)
    assert b.acquire("ctl", "b", timeout=WAIT).token.supersedes(lead.token)


def test_mint_is_a_blind_successor(krabka_cluster: Cluster) -> None:
    a = krabka_cluster.client()
    lead = a.acquire("ctl", "a", timeout=WAIT)
    lead.produce("commands", b"before")
    minted = krabka_cluster.mint("ctl")
    assert minted.supersedes(lead.token)
    assert lead.active and lead.state == kc.LeadershipState.ACTIVE  # it does not know
    with pytest.raises(kc.FencedError):
        lead.produce("commands", b"after")
    assert lead.state == kc.LeadershipState.FENCED
    assert krabka_cluster.records("commands") == [Record(0, b"before")]
    assert krabka_cluster.values("commands") == [b"before"]
    assert krabka_cluster.records("never-written") == []


def test_mint_uses_the_role_prefix_of_the_client_given(krabka_cluster: Cluster) -> None:
    a = krabka_cluster.client({"krabka.role.prefix": "team1."})
    lead = a.acquire("ctl", "a", timeout=WAIT)
    krabka_cluster.mint("ctl")  # the default client: no prefix, another transactional id
    lead.produce("commands", b"still mine")
    krabka_cluster.mint("ctl", client=a)
    with pytest.raises(kc.FencedError):
        lead.produce("commands", b"refused")
    assert krabka_cluster.values("commands") == [b"still mine"]


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name, words", [
    ("has space", "' '"),
    ("", "empty"),
    ("x" * 65, "64"),
    ("naïve", "name"),
])
def test_bad_names_are_refused_naming_the_problem(name: str, words: str) -> None:
    with pytest.raises(kc.InvalidArgumentError) as e:
        Cluster(name)
    assert words in str(e.value), str(e.value)


@pytest.mark.parametrize("bootstrap, words", [
    ("mem://bad name", "has the character ' ' at byte 3"),
    ("mem://nobody-has-this", 'no in-process cluster named "nobody-has-this"'),
    ("mem://a,127.0.0.1:9092", "must be the only entry"),
])
def test_a_client_naming_a_bad_or_unknown_mem_cluster_is_refused(bootstrap: str, words: str) -> None:
    with pytest.raises(kc.ConfigError) as e:
        kc.Client({"bootstrap.servers": bootstrap})
    assert "bootstrap.servers" in str(e.value) and words in str(e.value), str(e.value)


def test_a_name_a_live_cluster_has_is_refused(krabka_cluster: Cluster) -> None:
    with pytest.raises(kc.InvalidArgumentError, match=krabka_cluster.name):
        Cluster(krabka_cluster.name)


def test_a_closed_clusters_name_is_free_again_and_its_clients_fail() -> None:
    name = testing.unique_name("reuse")
    c = Cluster(name)
    outside = kc.Client({"bootstrap.servers": c.bootstrap})
    try:
        c.close()
        c.close()  # idempotent
        assert c.closed
        with pytest.raises(kc.TransportError):
            outside.describe("ctl", timeout=WAIT)
        with pytest.raises(kc.ClosedError):
            c.clock.now_ms()
        with pytest.raises(kc.ClosedError):
            c.client()
        with pytest.raises(kc.KrabkaError, match="ctl-gone|" + name):
            kc.Client({"bootstrap.servers": "mem://" + name}).describe("ctl", timeout=WAIT)
        with Cluster(name) as again:
            assert again.client().describe("ctl", timeout=WAIT).holder is None
    finally:
        outside.close()


@pytest.mark.parametrize("call, exc, words", [
    (lambda c: Cluster(name=5), TypeError, "name must be str"),  # type: ignore[arg-type]
    (lambda c: Cluster(partitions="3"), TypeError, "partitions must be int"),  # type: ignore[arg-type]
    (lambda c: Cluster(partitions=0), ValueError, "partitions"),
    (lambda c: Cluster(real_time=1), TypeError, "real_time must be bool"),  # type: ignore[arg-type]
    (lambda c: c.clock.advance(1.5), TypeError, "int milliseconds or a datetime.timedelta"),
    (lambda c: c.clock.advance(True), TypeError, "int milliseconds"),
    (lambda c: c.clock.advance(-1), kc.InvalidArgumentError, "backwards"),
    (lambda c: c.clock.advance(datetime.timedelta(seconds=-1)), kc.InvalidArgumentError, "backwards"),
    (lambda c: c.cut("client"), TypeError, "client must be a krabka_coord.Client, not str"),
    (lambda c: c.kill(None), TypeError, "client must be a krabka_coord.Client, not NoneType"),
    (lambda c: c.set_available(0), TypeError, "available must be bool"),
    (lambda c: c.mint(7), TypeError, "role must be str or bytes"),
    (lambda c: c.mint(""), kc.DataError, "empty"),
    (lambda c: c.mint("r", client="x"), TypeError, "client must be a krabka_coord.Client"),
    (lambda c: c.records(b"t"), TypeError, "topic must be str"),
    (lambda c: c.records(""), kc.InvalidArgumentError, "topic"),
    (lambda c: c.records("t", 5), kc.InvalidArgumentError, "partition"),
    (lambda c: c.records("t", -1), ValueError, "partition"),
    (lambda c: c.config({"bootstrap.servers": "x"}), ValueError, "bootstrap.servers"),
    (lambda c: c.config(["x"]), TypeError, "extra must be a dict"),  # type: ignore[arg-type]
])
def test_bad_arguments_name_the_problem(krabka_cluster: Cluster, call: Any, exc: type, words: str) -> None:
    with pytest.raises(exc) as e:
        call(krabka_cluster)
    assert words in str(e.value), str(e.value)


def test_controls_refuse_a_client_that_is_not_in_process(krabka_cluster: Cluster) -> None:
    with kc.Client({"bootstrap.servers": "127.0.0.1:9"}) as real:
        for control in (krabka_cluster.cut, krabka_cluster.heal, krabka_cluster.pause, krabka_cluster.resume,
                        krabka_cluster.kill, lambda c: krabka_cluster.mint("ctl", client=c)):
            with pytest.raises(kc.InvalidArgumentError, match="in-process|mem://"):
                control(real)


def test_controls_on_a_closed_or_killed_client(krabka_cluster: Cluster) -> None:
    a = krabka_cluster.client()
    krabka_cluster.kill(a)
    with pytest.raises(kc.InvalidArgumentError, match="kill"):
        krabka_cluster.heal(a)
    with pytest.raises(kc.InvalidArgumentError, match="kill"):
        krabka_cluster.resume(a)
    a.close()
    with pytest.raises(kc.ClosedError):
        krabka_cluster.cut(a)


def test_the_clients_of_a_closed_cluster_are_closed(krabka_cluster_factory: Any) -> None:
    c = krabka_cluster_factory()
    a = c.client()
    c.close()
    assert a.closed


# ---------------------------------------------------------------------------
# A controller's failover, with no broker
# ---------------------------------------------------------------------------


def _record_wall(name: str, seconds: float, steps: List[str]) -> None:
    out = Path(os.environ.get("KRABKA_TESTING_WALL_DIR", str(REPO / "build" / "testing")))
    out.mkdir(parents=True, exist_ok=True)
    (out / ("%s.json" % name)).write_text(json.dumps({
        "test": name, "wall_ms": round(seconds * 1000, 3), "steps": steps,
        "at": datetime.datetime.now(datetime.timezone.utc).isoformat(), "load": os.getloadavg()[0]}) + "\n")


def test_controller_failover_win_fenced_mid_command_standby_takes_over(
        krabka_cluster: Cluster, krabka_clock: testing.Clock, capsys: pytest.CaptureFixture[str]) -> None:
    """The controller wins, writes a command, is fenced in the middle of the
    next one by a blind successor (FencedError; the command is absent when
    read back), and the standby takes over once the clock passes the
    deadline of the fenced term's lease. Wall time: printed and recorded."""
    t0 = time.perf_counter()
    a, b = krabka_cluster.client(), krabka_cluster.client()
    with a.elect("controller", "a", recampaign=False) as ea, b.elect("controller", "b") as eb:
        ta = ea.next_term(timeout=WAIT)  # win
        assert ta is not None and ta.number == 1
        ta.produce("commands", b"command 1")
        wait_for(lambda: [e.member for e in a.describe("controller", timeout=WAIT).roster] == ["a", "b"], "b's candidacy")
        successor = krabka_cluster.mint("controller")  # fenced in the middle of the next command
        with pytest.raises(kc.FencedError):
            ta.produce("commands", b"command 2")
        assert ta.wait_stopped(timeout=WAIT) == kc.StopReason.FENCED and isinstance(ta.error, kc.FencedError)
        assert krabka_cluster.values("commands") == [b"command 1"]  # command 2 is absent
        assert eb.next_term(timeout=0.01) is None  # the lease of a's term still stands
        krabka_clock.advance(LEASE_MS)  # past its deadline
        tb = eb.next_term(timeout=WAIT)  # the standby takes over
        assert tb is not None and tb.token.supersedes(successor)
        tb.produce("commands", b"command 2 from b")
        assert krabka_cluster.values("commands") == [b"command 1", b"command 2 from b"]
    wall = time.perf_counter() - t0
    _record_wall("python-failover", wall, ["win", "fenced mid-command", "standby takes over"])
    with capsys.disabled():
        print("\n[python] controller failover with no broker: %.1f ms wall time" % (wall * 1000))
