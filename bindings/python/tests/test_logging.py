"""The library's log reaches a Python host through `logging` only: a child
process makes a client on an existing coordination topic created with
Kafka's default settings (the library warns that it will grow without
bound) and takes a role (info and debug lines), and its stderr stays empty.
Run in a child so that nothing of pytest's own logging setup (caplog, its
capture handlers) is in the way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict

import pytest

from conftest import SRC, KafkaTools, unique

pytestmark = pytest.mark.kafka

SETTINGS_WARNING = "krabka: the coordination topic's settings let it grow without bound"

CHILD = r"""
import json, logging, sys
sys.path.insert(0, sys.argv[1])
bootstrap, topic, role, mode = sys.argv[2:6]

seen = []  # (levelname, message) of every record the krabka_coord logger passed on

class Seen(logging.Filter):
    def filter(self, record):
        seen.append((record.levelname, record.getMessage()))
        return True

got = []  # what a handler of the application received
if mode == "handler":
    class Collect(logging.Handler):
        def emit(self, record):
            got.append((record.levelname, record.name, record.getMessage()))
    logging.getLogger().addHandler(Collect())
else:
    # "default": the application configures no logging at all; the filter
    # only watches what the logger is given (it is no handler).
    logging.getLogger("krabka_coord").addFilter(Seen())

import krabka_coord as kc

def run(member):
    with kc.Client({"bootstrap.servers": bootstrap, "krabka.topic": topic}) as c:
        with c.acquire(role, member, timeout=60) as lead:
            lead.renew(timeout=30)

run("at-warning")  # the logger's effective level: WARNING (root's default)
if mode == "handler":
    logging.getLogger("krabka_coord").setLevel(logging.DEBUG)
    run("at-debug")
print(json.dumps({"seen": seen, "got": got}), flush=True)
"""


def _child(bootstrap: str, topic: str, role: str, mode: str) -> Dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    p = subprocess.run([sys.executable, "-c", CHILD, str(SRC), bootstrap, topic, role, mode],
                       capture_output=True, text=True, timeout=180, env=env)
    assert p.returncode == 0, p.stderr
    # Nothing at all on stderr: not from the library (C, Go), not from
    # Python's last-resort handler.
    assert p.stderr == "", p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.fixture
def default_settings_topic(bootstrap: str, kafka_tools: KafkaTools) -> str:
    """A coordination topic made with the broker's defaults (cleanup.policy
    delete), which the library uses as it is and warns about."""
    topic = unique("py-log-coordination")
    kafka_tools.create_topic(bootstrap, topic, 1)
    return topic


def test_logging_handlers_receive_the_library_log_and_stderr_stays_empty(bootstrap: str, default_settings_topic: str) -> None:
    role = unique("py-log-handler")
    out = _child(bootstrap, default_settings_topic, role, "handler")
    got = out["got"]
    assert all(name == "krabka_coord" for _, name, _ in got), got
    warnings = [m for lvl, _, m in got if lvl == "WARNING" and m.startswith(SETTINGS_WARNING)]
    assert len(warnings) == 2 and default_settings_topic in warnings[0], got  # one per client
    # The effective level decides: at WARNING no info or debug line came
    # through; after setLevel(DEBUG) the next client's did, mapped to
    # Python's levels.
    first = [(lvl, m) for lvl, _, m in got if "member=at-warning" in m]
    assert first == [], first
    later = [(lvl, m) for lvl, _, m in got if "member=at-debug" in m]
    assert any(lvl == "INFO" and m.startswith("krabka: role won") for lvl, m in later), later
    assert any(lvl == "DEBUG" and m.startswith("krabka: registered") for lvl, m in later), later
    assert any(lvl == "INFO" and "state=RESIGNED" in m for lvl, m in later), later


def test_without_any_logging_configuration_nothing_reaches_stderr(bootstrap: str, default_settings_topic: str) -> None:
    role = unique("py-log-default")
    out = _child(bootstrap, default_settings_topic, role, "default")
    # The warning was logged (the library sent it, the logger passed it on),
    # and yet stderr is empty (checked in _child).
    seen = out["seen"]
    assert [m for lvl, m in seen if lvl == "WARNING" and m.startswith(SETTINGS_WARNING)], seen
    assert out["got"] == []
