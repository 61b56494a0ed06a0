"""Exactly-once pipelines under forced failovers, on real brokers
(transaction.version 2: KRABKA_BOOTSTRAP; 1: KRABKA_BOOTSTRAP_TV1).

An input topic receives 10,000 numbered requests ("req-<n>", partition
n % 4) in 20 chunks; three worker processes (pipeline_worker.py) campaign
for one role, and the holder turns every request into one command
("cmd-<n>", same partition), one concurrent writer per partition, each
write carrying its partition's consumed offset (Leadership.consume,
produce_many_async(offsets=...)). After each chunk, once the holder has
written some of it, the test forces a failover of the holder: SIGKILL (a
new worker process replaces it), SIGSTOP until another worker took the
role (past the lease; SIGCONT after), resign, or, on the tv2 cluster, a
cut link (the worker whose every connection goes through kproxy on the
extra listener KRABKA_BOOTSTRAP_X1; healed after the takeover; when
another worker holds the role at a cut's turn it resigns to that worker
first, a resign failover, and the cut comes at the next step). tv1 has no
such listener: its 20 failovers mix the other three. The command topic is
then read back read_committed (kread): every request's command exactly
once, in request order per partition (missing 0, duplicated 0, out of
order 0). The figures are printed.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

import krabka_coord as kc
from conftest import KafkaTools, Proxy, unique

pytestmark = pytest.mark.kafka

HERE = Path(__file__).resolve().parent
N_REQ = 10000
PARTS = 4
FAULTS = 20
WORKERS = 3
WAIT = 120.0  # a bound for one wait (a loaded machine), not a timing check


class Worker:
    """One worker process and the JSON lines it printed."""

    def __init__(self, slot: int, member: str, bootstrap: str, role: str, req: str, cmd: str,
                 events: "queue.Queue[Tuple[float, Worker, Dict[str, Any]]]") -> None:
        self.slot, self.member = slot, member
        self.stopped = False
        self.p = subprocess.Popen([sys.executable, str(HERE / "pipeline_worker.py"), bootstrap, role, member, req, cmd],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.t = threading.Thread(target=self._read, args=(events,), daemon=True)
        self.t.start()

    def _read(self, events: "queue.Queue[Tuple[float, Worker, Dict[str, Any]]]") -> None:
        for line in self.p.stdout:  # type: ignore[union-attr]
            try:
                events.put((time.monotonic(), self, json.loads(line)))
            except ValueError:
                pass

    def send(self, cmd: str) -> None:
        try:
            self.p.stdin.write(cmd + "\n")  # type: ignore[union-attr]
            self.p.stdin.flush()  # type: ignore[union-attr]
        except (BrokenPipeError, ValueError):
            pass

    def close(self) -> None:
        if self.stopped:
            os.kill(self.p.pid, signal.SIGCONT)
            self.stopped = False
        try:
            self.p.stdin.close()  # type: ignore[union-attr]
        except (BrokenPipeError, ValueError):
            pass
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


class Pipeline:
    """The workers, what they reported, and the faults."""

    def __init__(self, bootstrap: str, x1: Optional[str], role: str, req: str, cmd: str) -> None:
        self.bootstrap, self.x1, self.role, self.req, self.cmd = bootstrap, x1, role, req, cmd
        self.events: "queue.Queue[Tuple[float, Worker, Dict[str, Any]]]" = queue.Queue()
        self.workers: List[Worker] = []
        self.spawned = 0
        self.holder: Optional[Worker] = None
        self.token = ""
        self.wrote_at = 0.0  # when the holder last wrote
        self.acquired = 0
        self.wrote = 0
        self.ended: Dict[str, int] = {}
        for slot in range(WORKERS):
            self.spawn(slot)

    def spawn(self, slot: int) -> Worker:
        self.spawned += 1
        bootstrap = self.x1 if (slot == 0 and self.x1) else self.bootstrap
        w = Worker(slot, "w%d-%d" % (slot, self.spawned), bootstrap, self.role, self.req, self.cmd, self.events)
        if slot < len(self.workers):
            self.workers[slot] = w
        else:
            self.workers.append(w)
        return w

    def pump(self, timeout: float) -> None:
        """Takes what the workers reported within timeout seconds."""
        try:
            at, w, ev = self.events.get(timeout=timeout)
        except queue.Empty:
            return
        kind = ev.get("event")
        if kind == "acquired":
            self.acquired += 1
            self.holder, self.token, self.wrote_at = w, ev["token"], 0.0
        elif kind == "wrote":
            self.wrote += 1
            if w is self.holder and ev["token"] == self.token:
                self.wrote_at = at
        elif kind in ("ended", "resigned"):
            name = ev.get("error", "Resigned")
            self.ended[name] = self.ended.get(name, 0) + 1
            if w is self.holder and ev["token"] == self.token:
                self.holder = None

    def wait_writing(self, since: float) -> Worker:
        """The holder once it wrote after `since`."""
        end = time.monotonic() + WAIT
        while time.monotonic() < end:
            if self.holder is not None and self.wrote_at > since and self.holder.p.poll() is None:
                return self.holder
            self.pump(0.05)
        raise AssertionError("no holder wrote within %.0f s (holder %r)" % (WAIT, self.holder and self.holder.member))

    def wait_takeover(self, old: Worker, old_token: str) -> None:
        """Until another term than old_token was acquired."""
        end = time.monotonic() + WAIT
        while time.monotonic() < end:
            if self.holder is not None and self.token != old_token:
                return
            self.pump(0.05)
        raise AssertionError("no takeover from %s (%s) within %.0f s" % (old.member, old_token, WAIT))

    def close(self) -> None:
        for w in self.workers:
            w.close()


def feed(lead: kc.Leadership, req: str, lo: int, hi: int) -> None:
    lead.produce_many([(req, b"req-%d" % n, None, n % PARTS) for n in range(lo, hi)], timeout=60)


def read_back(tools: KafkaTools, bootstrap: str, cmd: str) -> Tuple[List[Dict[str, Any]], int]:
    """The command topic, read_committed, once it holds N_REQ commands (or
    WAIT seconds after the last change); the test reads it again once the
    workers are gone."""
    recs = tools.read(bootstrap, cmd)
    last, changed = len(recs), time.monotonic()
    while len(recs) < N_REQ and time.monotonic() - changed < WAIT:
        time.sleep(1)
        recs = tools.read(bootstrap, cmd)
        if len(recs) != last:
            last, changed = len(recs), time.monotonic()
    return recs, len(recs)


def check_commands(recs: List[Dict[str, Any]]) -> Dict[str, int]:
    seen: Dict[int, int] = {}
    order = 0
    last = [-1] * PARTS
    wrong_partition = 0
    for r in recs:
        n = int(r["value"][4:])
        seen[n] = seen.get(n, 0) + 1
        p = r["partition"]
        if n % PARTS != p:
            wrong_partition += 1
        if n <= last[p]:
            order += 1
        last[p] = n
    missing = sum(1 for n in range(N_REQ) if n not in seen)
    dup = sum(c - 1 for c in seen.values() if c > 1)
    extra = sum(1 for n in seen if not 0 <= n < N_REQ)
    return {"read": len(recs), "missing": missing, "duplicated": dup, "out_of_order": order,
            "wrong_partition": wrong_partition, "unknown": extra}


def run_pipeline(tv: str, bootstrap: str, x1: Optional[str], target: Optional[str], tools: KafkaTools,
                 kproxy: Optional[Path]) -> None:
    t_start = time.monotonic()
    role = unique("py-pipe-%s" % tv)
    req, cmd = role + "-req", role + "-cmd"
    tools.create_topic(bootstrap, req, PARTS)
    tools.create_topic(bootstrap, cmd, PARTS)
    proxy = Proxy(kproxy, x1, target) if (x1 and target and kproxy) else None
    kinds = ["kill", "stop", "resign", "cut"] if proxy else ["kill", "stop", "resign"]
    done: Dict[str, int] = {k: 0 for k in kinds}
    feeder_client = kc.Client({"bootstrap.servers": bootstrap, "client.id": "py-pipe-feeder"})
    feeder = feeder_client.acquire(role + "-feeder", "feeder", timeout=60)
    pipe = Pipeline(bootstrap, x1 if proxy else None, role, req, cmd)
    try:
        chunk = N_REQ // FAULTS
        cut_due = False
        for i in range(FAULTS):
            t_feed = time.monotonic()
            feed(feeder, req, i * chunk, (i + 1) * chunk)
            holder = pipe.wait_writing(t_feed)
            token = pipe.token
            kind = "cut" if cut_due else kinds[i % len(kinds)]
            cut_due = False
            if kind == "cut" and holder.slot != 0:
                # Only worker 0 goes through the proxy: hand the role to it
                # now (a resign), cut at the next step.
                kind, cut_due = "resign", True
                holder.send("resign-to " + pipe.workers[0].member)
                pipe.wait_takeover(holder, token)
                done[kind] += 1
                continue
            if kind == "kill":
                holder.p.kill()
                holder.p.wait()
                pipe.wait_takeover(holder, token)
                pipe.spawn(holder.slot)
            elif kind == "stop":
                os.kill(holder.p.pid, signal.SIGSTOP)
                holder.stopped = True
                pipe.wait_takeover(holder, token)  # a standby took the role: the lease ran out
                os.kill(holder.p.pid, signal.SIGCONT)
                holder.stopped = False
            elif kind == "resign":
                holder.send("resign")
                pipe.wait_takeover(holder, token)
            else:
                assert proxy is not None
                proxy.command("cut")
                pipe.wait_takeover(holder, token)
                proxy.command("heal")
            done[kind] += 1
        # Everything fed: wait until the holder wrote it all.
        read_back(tools, bootstrap, cmd)
    finally:
        pipe.close()
        feeder.close()
        feeder_client.close()
        if proxy:
            proxy.close()
    recs = tools.read(bootstrap, cmd)  # every worker gone: the final log
    while not pipe.events.empty():
        pipe.pump(0)
    figures = check_commands(recs)
    print("\npipeline failover %s: %d requests, %d failovers (%s), %d terms, %d guarded steps, ends %s; "
          "%d commands read back read_committed: missing %d, duplicated %d, out of order %d (%.0f s)"
          % (tv, N_REQ, sum(done.values()), ", ".join("%s %d" % kv for kv in done.items()), pipe.acquired,
             pipe.wrote, pipe.ended, figures["read"], figures["missing"], figures["duplicated"],
             figures["out_of_order"], time.monotonic() - t_start))
    assert sum(done.values()) == FAULTS
    for k in ("kill", "stop", "resign"):
        assert done[k] >= 1, done
    if proxy:
        assert done["cut"] >= 1, done
    assert figures == {"read": N_REQ, "missing": 0, "duplicated": 0, "out_of_order": 0, "wrong_partition": 0,
                       "unknown": 0}, figures


def test_pipeline_exactly_once_under_20_failovers_tv2_and_tv1(bootstrap: str, bootstrap_tv1: str,
                                                              kafka_tools: KafkaTools, kproxy: Path) -> None:
    """Both clusters at once (two threads), each with its own workers."""
    x1 = os.environ.get("KRABKA_BOOTSTRAP_X1")
    target = os.environ.get("KRABKA_BOOTSTRAP_X1_TARGET")
    if not x1 or not target:
        pytest.fail("KRABKA_BOOTSTRAP_X1 / KRABKA_BOOTSTRAP_X1_TARGET are not set: this test needs the tv2 cluster's "
                    "extra listener (make test sets them).", pytrace=False)
    errors: List[BaseException] = []

    def run(*args: Any) -> None:
        try:
            run_pipeline(*args)
        except BaseException as e:  # reported below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=("tv2", bootstrap, x1, target, kafka_tools, kproxy)),
               threading.Thread(target=run, args=("tv1", bootstrap_tv1, None, None, kafka_tools, None))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
