"""Pipelines through the Python binding: Leadership.consume -> Input (poll,
iteration, position, committed, context manager), guarded writes with
offsets (sync and asyncio), and bad input: TypeError naming the argument,
the library's errors naming the topic. Live on KRABKA_BOOTSTRAP (tv2);
the failover campaign is test_pipeline_failover.py."""

from __future__ import annotations

import asyncio
from typing import List

import pytest

import krabka_coord as kc
from conftest import FAST_LEASES, KafkaTools, unique

pytestmark = pytest.mark.kafka

N = 30


def conf(bootstrap: str) -> dict:
    return {"bootstrap.servers": bootstrap, "client.id": "py-pipe", **FAST_LEASES}


def feed(client: kc.Client, role: str, req: str) -> None:
    with client.acquire(role + "-feeder", "feeder", timeout=60) as f:
        f.produce_many([(req, b"req-%d" % n, None, n % 2, {"n": str(n).encode()}) for n in range(N)])


def test_pipeline_step_poll_iterate_offsets(bootstrap: str, kafka_tools: KafkaTools) -> None:
    role = unique("py-pipe-step")
    req, cmd = role + "-req", role + "-cmd"
    kafka_tools.create_topic(bootstrap, req, 2)
    kafka_tools.create_topic(bootstrap, cmd, 2)
    with kc.Client(conf(bootstrap)) as client:
        feed(client, role, req)
        with client.acquire(role, "a", timeout=60) as lead:
            # Bad input, before anything is read or written.
            with pytest.raises(TypeError, match="topic 0 must be str"):
                lead.consume(b"requests")  # type: ignore[arg-type]
            with pytest.raises(ValueError, match="at least one topic"):
                lead.consume()
            with pytest.raises(kc.InvalidArgumentError, match=r"topics\[0\].*longer than 249"):
                lead.consume("t" * 250)
            with pytest.raises(kc.InvalidArgumentError, match="UTF-8"):
                lead.consume("bad\udcff")
            with pytest.raises(kc.UnknownTopicOrPartitionError, match="krabka-no-such-topic"):
                lead.consume("krabka-no-such-topic-" + role, timeout=5)
            with pytest.raises(TypeError, match="offsets must be a list"):
                lead.produce(cmd, b"x", offsets="r")  # type: ignore[arg-type]
            with pytest.raises(TypeError, match=r"offsets\[0\].topic must be str"):
                lead.produce(cmd, b"x", offsets=[(1, 0, 0)])  # type: ignore[list-item]
            with pytest.raises(ValueError, match=r"offsets\[0\].offset"):
                lead.produce(cmd, b"x", offsets=[kc.Offset(req, 0, -1)])
            with pytest.raises(kc.InvalidArgumentError, match="not read"):
                lead.produce(cmd, b"x", offsets=[kc.Offset(req, 0, 1)])

            with lead.consume(req) as inp:
                assert inp.committed() == [kc.Offset(req, 0, 0), kc.Offset(req, 1, 0)]
                with pytest.raises(TypeError, match="max must be int"):
                    inp.poll(max="10")  # type: ignore[arg-type]
                with pytest.raises(ValueError, match="max"):
                    inp.poll(max=0)
                got: List[kc.InputRecord] = []
                while len(got) < 10:
                    got += inp.poll(max=10 - len(got), timeout=10)
                for r in got:
                    n = int(r.value[4:])  # type: ignore[index]
                    assert r.topic == req and r.partition == n % 2 and r.offset == n // 2 and r.key is None
                    names = [h[0] for h in r.headers]
                    assert ("n", str(n).encode()) in r.headers and "krabka.token" in names
                pos = inp.position()
                assert sum(o.offset for o in pos) == 10
                res = lead.produce_many([(cmd, b"cmd-" + r.value[4:], None, r.partition) for r in got],  # type: ignore[index]
                                        offsets=pos)
                assert [p for p, _ in res] == [r.partition for r in got]
                assert inp.committed() == pos
                # A partition the first polls read from (they may all have come from one).
                moved = next(o for o in pos if o.offset > 0)
                with pytest.raises(kc.InvalidArgumentError, match="backwards"):
                    lead.produce(cmd, b"x", offsets=[kc.Offset(req, moved.partition, moved.offset - 1)])
                # Iteration yields the rest, one by one.
                rest = []
                for r in inp:
                    rest.append(r)
                    if len(got) + len(rest) == N:
                        break
                lead.produce_many([], offsets=inp.position())  # offsets alone
                assert inp.committed() == [kc.Offset(req, 0, N // 2), kc.Offset(req, 1, N // 2)]
                assert inp.poll(timeout=0.3) == []  # nothing left: [] when the time is up
        # The next leader starts where the last one committed.
        with client.acquire(role, "b", timeout=60) as lead2, lead2.consume(req) as inp2:
            assert inp2.committed() == [kc.Offset(req, 0, N // 2), kc.Offset(req, 1, N // 2)]
    recs = kafka_tools.read(bootstrap, cmd)
    assert sorted(int(r["value"][4:]) for r in recs) == sorted(int(r.value[4:]) for r in got)  # type: ignore[index]


def test_pipeline_asyncio_concurrent_writers(bootstrap: str, kafka_tools: KafkaTools) -> None:
    role = unique("py-pipe-async")
    req, cmd = role + "-req", role + "-cmd"
    kafka_tools.create_topic(bootstrap, req, 2)
    kafka_tools.create_topic(bootstrap, cmd, 2)

    async def main() -> None:
        async with kc.Client(conf(bootstrap)) as client:
            feed(client, role, req)
            lead = await client.acquire_async(role, "a", timeout=60)
            async with lead:
                async with await lead.consume_async(req) as inp:
                    got: List[kc.InputRecord] = []
                    while len(got) < N:
                        got += await inp.poll_async(max=N, timeout=10)
                    # One writer per record, all at once: their offsets merge
                    # per partition (the highest wins) in group commits.
                    await asyncio.gather(*[
                        lead.produce_async(cmd, b"cmd-" + r.value[4:], partition=r.partition,  # type: ignore[index]
                                           offsets=[kc.Offset(req, r.partition, r.offset + 1)])
                        for r in got
                    ])
                    assert inp.committed() == [kc.Offset(req, 0, N // 2), kc.Offset(req, 1, N // 2)]
                    assert await inp.poll_async(timeout=0.3) == []

    asyncio.run(main())
    recs = kafka_tools.read(bootstrap, cmd)
    assert sorted(int(r["value"][4:]) for r in recs) == list(range(N))


def test_closed_input_and_leadership() -> None:
    inp = kc.Input.__new__(kc.Input)
    from krabka_coord._native import Handle, lib

    inp._h = Handle(None, lib.krabka_input_destroy)  # type: ignore[arg-type]
    with pytest.raises(kc.ClosedError, match="Input was closed"):
        inp.position()
    with pytest.raises(kc.ClosedError):
        inp.poll()


def test_example_pipeline_turns_requests_into_commands_and_resigns_on_sigterm(bootstrap: str,
                                                                              kafka_tools: KafkaTools) -> None:
    """examples/python/pipeline.py as a child process: every request's
    command once; a second instance started meanwhile (a standby) takes over
    at once when the first gets SIGTERM, and starts after the committed
    requests (the command topic still has each command once)."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    here = Path(__file__).resolve().parent
    example = here.parents[2] / "examples" / "python" / "pipeline.py"
    role = unique("py-pipe-example")
    req, cmd = role + "-req", role + "-cmd"
    kafka_tools.create_topic(bootstrap, req, 2)
    kafka_tools.create_topic(bootstrap, cmd, 2)
    env = {**os.environ, "PYTHONPATH": str(here.parent / "src")}

    def start(member: str) -> "subprocess.Popen[str]":
        return subprocess.Popen([sys.executable, str(example), bootstrap, role, member, req, cmd],
                                stdout=subprocess.DEVNULL, text=True, env=env)

    def wait_commands(n: int) -> List[str]:
        end = time.monotonic() + 60
        values: List[str] = []
        while time.monotonic() < end:
            values = [r["value"] for r in kafka_tools.read(bootstrap, cmd)]
            if len(values) >= n:
                break
            time.sleep(0.5)
        return values

    with kc.Client(conf(bootstrap)) as client, client.acquire(role + "-feeder", "feeder", timeout=60) as f:
        f.produce_many([(req, b"req-%d" % n, None, n % 2) for n in range(N)])
        first = start("node-1")
        second = None
        try:
            assert len(wait_commands(N)) == N
            second = start("node-2")
            time.sleep(2)  # registered as a standby (the roster is the elector's business)
            first.send_signal(signal.SIGTERM)
            assert first.wait(timeout=60) == 0
            f.produce_many([(req, b"req-%d" % n, None, n % 2) for n in range(N, 2 * N)])
            values = wait_commands(2 * N)
        finally:
            for p in (first, second):
                if p is not None and p.poll() is None:
                    p.send_signal(signal.SIGTERM)
                    p.wait(timeout=60)
    assert sorted(values) == sorted("done req-%d" % n for n in range(2 * N)), values
