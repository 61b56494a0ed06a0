"""Live tests on a real single-node Kafka (KRABKA_BOOTSTRAP). They fail,
never skip, when the broker is not given. The leadership logic that needs
no broker to prove it (a resigned leadership refusing writes, try_acquire's
retry answer, leave) runs on the in-process cluster in
test_leadership_mem.py."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Dict, Iterator

import pytest

import krabka_coord as kc
from conftest import FAST_LEASES, REPO, unique

pytestmark = pytest.mark.kafka

HERE = Path(__file__).resolve().parent
TOPIC = unique("py-test-commands")


@pytest.fixture(scope="module")
def topic() -> str:
    """A fresh 3-partition topic for the guarded writes (the test brokers do
    not auto-create topics; the binding has no admin API)."""
    addr = os.environ.get("KRABKA_BOOTSTRAP")
    # Without it nothing is created; every test using this topic also uses
    # the bootstrap fixture, which fails.
    if addr:
        subprocess.run(
            ["go", "run", "./tests/kafka/cmd/ktopic", addr, TOPIC, "3"],
            cwd=str(REPO), check=True, timeout=300, env={**os.environ, "GOFLAGS": "-buildvcs=false"},
        )
    return TOPIC


@pytest.fixture(scope="module", autouse=True)
def cluster_ready() -> None:
    """The first call on a fresh cluster creates the coordination topic while
    the transaction coordinator may still be loading; the library waits those
    start-up errors out itself, so one describe must simply answer."""
    addr = os.environ.get("KRABKA_BOOTSTRAP")
    if not addr:
        # Not silent: every test that needs the broker then fails in the
        # bootstrap fixture (the black-holed-listener test needs none).
        return
    with kc.Client({"bootstrap.servers": addr}) as c:
        st = c.describe(unique("py-warmup"), timeout=30)
        assert st.holder is None and not st.current


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
    # leaving the with block resigned the role: it stepped aside with an
    # expired lease (granted_at == deadline) and left the roster
    assert lead.state == kc.LeadershipState.CLOSED
    st = client.describe(role)
    assert st.lease is not None and st.lease.member == "node-1" and st.lease.deadline == st.lease.granted_at
    assert st.roster == () and st.removed == 1
    assert st.token == tok or st.token.supersedes(tok)




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


def _start_member(bootstrap: str, role: str, member: str, topic: str) -> subprocess.Popen:
    p = subprocess.Popen(
        [sys.executable, str(HERE / "member.py"), bootstrap, role, member, topic],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert json.loads(p.stdout.readline())["event"] == "started"  # type: ignore[union-attr]
    return p


def _next_event(p: subprocess.Popen, want: str) -> dict:
    line = p.stdout.readline()  # type: ignore[union-attr]
    assert line, "member process ended early (exit %s)" % p.wait()
    got = json.loads(line)
    assert got["event"] == want, got
    return got


def _stop_member(p: subprocess.Popen) -> None:
    p.stdin.close()  # type: ignore[union-attr]
    assert p.wait(timeout=30) == 0
    assert json.loads(p.stdout.readline())["event"] == "resigned"  # type: ignore[union-attr]


def test_failover_to_another_process_fences_the_old_leader(bootstrap: str, client: kc.Client, topic: str) -> None:
    """Member "a" (this process) holds the role and keeps writing while
    member "b" (another process) waits behind it. Then a process restarts
    with a's member id -- as a supervisor restarts a leader it believes
    dead while the old process is in fact only stalled -- and takes the role
    over at once with a new epoch. The old leader's guarded write is then
    rejected by the broker: FencedError."""
    role = unique("py-failover")
    a = client.acquire(role, "a", timeout=60)
    a_token = a.token
    a.produce(topic, b"a was here")
    # a renews in the background until the restart, so b keeps waiting.
    stop = threading.Event()

    def renewer() -> None:
        while not stop.wait(0.1):
            if a.renew_due:
                try:
                    a.renew()
                except kc.KrabkaError:
                    return

    th = threading.Thread(target=renewer)
    th.start()
    b = _start_member(bootstrap, role, "b", topic)
    restarted = None
    try:
        deadline = time.monotonic() + 30
        while True:  # until b has registered behind a
            st = client.describe(role)
            if len(st.roster) == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert st.holder == "a" and [(e.member, e.rank) for e in st.roster] == [("a", 0), ("b", 0)]

        restarted = _start_member(bootstrap, role, "a", topic)
        new_token = kc.FencingToken.parse(_next_event(restarted, "acquired")["token"])
        stop.set()
        th.join()
        assert new_token.supersedes(a_token)
        _next_event(restarted, "produced")

        with pytest.raises(kc.FencedError) as ei:
            a.produce(topic, b"a after the takeover")
        err = ei.value
        assert (err.code, err.name, err.fatal, err.retriable) == (30, "FENCED", True, False)
        assert a.state == kc.LeadershipState.FENCED
        with pytest.raises(kc.FencedError):
            a.renew()

        st = client.describe(role)
        assert st.holder == "a" and st.current and st.token == new_token

        _stop_member(restarted)
        restarted = None
        # the restarted holder resigned: b, the standby, takes the role at
        # once (b having died meanwhile fails here, in _next_event)
        got = _next_event(b, "acquired")
        assert kc.FencingToken.parse(got["token"]).supersedes(a_token)
        _next_event(b, "produced")
        _stop_member(b)
    finally:
        stop.set()
        th.join()
        a.close()
        # Only after a failure above: end the members still running.
        for p in (restarted, b):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(timeout=30)


def test_failover_after_the_lease_lapses(bootstrap: str, client: kc.Client, topic: str) -> None:
    """Member "a" stops renewing (a stalled process); member "b" in another
    process takes over once a's lease deadline has passed, with a token that
    supersedes a's. a learns it from its client's view of the log (it may
    already be FENCED), or from the broker's answer to its late write, which
    rejects the superseded epoch: either way the write raises FencedError."""
    role = unique("py-lapse")
    a = client.acquire(role, "a", timeout=60)
    a_token = a.token
    a.produce(topic, b"a was here")
    b = _start_member(bootstrap, role, "b", topic)
    try:
        t0 = time.monotonic()
        got = _next_event(b, "acquired")
        took = time.monotonic() - t0
        b_token = kc.FencingToken.parse(got["token"])
        assert b_token.supersedes(a_token)
        assert took < 15
        _next_event(b, "produced")

        assert a.state in (kc.LeadershipState.ACTIVE, kc.LeadershipState.FENCED)
        with pytest.raises(kc.FencedError) as ei:
            a.produce(topic, b"a after the takeover")
        assert ei.value.fatal
        assert a.state == kc.LeadershipState.FENCED

        st = client.describe(role)
        assert st.holder == "b" and st.current and st.token == b_token
    finally:
        a.close()
        _stop_member(b)


def test_a_restarted_member_in_the_same_process_fences_its_zombie(bootstrap: str, client: kc.Client, topic: str) -> None:
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


def _check_writers(results: "list[list[kc.ProduceResult]]", each: int) -> None:
    """Every call succeeded, no two messages share (partition, offset), and
    each writer's messages (one key, so one partition) are in its order."""
    seen = set()
    for w, res in enumerate(results):
        assert len(res) == each, "writer %d got %d results" % (w, len(res))
        for r in res:
            assert (r.partition, r.offset) not in seen, "two messages at %r" % (r,)
            seen.add((r.partition, r.offset))
        assert len({r.partition for r in res}) == 1, "writer %d spread over partitions: %r" % (w, res)
        offs = [r.offset for r in res]
        assert offs == sorted(offs) and len(set(offs)) == len(offs), "writer %d out of order: %r" % (w, offs)


def test_concurrent_guarded_writes_from_threads_and_asyncio(bootstrap: str, topic: str) -> None:
    """64 threads, then 64 asyncio tasks, write at once on one leadership
    (the library commits concurrent calls together)."""
    writers, each = 64, 8
    with kc.Client(conf(bootstrap, **{"request.timeout.ms": 30000})) as c:
        with c.acquire(unique("py-group"), "a", timeout=60) as lead:
            results: "list[list[kc.ProduceResult]]" = [[] for _ in range(writers)]
            errors: list = []

            def write(w: int) -> None:
                try:
                    for i in range(each):
                        results[w].append(lead.produce(topic, b"thread %d command %d" % (w, i), key=b"t%d" % w))
                except Exception as e:  # reported below
                    errors.append(e)

            threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert errors == []
            _check_writers(results, each)

            async def write_async(w: int) -> "list[kc.ProduceResult]":
                return [await lead.produce_async(topic, b"task %d command %d" % (w, i), key=b"a%d" % w) for i in range(each)]

            async def main() -> "list[list[kc.ProduceResult]]":
                return list(await asyncio.gather(*(write_async(w) for w in range(writers))))

            _check_writers(asyncio.run(main()), each)
            assert lead.state == kc.LeadershipState.ACTIVE


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


def test_closing_the_client_ends_its_leaderships_without_resigning(bootstrap: str, topic: str) -> None:
    role = unique("py-closed")
    c = kc.Client(conf(bootstrap))
    lead = c.acquire(role, "a", timeout=60)
    tok = lead.token
    c.close()
    assert lead.state == kc.LeadershipState.CLOSED
    with pytest.raises(kc.ClosedError) as ei:
        lead.produce(topic, b"after close")
    assert ei.value.fatal
    lead.close()
    # No tombstone was written: the lease is still there until its deadline.
    with kc.Client(conf(bootstrap)) as other:
        st = other.describe(role)
        assert st.holder == "a" and st.lease is not None and st.lease.token == tok


def test_failover_on_a_cluster_with_transaction_protocol_v1(bootstrap_tv1: str) -> None:
    """The same takeover on a broker formatted with transaction.version=1
    (KRABKA_BOOTSTRAP_TV1, set by `make test`; the test fails, never skips,
    without it): tokens, fencing and describe().current behave the same
    under both protocol versions."""
    addr = bootstrap_tv1
    tv1_topic = unique("py-tv1-commands")
    subprocess.run(
        ["go", "run", "./tests/kafka/cmd/ktopic", addr, tv1_topic, "1"],
        cwd=str(REPO), check=True, timeout=300, env={**os.environ, "GOFLAGS": "-buildvcs=false"},
    )
    role = unique("py-tv1")
    with kc.Client(conf(addr)) as client:
        deadline = time.monotonic() + 60
        while True:  # fresh cluster: wait out a retriable error, as in cluster_ready
            try:
                a = client.acquire(role, "a", timeout=30)
                break
            except kc.KrabkaError as e:
                if not e.retriable or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        a_token = a.token
        a.produce(tv1_topic, b"a")
        a.renew()
        assert client.describe(role).current
        restarted = _start_member(addr, role, "a", tv1_topic)
        try:
            new_token = kc.FencingToken.parse(_next_event(restarted, "acquired")["token"])
            assert new_token.supersedes(a_token)
            _next_event(restarted, "produced")
            with pytest.raises(kc.FencedError):
                a.produce(tv1_topic, b"a after the takeover")
            st = client.describe(role)
            assert st.holder == "a" and st.current and st.token == new_token
        finally:
            a.close()
            _stop_member(restarted)


def test_bad_topic_is_invalid_argument_and_huge_timeouts_saturate(client: kc.Client, topic: str) -> None:
    """Issue 16.3/16.4: a guarded write to topic "" is a ValueError naming
    the topic (the C API answers INVALID_ARG, tests/c/live.c) and the
    leadership stays active; a timeout beyond what the
    clock can hold means no limit, it does not expire at once."""
    with client.acquire(unique("py-edge"), "node-1", timeout=60) as lead:
        with pytest.raises(ValueError, match="topic"):
            lead.produce("", b"x")
        assert lead.state == kc.LeadershipState.ACTIVE
        lead.renew(timeout=1e300)
        lead.renew(timeout=2**63)
        assert lead.produce(topic, b"after", key=b"k", timeout=1e300).offset >= 0
        assert lead.state == kc.LeadershipState.ACTIVE


@pytest.mark.usefixtures("sigint_raises")
def test_ctrl_c_interrupts_acquire_and_resigns_what_it_wins(bootstrap: str, client: kc.Client) -> None:
    """Issue 16.2: SIGINT during a blocking acquire (no timeout, the role held
    by another member) raises KeyboardInterrupt at once instead of when the
    role is won; the acquire the library still runs wins the role later (the
    holder resigns) and that leadership is resigned and released in the
    background, never left holding the role."""
    import signal

    role = unique("py-sigint")
    # The holder renews in the background: b can win only after the resign
    # below, however slowly this test runs.
    holder_client = kc.Client(conf(bootstrap, **{"krabka.renew.background": True}))
    holder = holder_client.acquire(role, "a", timeout=60)
    a_token = holder.token
    interrupted = threading.Event()

    def interrupt() -> None:
        time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGINT)
        # Only if the interrupt did not stop the call: free the role so a
        # broken acquire returns a leadership (and the test fails) instead of
        # hanging.
        if not interrupted.wait(30):
            holder.resign(timeout=10)

    threading.Thread(target=interrupt, daemon=True).start()
    with kc.Client(conf(bootstrap)) as other:
        try:
            won = other.acquire(role, "b")
        except KeyboardInterrupt:
            interrupted.set()
        else:
            won.close()
            pytest.fail("acquire returned a leadership instead of raising KeyboardInterrupt")
        # The library's acquire goes on; the holder steps aside, b wins, and
        # the background thread resigns b's leadership: the role ends up
        # taken by a newer token with no live lease.
        holder.resign(timeout=10)
        deadline = time.monotonic() + 60
        while True:
            st = client.describe(role, timeout=10)
            # Resigned: a newer token, and no live lease (a tombstone, or the
            # expired lease plus registration tombstone of docs/PROTOCOL.md 10.2).
            if st.token > a_token and (st.lease is None or st.lease.deadline <= st.lease.granted_at) and \
                    all(e.member != "b" for e in st.roster):
                break
            assert time.monotonic() < deadline, f"b's leadership was not resigned: {st}"
            time.sleep(0.2)
    holder_client.close()


@pytest.mark.usefixtures("sigint_raises")
def test_ctrl_c_interrupts_describe_on_a_black_holed_broker() -> None:
    """Issue 16.2: SIGINT during a blocking describe on a black-holed broker
    (a listener that accepts and never answers) raises KeyboardInterrupt at
    once, not when the call gives up. The helper thread waits for the
    interrupt before it releases the call: a call that only raises after it
    returned is seen as late."""
    import signal
    import socket

    def black_hole() -> "tuple[socket.socket, list[socket.socket], threading.Event]":
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(16)
        conns: "list[socket.socket]" = []
        connected = threading.Event()

        def accept() -> None:
            while True:
                try:
                    c, _ = srv.accept()
                except OSError:
                    return
                conns.append(c)
                connected.set()

        threading.Thread(target=accept, daemon=True).start()
        return srv, conns, connected

    def interrupt_when(connected: threading.Event, interrupted: threading.Event, late: "list[bool]",
                       release: "Callable[[], None]") -> None:
        connected.wait(30)
        os.kill(os.getpid(), signal.SIGINT)
        if not interrupted.wait(10):
            late.append(True)  # the call did not raise while it blocked
            release()

    srv, conns, connected = black_hole()
    interrupted = threading.Event()
    late: "list[bool]" = []

    def release() -> None:
        srv.close()
        for c in conns:
            c.close()

    cfg = {"bootstrap.servers": "127.0.0.1:%d" % srv.getsockname()[1], "client.id": "py-sigint-describe",
           "request.timeout.ms": 20000}
    with kc.Client(cfg) as c:
        threading.Thread(target=interrupt_when, args=(connected, interrupted, late, release), daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            try:
                c.describe("r", timeout=15)
            except KeyboardInterrupt:
                interrupted.set()
                raise
        assert not late, "describe raised KeyboardInterrupt only after it returned"
        release()
    assert connected.is_set()


@pytest.mark.usefixtures("sigint_raises")
def test_ctrl_c_interrupts_renew_on_a_stopped_broker(bootstrap: str, client: kc.Client) -> None:
    """SIGINT during a renew whose broker answers nothing (SIGSTOP) raises
    KeyboardInterrupt at once; the broker is continued only after the
    interrupt (or, if the call did not raise, after 10 s, which the test
    reports as late)."""
    import signal

    pid = _broker_pid(bootstrap)
    role = unique("py-sigint-renew")
    lead = client.acquire(role, "a", timeout=60)
    interrupted = threading.Event()
    late: "list[bool]" = []

    def stop_then_interrupt() -> None:
        try:
            os.kill(pid, signal.SIGSTOP)
            time.sleep(0.3)  # the renew below is on its way to a stopped broker
            os.kill(os.getpid(), signal.SIGINT)
            if not interrupted.wait(10):
                late.append(True)
        finally:
            os.kill(pid, signal.SIGCONT)

    t = threading.Thread(target=stop_then_interrupt, daemon=True)
    try:
        t.start()
        with pytest.raises(KeyboardInterrupt):
            try:
                while True:  # renews until the broker stops answering
                    lead.renew(timeout=60)
            except KeyboardInterrupt:
                interrupted.set()
                raise
        assert not late, "renew raised KeyboardInterrupt only after it returned"
    finally:
        t.join()
        lead.close()


def _broker_pid(bootstrap: str) -> int:
    """The pid of the process listening on the bootstrap port."""
    port = int(bootstrap.rsplit(":", 1)[1])
    out = subprocess.run(["ss", "-Hltnp", "sport = :%d" % port], capture_output=True, text=True, check=True).stdout
    import re

    m = re.search(r"pid=(\d+)", out)
    assert m, "no process listens on %s: %r" % (bootstrap, out)
    return int(m.group(1))


def test_cancelled_acquire_async_resigns_what_it_wins(bootstrap: str, client: kc.Client) -> None:
    """Issue 16.2, asyncio: a cancelled acquire_async raises CancelledError
    at once; the leadership the library wins afterwards is resigned and
    released, never left holding the role."""
    role = unique("py-cancel")
    holder_client = kc.Client(conf(bootstrap, **{"krabka.renew.background": True}))
    holder = holder_client.acquire(role, "a", timeout=60)
    a_token = holder.token

    async def main() -> None:
        with kc.Client(conf(bootstrap)) as other:
            task = asyncio.ensure_future(other.acquire_async(role, "b"))
            await asyncio.sleep(1.0)
            assert not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            holder.resign(timeout=10)
            deadline = time.monotonic() + 60
            while True:
                st = client.describe(role, timeout=10)
                if st.token > a_token and (st.lease is None or st.lease.deadline <= st.lease.granted_at) and \
                        all(e.member != "b" for e in st.roster):
                    break
                assert time.monotonic() < deadline, f"b's leadership was not resigned: {st}"
                await asyncio.sleep(0.2)

    try:
        asyncio.run(main())
    finally:
        holder_client.close()
