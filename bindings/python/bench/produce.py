"""Guarded-write throughput of the Python binding: one leadership, C
concurrent produce calls kept in flight for S seconds, in two forms:
asyncio (`produce_async`, C tasks) and threads (`produce`, C threads).
Prints commands/s and latency percentiles and writes a results file (JSON)
with the commit, the machine and the load before and after.

  KRABKA_BOOTSTRAP=127.0.0.1:39092 python bench/produce.py \
      [--concurrency 64] [--seconds 10] [--out FILE]

No timing assertion anywhere: this measures, it does not judge."""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import threading
import time
import uuid

import krabka_coord as kc


def pct(samples, p):
    s = sorted(samples)
    if not s:
        return None
    i = min(len(s) - 1, max(0, int(round(p / 100.0 * (len(s) - 1)))))
    return s[i]


def summary(lat_s, seconds):
    ms = [x * 1000.0 for x in lat_s]
    return {
        "n": len(ms),
        "commands_per_s": len(ms) / seconds,
        "latency_ms": {f"p{p}": pct(ms, p) for p in (0, 10, 25, 50, 75, 90, 99, 99.9, 100)},
    }


async def run_async(lead, topic, conc, seconds):
    lat = []
    stop = time.monotonic() + seconds

    async def worker(i):
        n = 0
        while time.monotonic() < stop:
            t0 = time.monotonic()
            await lead.produce_async(topic, b"w%d-%d" % (i, n))
            lat.append(time.monotonic() - t0)
            n += 1

    t0 = time.monotonic()
    await asyncio.gather(*(worker(i) for i in range(conc)))
    return summary(lat, time.monotonic() - t0)


def run_threads(lead, topic, conc, seconds):
    lat = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def worker(i):
        n = 0
        mine = []
        while time.monotonic() < stop:
            t0 = time.monotonic()
            lead.produce(topic, b"t%d-%d" % (i, n))
            mine.append(time.monotonic() - t0)
            n += 1
        with lock:
            lat.extend(mine)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(conc)]
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return summary(lat, time.monotonic() - t0)


def commit():
    try:
        return subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], text=True).strip()
    except Exception:  # noqa: BLE001
        return "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--topic", default="krabka-bench-py")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    bootstrap = os.environ.get("KRABKA_BOOTSTRAP")
    if not bootstrap:
        raise SystemExit("produce.py: set KRABKA_BOOTSTRAP to a broker (host:port)")
    load_before = os.getloadavg()
    role = "bench-py-" + uuid.uuid4().hex[:8]
    with kc.Client({"bootstrap.servers": bootstrap}) as c:
        lead = c.acquire(role, "bench-1", timeout=60)
        lead.produce(a.topic, b"warm-up")  # creates the topic (auto-create) and warms the producer
        res = {
            "bench": "python-produce",
            "commit": commit(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": {"nproc": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
            "kafka": {"bootstrap": bootstrap, "brokers": "as started by tests/kafka/cluster.sh"},
            "concurrency": a.concurrency,
            "seconds": a.seconds,
            "load_before": load_before,
            "asyncio": asyncio.run(run_async(lead, a.topic, a.concurrency, a.seconds)),
            "threads": run_threads(lead, a.topic, a.concurrency, a.seconds),
            "load_after": os.getloadavg(),
        }
        lead.resign()
    for form in ("asyncio", "threads"):
        r = res[form]
        print("%-8s %3d concurrent: %8.0f commands/s  p50 %.2f ms  p99 %.2f ms  (n=%d)" % (
            form, a.concurrency, r["commands_per_s"], r["latency_ms"]["p50"], r["latency_ms"]["p99"], r["n"]))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
            f.write("\n")
        print("wrote", a.out)


if __name__ == "__main__":
    main()
