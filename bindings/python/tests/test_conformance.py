"""The conformance vectors through the binding: the runner script must
report 0 failed, with the documented ops not run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

RUNNER = Path(__file__).resolve().parent / "conformance.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    return subprocess.run([sys.executable, str(RUNNER), *args], capture_output=True, text=True, env=env, timeout=300)


def test_every_runnable_vector_passes() -> None:
    proc = _run()
    lines = proc.stdout.strip().splitlines()
    assert lines, proc.stderr
    m = re.fullmatch(r"(\d+) passed, (\d+) failed", lines[-1])
    assert m, "last line must be 'N passed, N failed', got %r" % lines[-1]
    passed, failed = int(m.group(1)), int(m.group(2))
    fails = [ln for ln in lines if ln.startswith("FAIL ")]
    assert failed == 0, "\n".join(fails)
    assert passed >= 456
    assert proc.returncode == 0
    assert lines[-2].startswith("not run: ")
    assert "fold (" in lines[-2] and "evaluate (" in lines[-2]


def test_json_reports_per_group_counts_that_add_up() -> None:
    proc = _run("--json")
    assert proc.returncode == 0, proc.stderr
    groups = json.loads(proc.stdout.strip().splitlines()[-1])
    vectors = Path(__file__).resolve().parents[3] / "tests" / "conformance" / "vectors"
    for f in vectors.glob("*.json"):
        doc = json.loads(f.read_text())
        c = groups[doc["group"]]
        assert c["passed"] + c["failed"] + c["not_run"] == len(doc["vectors"]), doc["group"]
        assert c["failed"] == 0
    assert groups["codec"]["not_run"] == 0
    assert groups["evaluate"]["passed"] == 0 and groups["evaluate"]["not_run"] > 0


def test_a_broken_expectation_is_reported_by_id(tmp_path: Path) -> None:
    vectors = Path(__file__).resolve().parents[3] / "tests" / "conformance" / "vectors"
    doc = json.loads((vectors / "partition.json").read_text())
    victim = next(v for v in doc["vectors"] if v["expect"].get("ok") and "partition" in v["expect"])
    victim["expect"]["partition"] = victim["expect"]["partition"] + 1
    broken = tmp_path / "partition.json"
    broken.write_text(json.dumps(doc))
    proc = _run(str(broken))
    assert proc.returncode == 1
    lines = proc.stdout.strip().splitlines()
    assert [ln.split(":")[0] for ln in lines if ln.startswith("FAIL")] == ["FAIL " + victim["id"]]
    assert lines[-1] == "%d passed, 1 failed" % (len(doc["vectors"]) - 1)
