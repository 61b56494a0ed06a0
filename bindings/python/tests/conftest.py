"""Test setup: import krabka_coord from this checkout (src/) unless an
installed copy is wanted (KRABKA_COORD_TEST_INSTALLED=1). The library is the
one named by KRABKA_COORD_LIBRARY, else the repository's build/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from typing import Any, Dict, Iterator, List
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
REPO = HERE.parents[2]

if os.environ.get("KRABKA_COORD_TEST_INSTALLED") != "1" and str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))


def pytest_configure(config: pytest.Config) -> None:
    """The package's pytest plugin (fixtures krabka_cluster, krabka_clock,
    krabka_cluster_factory): an installed package registers it through its
    pytest11 entry point; this checkout's source tree does not, so it is
    registered here."""
    name = "krabka_coord.pytest_plugin"
    if not config.pluginmanager.has_plugin(name):
        import krabka_coord.pytest_plugin as plugin

        config.pluginmanager.register(plugin, name)


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


@pytest.fixture
def bootstrap_tv1() -> str:
    """The running single-node Kafka formatted with transaction.version=1
    (KRABKA_BOOTSTRAP_TV1). `make test` always sets it; when it is missing
    the test FAILS, as for KRABKA_BOOTSTRAP: a skip would let a harness that
    lost the tv1 cluster pass silently."""
    addr = os.environ.get("KRABKA_BOOTSTRAP_TV1")
    if not addr:
        pytest.fail(
            "KRABKA_BOOTSTRAP_TV1 is not set: this test needs a running Kafka "
            "formatted with transaction.version=1. Run it via `make test` "
            "(tests/kafka/with-clusters.sh starts both clusters).",
            pytrace=False,
        )
    return addr


class KafkaTools:
    """The test helpers tests/kafka/cmd/ktopic, kread and kopentxn, built
    once per session (go build) instead of `go run` per call."""

    def __init__(self, bindir: Path) -> None:
        self.ktopic = bindir / "ktopic"
        self.kread = bindir / "kread"
        self.kopentxn = bindir / "kopentxn"

    def create_topic(self, bootstrap: str, topic: str, partitions: int = 1) -> None:
        subprocess.run([str(self.ktopic), bootstrap, topic, str(partitions)], check=True, timeout=120)

    def read(self, bootstrap: str, topic: str) -> List[Dict[str, Any]]:
        """Every committed data record of topic (read_committed, to each
        partition's last stable offset)."""
        out = subprocess.run([str(self.kread), bootstrap, topic], check=True, timeout=120,
                             capture_output=True, text=True)
        return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="session")
def kafka_tools(tmp_path_factory: pytest.TempPathFactory) -> KafkaTools:
    bindir = tmp_path_factory.mktemp("kafka-tools")
    env = {**os.environ, "GOFLAGS": "-buildvcs=false"}
    subprocess.run(["go", "build", "-o", str(bindir) + os.sep, "./tests/kafka/cmd/ktopic", "./tests/kafka/cmd/kread",
                    "./tests/kafka/cmd/kopentxn"],
                   cwd=str(REPO), check=True, timeout=600, env=env)
    return KafkaTools(bindir)


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


@pytest.fixture(scope="session")
def kproxy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/kafka/cmd/kproxy, built once per session: the cut-link proxy on
    the tv2 cluster's extra listener (KRABKA_BOOTSTRAP_X1)."""
    out = tmp_path_factory.mktemp("kproxy") / "kproxy"
    subprocess.run(["go", "build", "-o", str(out), "./tests/kafka/cmd/kproxy"], cwd=str(REPO), check=True,
                   timeout=600, env={**os.environ, "GOFLAGS": "-buildvcs=false"})
    return out


class Proxy:
    """A running kproxy: command("cut"), command("heal"), close()."""

    def __init__(self, binary: Path, listen: str, target: str) -> None:
        self.p = subprocess.Popen([str(binary), "-listen", listen, "-target", target], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("ready "), "kproxy did not start: %r" % line

    def command(self, cmd: str) -> None:
        self.p.stdin.write(cmd + "\n")  # type: ignore[union-attr]
        self.p.stdin.flush()  # type: ignore[union-attr]
        assert self.p.stdout.readline().strip() == "ok " + cmd  # type: ignore[union-attr]

    def close(self) -> None:
        self.p.stdin.close()  # type: ignore[union-attr]
        self.p.wait(timeout=60)
