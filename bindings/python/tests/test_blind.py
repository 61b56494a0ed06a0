"""A blind deposed holder: the BROKER refuses its writes.

How the successor mints unseen: client A follows coordination topic T1 and
client B follows a different coordination topic T2. The role name is the
same, and the role (without krabka.role.prefix) is the transactional.id, so
B's acquire mints a newer epoch of the very producer A writes through
(InitProducerId at the one transaction coordinator), while B's lease and
registration land on T2, which A's view never reads. A therefore still
believes it holds (ACTIVE, no end_error): the library's live view, which
would otherwise end A as FENCED before it writes (that is what the other
Python tests exercise), learns nothing. The only thing left to stop A is the
broker's answer to its transactional write, PRODUCER_FENCED (90) or
INVALID_PRODUCER_EPOCH (47), and that is what these tests prove through the
library's own write path: produce, produce_many, renew and resign, each on a
cluster formatted with transaction.version 2 (KRABKA_BOOTSTRAP) and 1
(KRABKA_BOOTSTRAP_TV1). Both fail, never skip, when their variable is
missing.

A fresh A/B pair is used per operation: after one refusal A's leadership
has ended, and a second operation would be answered locally, not by the
broker.
"""

from __future__ import annotations

import re
import time
from typing import Dict, List

import pytest

import krabka_coord as kc
from conftest import KafkaTools, unique

pytestmark = pytest.mark.kafka

OPS = ["produce", "produce_many", "renew", "resign"]

# How the live view words the FENCED it detects from the log
# (core/coord/leadership.go, watchView) and the one of a second acquire of the
# same role by the same client (core/coord/client.go): neither may be the
# answer here, which must come from the broker.
VIEW_WORDING = "the log shows a lease of"
SAME_CLIENT_WORDING = "was acquired again by this client"
BROKER_CODES = re.compile(r"\b(PRODUCER_FENCED|INVALID_PRODUCER_EPOCH)\b")

# Long leases: A must still be inside its lease when it writes (it never
# renews on its own), so nothing but the broker can end it.
LEASES = {"krabka.lease.ms": 60000, "krabka.renew.interval.ms": 20000, "krabka.poll.interval.ms": 200,
          "krabka.topic.partitions": 1}


class Cluster:
    """One cluster's command topic C and the coordination topics T1 (A's)
    and T2 (B's), shared by the operations (each uses its own role)."""

    def __init__(self, name: str, bootstrap: str, tools: KafkaTools) -> None:
        self.name = name
        self.bootstrap = bootstrap
        self.tools = tools
        self.commands = unique("py-blind-%s-commands" % name)
        self.t1 = unique("py-blind-%s-t1" % name)
        self.t2 = unique("py-blind-%s-t2" % name)
        tools.create_topic(bootstrap, self.commands, 1)

    def client(self, coordination_topic: str, client_id: str) -> kc.Client:
        conf: Dict[str, object] = {"bootstrap.servers": self.bootstrap, "krabka.topic": coordination_topic,
                                   "client.id": client_id}
        conf.update(LEASES)
        return kc.Client(conf)


@pytest.fixture(scope="module")
def tv2(kafka_tools: KafkaTools) -> Cluster:
    import os

    addr = os.environ.get("KRABKA_BOOTSTRAP")
    if not addr:
        pytest.fail("KRABKA_BOOTSTRAP is not set: run the live tests via `make test`", pytrace=False)
    return Cluster("tv2", addr, kafka_tools)


@pytest.fixture(scope="module")
def tv1(kafka_tools: KafkaTools) -> Cluster:
    import os

    addr = os.environ.get("KRABKA_BOOTSTRAP_TV1")
    if not addr:
        pytest.fail("KRABKA_BOOTSTRAP_TV1 is not set: run the live tests via `make test` "
                    "(it starts a cluster formatted with transaction.version=1)", pytrace=False)
    return Cluster("tv1", addr, kafka_tools)


@pytest.fixture(params=["tv2", "tv1"])
def cluster(request: pytest.FixtureRequest) -> Cluster:
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


def _acquire(client: kc.Client, role: str, member: str) -> kc.Leadership:
    """acquire, waiting out the retriable errors of a cluster still starting
    (the transaction coordinator loading); anything else fails the test."""
    deadline = time.monotonic() + 90
    while True:
        try:
            return client.acquire(role, member, timeout=30)
        except kc.KrabkaError as e:
            if not e.retriable or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _old_after_values(op: str) -> List[str]:
    if op == "produce":
        return ["old-after-produce"]
    if op == "produce_many":
        return ["old-after-produce_many-%d" % i for i in range(3)]
    return []


def _deposed_op(lead: kc.Leadership, op: str, topic: str) -> None:
    if op == "produce":
        lead.produce(topic, "old-after-produce", timeout=30)
    elif op == "produce_many":
        lead.produce_many([(topic, v, None, None) for v in _old_after_values(op)], timeout=30)
    elif op == "renew":
        lead.renew(timeout=30)
    elif op == "resign":
        lead.resign(timeout=30)
    else:
        raise AssertionError("unknown op %r" % op)


@pytest.mark.parametrize("op", OPS)
def test_the_broker_refuses_a_blind_deposed_holder(cluster: Cluster, op: str) -> None:
    role = unique("py-blind-%s-%s" % (cluster.name, op))
    topic = cluster.commands
    with cluster.client(cluster.t1, "py-blind-old") as ca, cluster.client(cluster.t2, "py-blind-new") as cb:
        a = _acquire(ca, role, "old")
        a_token, a_lease = a.token, a.lease
        a.produce(topic, "old-before-%s" % op, timeout=30)

        b = _acquire(cb, role, "new")
        b_token = b.token
        assert b_token.supersedes(a_token), (b_token, a_token)
        assert b_token.producer_id == a_token.producer_id  # one transactional.id
        b.produce(topic, "new-%s-1" % op, timeout=30)

        # A saw nothing: its view of T1 holds no newer lease.
        assert a.state == kc.LeadershipState.ACTIVE and a.end_error is None
        assert a.token == a_token

        with pytest.raises(kc.FencedError) as ei:
            _deposed_op(a, op, topic)
        err = ei.value
        text = str(err)
        assert (err.code, err.name, err.fatal) == (kc.ErrorCode.FENCED, "FENCED", True)
        assert BROKER_CODES.search(text), "the refusal does not name the broker's code: %r" % text
        assert VIEW_WORDING not in text and SAME_CLIENT_WORDING not in text, text
        # The leadership has ended FENCED (a refused resign too: the
        # resignation never happened).
        assert a.state == kc.LeadershipState.FENCED, a.state

        b.produce(topic, "new-%s-2" % op, timeout=30)

        # A's refused renew or resign left no lease on T1: the last lease
        # there is still the one A wrote when it won, and the coordinator's
        # current token for the role is B's.
        st = ca.describe(role, timeout=30)
        assert st.lease == a_lease, (st.lease, a_lease)
        assert st.holder == "old" and not st.current
        assert st.token == b.token, (st.token, b.token)
        b_token_now = b.token
        b.close()
        a.close()

    got = cluster.tools.read(cluster.bootstrap, topic)
    values = [r["value"] for r in got]
    by_value = {r["value"]: r for r in got}
    # No refused write of any op so far reached the log.
    assert not [v for v in values if v.startswith("old-after-")], values
    for v in ["old-before-%s" % op, "new-%s-1" % op, "new-%s-2" % op]:
        assert values.count(v) == 1, (v, values)
    assert by_value["old-before-%s" % op]["producer_id"] == a_token.producer_id
    for v in ["new-%s-1" % op, "new-%s-2" % op]:
        r = by_value[v]
        assert (r["producer_id"], r["producer_epoch"]) == (b_token_now.producer_id, b_token_now.producer_epoch), \
            "%s carries %d:%d, B's token is %s" % (v, r["producer_id"], r["producer_epoch"], b_token_now)


def test_confirm_is_true_for_the_live_term_and_false_after_a_blind_successors_mint(cluster: Cluster) -> None:
    """Leadership.confirm asks the transaction coordinator, not the view:
    True for the live term (after renewals and writes too), False for the
    blind holder once B minted, while A still reads ACTIVE (confirm ends
    nothing), True for B; after the broker refused A, FencedError."""
    role = unique("py-blind-%s-confirm" % cluster.name)
    topic = cluster.commands
    with cluster.client(cluster.t1, "py-blind-old") as ca, cluster.client(cluster.t2, "py-blind-new") as cb:
        a = _acquire(ca, role, "old")
        assert a.confirm(timeout=30) is True
        a.renew(timeout=30)
        a.produce(topic, "old-confirmed", timeout=30)
        assert a.confirm(timeout=30) is True

        b = _acquire(cb, role, "new")
        assert b.token.supersedes(a.token), (b.token, a.token)
        assert a.confirm(timeout=30) is False
        assert a.state == kc.LeadershipState.ACTIVE and a.end_error is None
        assert b.confirm(timeout=30) is True

        async def both() -> "tuple[bool, bool]":
            return await a.confirm_async(timeout=30), await b.confirm_async(timeout=30)

        import asyncio

        assert asyncio.run(both()) == (False, True)

        with pytest.raises(kc.FencedError) as ei:
            a.produce(topic, "old-after-confirm", timeout=30)
        assert BROKER_CODES.search(str(ei.value)), str(ei.value)
        with pytest.raises(kc.FencedError):
            a.confirm(timeout=30)
        b.close()
        a.close()
    values = [r["value"] for r in cluster.tools.read(cluster.bootstrap, topic)]
    assert "old-after-confirm" not in values and values.count("old-confirmed") == 1, values
