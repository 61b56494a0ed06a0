#!/usr/bin/env python3
"""Per-call overhead of the Python binding (µs per call, best of 5 runs of
timeit's autorange). Prints one line per case; --json prints a JSON object.
With KRABKA_BENCH_SAMPLES=1 it also prints every run's µs per call as a
KRABKA-SAMPLE line (bench/README.md), which `make python-bench` records in a
results file.

    python3 bindings/python/bench/bench.py [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import krabka_coord as kc  # noqa: E402
from krabka_coord import _native  # noqa: E402

A = kc.FencingToken(4242, 7)
B = kc.FencingToken(4242, 8)
CA, CB = A._c(), B._c()
ROLE = "controller"
ROLE_B = ROLE.encode()
LEASE = kc.Lease("node-1", A, 1700000000000, 1700000030000)
KEY_BYTES = kc.encode_key(kc.Key.registration("controller", "node-1"))
LEASE_BYTES = kc.encode_lease(LEASE)

CASES = [
    ("token compare: a.compare(b)", lambda: A.compare(B)),
    ("token compare: a < b", lambda: A < B),
    ("token supersedes: a.supersedes(b)", lambda: A.supersedes(B)),
    ("token compare: raw ctypes call (floor)", lambda: _native.lib.krabka_token_compare(CA, CB)),
    ("token compare: pure-Python tuple (reference)", lambda: (A.producer_id, A.producer_epoch) < (B.producer_id, B.producer_epoch)),
    ("role_partition(str, 16)", lambda: kc.role_partition(ROLE, 16)),
    ("role_partition(bytes, 16)", lambda: kc.role_partition(ROLE_B, 16)),
    ("murmur2(bytes)", lambda: kc.murmur2(ROLE_B)),
    ("FencingToken.parse('4242:7')", lambda: kc.FencingToken.parse("4242:7")),
    ("str(token)", lambda: str(A)),
    ("decode_key (%d bytes)" % len(KEY_BYTES), lambda: kc.decode_key(KEY_BYTES)),
    ("decode_lease (%d bytes)" % len(LEASE_BYTES), lambda: kc.decode_lease(LEASE_BYTES)),
    ("encode_lease", lambda: kc.encode_lease(LEASE)),
]


SAMPLES = os.environ.get("KRABKA_BENCH_SAMPLES") == "1"


def measure(name, fn) -> float:  # type: ignore[no-untyped-def]
    t = timeit.Timer(fn)
    n, _ = t.autorange()
    runs = [r / n * 1e6 for r in t.repeat(repeat=5, number=n)]
    if SAMPLES:
        for us in runs:
            print("KRABKA-SAMPLE\t%s\tus\t%.6g\t%s" % (slug(name), us, name))
    return min(runs)


def slug(name: str) -> str:
    out = "".join(c if c.isalnum() else "-" for c in name.lower())
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if SAMPLES:
        print("KRABKA-SETTING\tpython\t%s" % platform.python_version())
        print("KRABKA-SETTING\tmethod\tbest of 5 runs of timeit's autorange; every run is a sample")
    results = {name: measure(name, fn) for name, fn in CASES}
    if args.json:
        print(json.dumps({"python": platform.python_version(), "us_per_call": results}))
    else:
        print("python %s, %s, library %s" % (platform.python_version(), platform.machine(), kc.library_path))
        for name, us in results.items():
            print("%-48s %8.3f µs/call" % (name, us))
    return 0


if __name__ == "__main__":
    sys.exit(main())
