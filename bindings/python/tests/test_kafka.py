"""Live tests on a real single-node Kafka (KRABKA_BOOTSTRAP). They fail,
never skip, when the broker is not given."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, Iterator

import pytest

import krabka_coord as kc
from conftest import FAST_LEASES, REPO, unique

pytestmark = pytest.mark.kafka

HERE = Path(__file__).resolve().parent
TOPIC = "py-test-commands"


@pytest.fixture(scope="module")
def topic() -> str:
    addr = os.environ.get("KRABKA_BOOTSTRAP")
    if addr:
        subprocess.run(
            ["go", "run", "./bindings/python/tests/ktopic", "-bootstrap", addr, "-topic", TOPIC, "-partitions", "3"],
            cwd=str(REPO), check=True, timeout=300, env={**os.environ, "GOFLAGS": "-buildvcs=false"},
        )
    return TOPIC


def conf(bootstrap: str, **extra: object) -> Dict[str, object]:
    c: Dict[str, object] = {"bootstrap.servers": bootstrap, "krabka.poll.interval.ms": 200}
    c.update(FAST_LEASES)
    c.update(extra)
    return c


@pytest.fixture
def client(bootstrap: str) -> Iterator[kc.Client]:
    with kc.Client(conf(bootstrap)) as c:
        yield c


def test_acquire_renew_produce_describe_resign(client: kc.Client, topic: str) -> None:
    role = unique("py-basic")
    lead = client.acquire(role, "node-1", timeout=60)
    with lead:
        assert lead.state == kc.LeadershipState.ACTIVE and lead.active
        tok = lead.token
        assert tok.validate() is tok and tok > kc.NO_EPOCH
        lease = lead.lease
        assert lease.member == "node-1" and lease.token == tok and lease.deadline > lease.granted_at
        assert lead.renew_due is False

        st = client.describe(role, timeout=30)
        assert st.holder == "node-1" and st.current and st.token == tok
        assert st.lease == lease
        assert [(e.member, e.rank) for e in st.roster] == [("node-1", 0)]
        assert st.partition == kc.role_partition(role, 16)
        assert st.skipped == 0

        time.sleep(1.1)
        assert lead.renew_due is True
        lead.renew(timeout=10)
        assert lead.lease.granted_at > lease.granted_at and lead.token == tok
        assert lead.renew_due is False

        part, off = lead.produce(topic, b"hello", key="k1")
        assert 0 <= part < 3 and off >= 0
        res = lead.produce(topic, "pinned", partition=2)
        assert res.partition == 2 and res == (2, res.offset)
    # leaving the with block resigned the role
    assert lead.state == kc.LeadershipState.CLOSED
    st = client.describe(role)
    assert st.lease is None and st.holder is None and not st.current
    assert st.token == tok or st.token.supersedes(tok)


def test_a_resigned_leadership_refuses_guarded_writes(client: kc.Client, topic: str) -> None:
    role = unique("py-resigned")
    lead = client.acquire(role, "node-1", timeout=60)
    lead.resign(timeout=10)
    assert lead.state == kc.LeadershipState.RESIGNED
    with pytest.raises(kc.NotLeaderError) as ei:
        lead.produce(topic, b"late")
    assert ei.value.fatal and ei.value.name == "NOT_LEADER"
    with pytest.raises(kc.NotLeaderError):
        lead.renew()
    lead.close()
    lead.close()  # idempotent
    with pytest.raises(kc.NotLeaderError):
        _ = lead.token


def test_try_acquire_answers_when_to_retry(bootstrap: str, client: kc.Client) -> None:
    role = unique("py-try")
    won = client.try_acquire(role, "a", timeout=30)
    assert won and won.leadership is not None and won.retry_at is None
    with won.leadership as lead, kc.Client(conf(bootstrap)) as other:
        res = other.try_acquire(role, "b", timeout=30)
        assert not res and res.leadership is None
        lead_obj, retry_at = res
        assert lead_obj is None and retry_at is not None
        # b is rank 0 behind a live lease: it may challenge at the deadline.
        assert res.retry_at_ms >= lead.lease.deadline
        assert 0 < res.retry_in() <= 4


def test_acquire_times_out_with_a_builtin_timeout_error(bootstrap: str, client: kc.Client) -> None:
    role = unique("py-timeout")
    with client.acquire(role, "a", timeout=60) as lead, kc.Client(conf(bootstrap)) as other:
        t0 = time.monotonic()
        with pytest.raises(TimeoutError) as ei:
            # a renews in a thread, so b never gets the role
            stop = threading.Event()

            def renewer() -> None:
                while not stop.wait(0.2):
                    if lead.renew_due:
                        lead.renew()

            th = threading.Thread(target=renewer)
            th.start()
            try:
                other.acquire(role, "b", timeout=2)
            finally:
                stop.set()
                th.join()
        assert isinstance(ei.value, kc.KrabkaTimeoutError) and ei.value.retriable
        assert 1.5 < time.monotonic() - t0 < 10


def test_failover_between_processes_fences_the_old_leader(bootstrap: str, client: kc.Client, topic: str) -> None:
    """a holds the role and then stalls (stops renewing, as a paused
    process would); b, another process, takes over after the lease; a's
    guarded write is then rejected."""
    role = unique("py-failover")
    a = client.acquire(role, "a", timeout=60)
    a_token = a.token
    a.produce(topic, b"a was here")
    b = subprocess.Popen(
        [sys.executable, str(HERE / "member.py"), bootstrap, role, "b", topic],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert json.loads(b.stdout.readline())["event"] == "started"  # type: ignore[union-attr]
        t0 = time.monotonic()
        got = json.loads(b.stdout.readline())  # type: ignore[union-attr]
        took = time.monotonic() - t0
        assert got["event"] == "acquired", got
        b_token = kc.FencingToken.parse(got["token"])
        assert b_token.supersedes(a_token)
        assert took < 15
        produced = json.loads(b.stdout.readline())  # type: ignore[union-attr]
        assert produced["event"] == "produced"

        with pytest.raises(kc.FencedError) as ei:
            a.produce(topic, b"a after the takeover")
        assert ei.value.fatal and ei.value.code == 30
        assert a.state == kc.LeadershipState.FENCED

        st = client.describe(role)
        assert st.holder == "b" and st.current and st.token == b_token
    finally:
        b.stdin.close()  # type: ignore[union-attr]
        b.wait(timeout=30)
        a.close()
    assert b.returncode == 0


def test_a_restarted_member_fences_its_own_zombie(bootstrap: str, client: kc.Client, topic: str) -> None:
    """The same member id acquiring again (a restart) mints a new epoch at
    once; the old incarnation, whose lease is still live, is fenced by the
    broker on its next guarded write."""
    role = unique("py-zombie")
    zombie = client.acquire(role, "node-1", timeout=60)
    with kc.Client(conf(bootstrap)) as restarted:
        with restarted.acquire(role, "node-1", timeout=30) as fresh:
            assert fresh.token.supersedes(zombie.token)
            with pytest.raises(kc.FencedError):
                zombie.produce(topic, b"zombie write")
            assert fresh.produce(topic, b"fresh write").offset >= 0
    zombie.close()


def test_asyncio_forms(bootstrap: str, topic: str) -> None:
    role = unique("py-async")

    async def main() -> kc.FencingToken:
        async with kc.Client(conf(bootstrap)) as c:
            lead = await c.acquire_async(role, "a", timeout=60)
            async with lead:
                await lead.renew_async()
                part, off = await lead.produce_async(topic, b"async")
                assert off >= 0
                st = await c.describe_async(role)
                assert st.holder == "a"
                res = await c.try_acquire_async(role, "b")
                assert not res.won
                return lead.token

    tok = asyncio.run(main())
    assert tok > kc.NO_EPOCH


def test_close_wakes_a_blocked_acquire_with_closed_error(bootstrap: str, client: kc.Client) -> None:
    role = unique("py-close")
    with client.acquire(role, "a", timeout=60) as lead:
        other = kc.Client(conf(bootstrap, **{"krabka.lease.ms": 30000, "krabka.renew.interval.ms": 10000}))
        errors: list = []

        def blocked() -> None:
            try:
                other.acquire(role, "b")
            except kc.KrabkaError as e:
                errors.append(e)

        th = threading.Thread(target=blocked)
        th.start()
        time.sleep(1.0)
        other.close()
        th.join(timeout=30)
        assert not th.is_alive()
        assert len(errors) == 1 and isinstance(errors[0], kc.ClosedError)
        assert lead.active
