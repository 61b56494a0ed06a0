"""The controller's failover, tested the way a project tests its own
controller: on an in-process cluster (krabka_coord.testing) through the
pytest plugin's fixtures, with no broker and no waiting out a lease.

    pytest examples/python/test_controller.py

(With krabka-coord installed, pytest loads the plugin by itself; from a
checkout, `make python-test` runs it with -p krabka_coord.pytest_plugin.)
"""
import threading
import time

import pytest

import krabka_coord as kc
from krabka_coord.testing import Clock, Cluster

from controller import run

ROLE, TOPIC = "controller", "commands"


class Controller:
    """controller.run on its own thread, with the lines it reports."""

    def __init__(self, cluster: Cluster, member: str) -> None:
        self.member = member
        self.client = cluster.client()
        self.lines: list = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=run, args=(self.client, ROLE, member, TOPIC, self.stop),
                                       kwargs={"pace": 0.002, "say": self.lines.append}, daemon=True)
        self.thread.start()

    def said(self, start: str) -> list:
        return [line for line in list(self.lines) if line.startswith(start)]

    def shut_down(self, clock: Clock) -> None:
        self.stop.set()  # a leader resigns and returns (SIGTERM in controller.main)
        if len(self.said("leading")) > len(self.said("term ")):
            self.thread.join(5)
        self.client.close()  # ends a standby's wait for a term ...
        # ... once its elector's retry timer fires: on the manual clock that
        # needs the clock to move (REQUEST-TO-CORE.md)
        eventually(lambda: not self.thread.is_alive(), self.member + " to shut down", clock, 100)


def eventually(cond, what: str, clock: Clock = None, step_ms: int = 0) -> None:
    end = time.monotonic() + 10  # a bound so that a broken test ends, not a timing check
    while not cond():
        assert time.monotonic() < end, "gave up waiting for " + what
        if clock is not None and step_ms:
            clock.advance(step_ms)
        time.sleep(0.001)


def test_the_standby_takes_over_when_the_leader_stalls(krabka_cluster: Cluster, krabka_clock: Clock) -> None:
    a = Controller(krabka_cluster, "a")
    eventually(lambda: a.said("dispatched command 2"), "a to lead and dispatch")
    b = Controller(krabka_cluster, "b")
    eventually(lambda: [e.member for e in b.client.describe(ROLE).roster] == ["a", "b"], "b standing by")

    krabka_cluster.pause(a.client)  # a stalls (a long GC pause, SIGSTOP): its renewals stop
    krabka_clock.advance(30_000)    # past its lease (krabka.lease.ms defaults to 30 s)
    eventually(lambda: b.said("dispatched command 1"), "b to take over", krabka_clock, 100)
    krabka_cluster.resume(a.client)  # a wakes up believing it leads: the cluster says otherwise
    eventually(lambda: a.said("term 1 stopped"), "a to learn it lost")

    a.shut_down(krabka_clock)
    b.shut_down(krabka_clock)
    assert b.said("leading term 1")
    # Every command either controller reported as dispatched is in the topic,
    # and nothing else is: a's writes after b took over were refused.
    dispatched = len(a.said("dispatched")) + len(b.said("dispatched"))
    assert len(krabka_cluster.records(TOPIC)) == dispatched


def test_a_fenced_command_is_refused_and_not_written(krabka_cluster: Cluster, krabka_clock: Clock) -> None:
    a = Controller(krabka_cluster, "a")
    eventually(lambda: a.said("dispatched command 1"), "a to lead")
    krabka_cluster.mint(ROLE)  # another process took the role behind a's back (a blind successor)
    eventually(lambda: a.said("term 1 stopped: FENCED"), "a's term to stop FENCED")
    refused = a.said("command")
    assert any(" refused: " in line for line in refused), a.lines
    a.shut_down(krabka_clock)
    assert len(krabka_cluster.records(TOPIC)) == len(a.said("dispatched"))
    with pytest.raises(kc.ClosedError):
        a.client.describe(ROLE)
