"""Test setup: import krabka_coord from this checkout (src/) unless an
installed copy is wanted (KRABKA_COORD_TEST_INSTALLED=1). The library is the
one named by KRABKA_COORD_LIBRARY, else the repository's build/."""

from __future__ import annotations

import os
import sys
import uuid
from typing import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
REPO = HERE.parents[2]

if os.environ.get("KRABKA_COORD_TEST_INSTALLED") != "1" and str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))


def unique(prefix: str) -> str:
    """A role name no other test run uses (transactional ids are
    cluster-global)."""
    return "%s-%s" % (prefix, uuid.uuid4().hex[:12])


@pytest.fixture
def bootstrap() -> str:
    """The running single-node Kafka (KRABKA_BOOTSTRAP). Under `make test` it
    is always set; when it is missing the test FAILS (it is not skipped) so
    a broken harness cannot pass silently."""
    addr = os.environ.get("KRABKA_BOOTSTRAP")
    if not addr:
        pytest.fail(
            "KRABKA_BOOTSTRAP is not set: the live tests need a running Kafka. "
            "Run them via `make test`, or start one with "
            "`tests/kafka/cluster.sh start` and `eval \"$(tests/kafka/cluster.sh env)\"`.",
            pytrace=False,
        )
    return addr


FAST_LEASES = {
    "krabka.lease.ms": 3000,
    "krabka.renew.interval.ms": 1000,
    "krabka.challenge.stagger.ms": 500,
}


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    """Python's default SIGINT handler (KeyboardInterrupt) for one test. A
    program started in the background by a non-interactive shell (make test
    runs the suites that way, through tests/kafka/with-clusters.sh) inherits
    SIGINT ignored, and Python then installs no handler of its own: Ctrl-C
    tests would see nothing. An interactive program has the handler."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
