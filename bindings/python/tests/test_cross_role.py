"""Many roles on one coordination partition, through the C ABI on real
brokers (KRABKA_BOOTSTRAP, KRABKA_BOOTSTRAP_TV1): a transaction that another
producer leaves open on the partition holds its last stable offset, and the
standbys of the other roles must not depose their healthy holders because of
it (docs/PROTOCOL.md 12.1). The open transaction comes from
tests/kafka/cmd/kopentxn, which checks that the stable offset really is held.
Waits are bounded only so that a broken test ends."""

from __future__ import annotations

import subprocess
import threading
import time
from typing import Any, Dict, List, Optional

import pytest

import krabka_coord as kc
from conftest import KafkaTools, unique

LEASE_S = 3.0
WAIT = 60.0


def conf(bootstrap: str, topic: str, **extra: object) -> Dict[str, Any]:
    c: Dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "krabka.topic": topic,
        "krabka.topic.partitions": 1,
        "krabka.lease.ms": int(LEASE_S * 1000),
        "krabka.renew.interval.ms": 1000,
        "krabka.challenge.stagger.ms": 500,
        "krabka.poll.interval.ms": 100,
    }
    c.update(extra)
    return c


class Standby:
    """A standby waiting in acquire in a thread of its own."""

    def __init__(self, client: kc.Client, role: str) -> None:
        self.client, self.role = client, role
        self.won: Optional[kc.Leadership] = None
        self.error: Optional[BaseException] = None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        try:
            self.won = self.client.acquire(self.role, "standby")
        except kc.KrabkaError as e:
            self.error = e


@pytest.mark.parametrize("tv", ["tv2", "tv1"])
def test_an_open_transaction_of_another_producer_deposes_no_healthy_holder(
        tv: str, bootstrap: str, bootstrap_tv1: str, kafka_tools: KafkaTools) -> None:
    boot = bootstrap if tv == "tv2" else bootstrap_tv1
    topic = unique("py-xrole-topic")
    clients: List[kc.Client] = []
    holders: List[kc.Leadership] = []
    standbys: List[Standby] = []
    opener: Optional[subprocess.Popen] = None
    try:
        roles = [unique("py-xrole-%d" % i) for i in range(3)]
        for role in roles:
            c = kc.Client(conf(boot, topic, **{"krabka.renew.background": True}))
            clients.append(c)
            holders.append(c.acquire(role, "holder", timeout=WAIT))
        for role in roles:
            c = kc.Client(conf(boot, topic))
            clients.append(c)
            standbys.append(Standby(c, role))
        # Every standby registered behind its holder before the fault.
        end = time.monotonic() + WAIT
        for role in roles:
            while [e.member for e in clients[0].describe(role, timeout=WAIT).roster] != ["holder", "standby"]:
                assert time.monotonic() < end, "the standby of %s never registered" % role
                time.sleep(0.1)
        opener = subprocess.Popen([str(kafka_tools.kopentxn), boot, topic, "0", "60000"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = opener.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("open "), "kopentxn: %r" % line
        # Four leases with the stable offset held: no standby wins, every
        # holder keeps its leadership.
        end = time.monotonic() + 4 * LEASE_S
        while time.monotonic() < end:
            for role, h, s in zip(roles, holders, standbys):
                assert s.won is None and s.error is None, \
                    "the standby of %s won (%r) while its holder was %s: a healthy holder deposed" % (
                        role, s.error, h.state)
                assert h.state == kc.LeadershipState.ACTIVE, "the holder of %s ended %s" % (role, h.state)
            time.sleep(0.05)
        # The transaction is still open: the stable offset was held the
        # whole time.
        assert opener.poll() is None
    finally:
        if opener is not None:
            opener.stdin.write("abort\n")  # type: ignore[union-attr]
            opener.stdin.close()  # type: ignore[union-attr]
            assert opener.wait(timeout=WAIT) == 0
        for c in clients:
            c.close()
        for s in standbys:
            s.thread.join(timeout=WAIT)
