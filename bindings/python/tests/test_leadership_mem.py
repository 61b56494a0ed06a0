"""The leadership logic on the in-process cluster (krabka_coord.testing, the
pytest plugin's krabka_cluster): a resigned leadership refuses writes,
try_acquire answers when to retry, leave and close-with-leave remove
members. Moved here from test_kafka.py, where they ran on a real broker;
the real-broker tests that prove safety (failovers fencing the old leader,
the broker refusing a deposed holder, transaction version 1) stay there."""

from __future__ import annotations

from typing import Iterator

import pytest

import krabka_coord as kc
from krabka_coord.testing import Cluster
from conftest import FAST_LEASES, unique

TOPIC = "commands"


@pytest.fixture
def client(krabka_cluster: Cluster) -> Iterator[kc.Client]:
    with krabka_cluster.client(FAST_LEASES) as c:
        yield c


def test_a_resigned_leadership_refuses_guarded_writes(client: kc.Client) -> None:
    role = unique("py-resigned")
    lead = client.acquire(role, "node-1", timeout=60)
    lead.resign(timeout=10)
    assert lead.state == kc.LeadershipState.RESIGNED
    with pytest.raises(kc.NotLeaderError) as ei:
        lead.produce(TOPIC, b"late")
    assert ei.value.fatal and ei.value.name == "NOT_LEADER"
    with pytest.raises(kc.NotLeaderError):
        lead.renew()
    lead.close()
    lead.close()  # idempotent
    with pytest.raises(kc.NotLeaderError):
        _ = lead.token


def test_try_acquire_answers_when_to_retry(krabka_cluster: Cluster, client: kc.Client) -> None:
    role = unique("py-try")
    won = client.try_acquire(role, "a", timeout=30)
    assert won and won.leadership is not None and won.retry_at is None
    with won.leadership as lead, krabka_cluster.client(FAST_LEASES) as other:
        res = other.try_acquire(role, "b", timeout=30)
        assert not res and res.leadership is None
        lead_obj, retry_at = res
        assert lead_obj is None and retry_at is not None
        # b is rank 0 behind a live lease: it may challenge at the deadline.
        assert res.retry_at_ms >= lead.lease.deadline
        # retry_in() counts from the system clock; the cluster's clock reads
        # 2026-01-01 until advanced: the answer is the instant above.


def test_leave_and_close_with_leave_remove_members(krabka_cluster: Cluster, client: kc.Client) -> None:
    """Leave removes a registration; closing a client leaves the roles it
    registered in and does not hold; the holder stays registered."""
    role = unique("py-leave")
    with client.acquire(role, "holder", timeout=60) as lead:
        waiter, gone = krabka_cluster.client(FAST_LEASES), krabka_cluster.client(FAST_LEASES)
        try:
            assert not waiter.try_acquire(role, "waiter", timeout=30)
            assert not gone.try_acquire(role, "gone", timeout=30)
            st = client.describe(role)
            assert [e.member for e in st.roster] == ["holder", "waiter", "gone"] and st.removed == 0
            client.leave(role, "gone", timeout=10)
            st = client.describe(role)
            assert [e.member for e in st.roster] == ["holder", "waiter"] and st.removed == 1
        finally:
            waiter.close()  # krabka.leave.on.close: "waiter" leaves
            gone.close()
        st = client.describe(role)
        assert [e.member for e in st.roster] == ["holder"] and st.removed == 2
        assert st.holder == "holder" and lead.active
    with pytest.raises(kc.DataError):
        client.leave(role, "")

