"""The elector's own logic on the in-process cluster (krabka_coord.testing,
the pytest plugin's krabka_cluster and krabka_clock): a term block left
early, the release rule, eligibility, no re-campaign. Moved here from
test_elect.py, where they ran on a real broker in real time; the
real-broker tests that prove safety (failovers, fencing by the broker, the
cut link) stay there. Time passes when the test advances the manual clock:
the helpers below move it in steps of 100 ms while they wait, so that the
elector's timers (stagger, retries) fire. Waits are bounded (WAIT) only so
that a broken test ends."""

from __future__ import annotations

import time
from typing import List

import pytest

import krabka_coord as kc
from krabka_coord.testing import Clock, Cluster
from conftest import unique
from test_elect import LEASES, STARTED, STOPPED, check_log

WAIT = 30.0  # seconds: the bound of one wait, not a timing check


def next_term(clock: Clock, el: kc.Elector) -> kc.Term:
    """el's next term, moving the clock 100 ms between two looks."""
    end = time.monotonic() + WAIT
    while True:
        t = el.next_term(timeout=0.005)
        if t is not None:
            return t
        assert time.monotonic() < end, "no term for %r" % el
        clock.advance(100)


def roster(client: kc.Client, role: str) -> List[str]:
    return [e.member for e in client.describe(role, timeout=WAIT).roster]


def wait_roster(clock: Clock, client: kc.Client, role: str, want: List[str]) -> None:
    end = time.monotonic() + WAIT
    got = roster(client, role)
    while got != want and time.monotonic() < end:
        clock.advance(100)
        time.sleep(0.002)
        got = roster(client, role)
    assert got == want, "roster %r, expected %r" % (got, want)


def test_leaving_a_term_block_early_resigns_and_campaigns_again(krabka_cluster: Cluster, krabka_clock: Clock) -> None:
    """A term's with block left while the term runs resigns it; the member
    campaigns again at the tail and wins its next term after the standby."""
    role = unique("py-elect-termblock")
    with krabka_cluster.client(LEASES) as ca, krabka_cluster.client(LEASES) as cb:
        with ca.elect(role, "a") as ea:
            t1 = next_term(krabka_clock, ea)
            assert t1 is not None
            eb = cb.elect(role, "b")  # only now: b must not win first
            wait_roster(krabka_clock, ca, role, ["a", "b"])
            with t1:
                assert t1.active
            assert t1.stop_reason == kc.StopReason.RESIGNED
            tb = next_term(krabka_clock, eb)
            assert tb is not None
            wait_roster(krabka_clock, ca, role, ["b", "a"])  # a registered again, at the tail
            with tb:
                pass
            t2 = next_term(krabka_clock, ea)
            assert t2 is not None and t2.number == 2 and t2.token.supersedes(tb.token)
            eb.close()
        assert t2.stop_reason == kc.StopReason.RESIGNED  # leaving the elector's block
        assert check_log(list(t1.events()) + list(t2.events())) == 2


def test_the_next_term_waits_until_the_stopped_term_was_handed_back(krabka_cluster: Cluster, krabka_clock: Clock) -> None:
    role = unique("py-elect-release")
    with krabka_cluster.client(LEASES) as ca, krabka_cluster.client(LEASES) as cb:
        with ca.elect(role, "a") as ea:
            t1 = next_term(krabka_clock, ea)
            assert t1 is not None
            eb = cb.elect(role, "b")  # only now: b must not win first
            wait_roster(krabka_clock, ca, role, ["a", "b"])
            t1.resign()  # through the term: a loss (RESIGNED); not handed back yet
            assert t1.wait_stopped(timeout=WAIT) == kc.StopReason.RESIGNED
            assert t1.wait_stopped(timeout=1) == kc.StopReason.RESIGNED  # the stop, once, kept
            assert [e.kind for e in t1.events()] == [STARTED, STOPPED]
            tb = next_term(krabka_clock, eb)
            assert tb is not None
            # while a's consumer keeps term 1, a stays out of the roster
            krabka_clock.advance(1500)
            time.sleep(0.05)
            assert roster(ca, role) == ["b"]
            assert ea.next_term(timeout=0.05) is None  # hands term 1 back; no term yet
            wait_roster(krabka_clock, ca, role, ["b", "a"])
            with pytest.raises(kc.NotLeaderError):
                t1.leadership.renew()  # its handle closed with the hand-back
            eb.close()
            t2 = next_term(krabka_clock, ea)
            assert t2 is not None and t2.number == 2
        check_log(list(t1.events()) + list(t2.events()))


def test_eligibility_off_and_on_moves_the_member_to_the_tail(krabka_cluster: Cluster, krabka_clock: Clock) -> None:
    role = unique("py-elect-elig")
    with krabka_cluster.client(LEASES) as ca, krabka_cluster.client(LEASES) as cb, krabka_cluster.client(LEASES) as cc:
        with ca.elect(role, "a") as ea:
            ta = next_term(krabka_clock, ea)
            assert ta is not None
            eb = cb.elect(role, "b")
            wait_roster(krabka_clock, ca, role, ["a", "b"])
            ec = cc.elect(role, "c")
            wait_roster(krabka_clock, ca, role, ["a", "b", "c"])
            eb.set_eligible(False)  # a standby withdraws: out of the roster
            assert not eb.eligible and eb.healthy
            wait_roster(krabka_clock, ca, role, ["a", "c"])
            eb.set_eligible(True)  # back, at the tail
            wait_roster(krabka_clock, ca, role, ["a", "c", "b"])
            ea.set_eligible(False)  # the holder withdraws: resigns
            assert ta.wait_stopped(timeout=WAIT) == kc.StopReason.RESIGNED
            tc = next_term(krabka_clock, ec)
            assert tc is not None, "c, first in the roster, must take over"
            wait_roster(krabka_clock, ca, role, ["c", "b"])
            assert ea.next_term(timeout=0.05) is None  # hands the stopped term back; withdrawn: no term
            ea.set_eligible(True)
            wait_roster(krabka_clock, ca, role, ["c", "b", "a"])
            # starting withdrawn
            with cb.elect(role, "d", eligible=False) as ed:
                assert not ed.eligible
                krabka_clock.advance(500)
                time.sleep(0.05)
                assert "d" not in roster(ca, role)
                ed.set_eligible(True)
                wait_roster(krabka_clock, ca, role, ["c", "b", "a", "d"])
            eb.close()
            ec.close()
            assert tc.stop_reason == kc.StopReason.RESIGNED


def test_no_recampaign_ends_the_iteration_after_the_first_term(krabka_cluster: Cluster, krabka_clock: Clock) -> None:
    role = unique("py-elect-norecampaign")
    with krabka_cluster.client(LEASES) as c:
        with c.elect(role, "a", recampaign=False) as el:
            terms = []
            for term in el:
                terms.append(term)
                term.resign()
                assert term.wait_stopped(timeout=WAIT) == kc.StopReason.RESIGNED
            assert [t.number for t in terms] == [1]
            # The loop's end is a state and an event with a code, never text.
            assert el.state == kc.ElectorState.STOPPED and not el.healthy
            assert el.error is not None and el.error.code == kc.ErrorCode.NOT_LEADER
