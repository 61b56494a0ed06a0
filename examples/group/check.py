"""Runs the mixed-language group example as a test (`make group-example-test`):
a C, a Python and a Node member in one group, on the broker at BOOTSTRAP.

    python check.py BOOTSTRAP C_MEMBER_BINARY KTOPIC KREAD

  1. The three members (examples/group/member.c, member.py, member.js) join
     one group of 12 shards; each writes "<member>:<shard>" under the
     shard's own token when it is assigned one. Balanced: 4/4/4, every
     shard held by exactly one member.
  2. The Node member leaves (its stdin closed): its shards are handed
     over, the C and Python members end with 6/6 and keep every shard they
     held before; the Node member prints "stopped" and exits 0.
  3. The others leave; both exit 0.
  4. The command topic, read back (read_committed): every record is
     "<member>:<shard>" of a member that was assigned that shard, every
     shard has a record, and per shard the tokens never go back (no
     interleaving of two terms' writes; each record's krabka.token header
     is its batch's token). Writes refused under a revoked or expired
     shard are counted, not failures: refusing them is the point.
Exits 0 when every check held, 1 (naming the failed check) otherwise.
Every wait is bounded (90 s); none is a timing check.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, Set

HERE = Path(__file__).resolve().parent
SHARDS = 12
WAIT = 90.0


class Member:
    def __init__(self, name: str, argv: List[str], env: Dict[str, str]) -> None:
        self.name = name
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.lines: List[Dict[str, Any]] = []
        self.held: Set[int] = set()
        self.assigned: Set[int] = set()
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                self.lines.append(ev)
                if "held" in ev:
                    self.held = set(ev["held"])
                if ev.get("event") == "assigned":
                    self.assigned.add(ev["shard"])

    def snapshot(self) -> Set[int]:
        with self.lock:
            return set(self.held)

    def saw(self, event: str) -> bool:
        with self.lock:
            return any(ev.get("event") == event for ev in self.lines)

    def leave(self) -> int:
        assert self.p.stdin is not None
        self.p.stdin.close()
        return self.p.wait(WAIT)


failures: List[str] = []


def check(cond: bool, what: str) -> None:
    print("check: %s: %s" % ("ok" if cond else "FAIL", what), flush=True)
    if not cond:
        failures.append(what)


def until(pred: Callable[[], bool], what: str, state: Callable[[], object]) -> bool:
    end = time.monotonic() + WAIT
    while not pred():
        if time.monotonic() > end:
            check(False, "%s within %.0f s (%s)" % (what, WAIT, state()))
            return False
        time.sleep(0.1)
    check(True, what)
    return True


def main() -> int:
    bootstrap, c_binary, ktopic, kread = sys.argv[1:5]
    tag = uuid.uuid4().hex[:10]
    group, topic = "example-group-" + tag, "example-group-cmd-" + tag
    subprocess.run([ktopic, bootstrap, topic, "1"], check=True, timeout=120)
    env = {**os.environ, "KRABKA_GROUP_TOPIC": topic}
    args = [bootstrap, group, str(SHARDS)]
    members = [
        Member("c", [c_binary, *args, "c"], env),
        Member("py", [sys.executable, str(HERE / "member.py"), *args, "py"], env),
        Member("node", ["node", str(HERE / "member.js"), *args, "node"], env),
    ]
    c, py, node = members
    try:
        def state() -> object:
            return {m.name: sorted(m.snapshot()) for m in members}

        def partition(ms: List[Member], sizes: List[int]) -> bool:
            sets = [m.snapshot() for m in ms]
            union: Set[int] = set().union(*sets)
            return sorted(len(s) for s in sets) == sizes and sum(len(s) for s in sets) == SHARDS and len(union) == SHARDS

        if not until(lambda: partition(members, [4, 4, 4]), "C, Python and Node members balanced 4/4/4", state):
            return 1
        before_c, before_py, had_node = c.snapshot(), py.snapshot(), node.snapshot()
        check(node.leave() == 0, "the Node member left and exited 0")
        check(node.saw("stopped") and not node.snapshot(), "the Node member stopped holding nothing")
        if not until(lambda: partition([c, py], [6, 6]), "C and Python members 6/6 after the Node member left", state):
            return 1
        check(before_c <= c.snapshot() and before_py <= py.snapshot(),
              "only the Node member's shards moved (%s)" % sorted(had_node))
        check(c.leave() == 0 and py.leave() == 0, "the C and Python members left and exited 0")
        records = [json.loads(line) for line in subprocess.run([kread, bootstrap, topic], check=True, timeout=120,
                                                               capture_output=True, text=True).stdout.splitlines() if line]
        assigned = {m.name: m.assigned for m in members}
        bad = [r["value"] for r in records
               if r["value"].split(":")[0] not in assigned
               or int(r["value"].split(":")[1]) not in assigned[r["value"].split(":")[0]]]
        check(not bad, "every record is a write of a member that was assigned its shard (%d records)" % len(records))
        written = {int(r["value"].split(":")[1]) for r in records}
        check(written == set(range(SHARDS)), "every shard was written under its own token")
        # No overlap: per shard, in the topic's order, the tokens never go
        # back (a record of an older term after one of a newer term would
        # be two owners' writes interleaved), and each record's krabka.token
        # header is the token of the batch that carried it.
        last: Dict[int, Any] = {}
        back = []
        for r in records:
            k = int(r["value"].split(":")[1])
            tok = (r["producer_id"], r["producer_epoch"])
            if k in last and tok < last[k]:
                back.append((k, last[k], tok))
            last[k] = max(tok, last.get(k, tok))
            if r.get("headers", {}).get("krabka.token") != "%d:%d" % tok:
                back.append((k, "header", r.get("headers")))
        check(not back, "per shard, no write of an older token after a newer one (%s)" % back[:5])
        refused = [ev for m in members for ev in m.lines if ev.get("event") == "write-refused"]
        print("group example: %d writes refused (a revoked or expired shard's leadership: %s)"
              % (len(refused), sorted({ev["error"] for ev in refused})), flush=True)
    finally:
        for m in members:
            if m.p.poll() is None:
                m.p.kill()
                m.p.wait(30)
    print("group example: %d failures" % len(failures), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
