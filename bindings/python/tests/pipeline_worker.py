"""A pipeline worker in its own process, for test_pipeline_failover.py.

    python pipeline_worker.py BOOTSTRAP ROLE MEMBER REQUESTS COMMANDS

Campaigns for ROLE as MEMBER (short leases) and, while it holds it, reads
REQUESTS under the term (Leadership.consume) and turns every request
"req-<n>" into one command "cmd-<n>" on COMMANDS (same partition). Each
poll's records are written by one concurrent writer per partition
(produce_many_async with that partition's offset: several writers per
term, committed together by group commit). When the term ends (fenced,
expired, resigned) it campaigns again. Prints one JSON line per event:
{"event": "acquired", "token": ..., "committed": {...}},
{"event": "wrote", "n": ..., "token": ...}, {"event": "ended", "error": ...},
{"event": "resigned"}. Reads commands from stdin: "resign" resigns the
term, "resign-to MEMBER" hands it to MEMBER; end of input (or "exit")
leaves.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
import krabka_coord as kc  # noqa: E402

BATCH = 40  # records per poll: small, so a fault lands while requests wait


def say(**kw: object) -> None:
    print(json.dumps(kw), flush=True)


class Commands:
    """stdin, read on the loop: resign requests and the end."""

    def __init__(self) -> None:
        self.resign = asyncio.Event()
        self.successor: Optional[str] = None
        self.exit = asyncio.Event()
        asyncio.get_running_loop().add_reader(sys.stdin.fileno(), self._read)

    def _read(self) -> None:
        line = sys.stdin.readline()
        if not line or line.strip() == "exit":
            asyncio.get_running_loop().remove_reader(sys.stdin.fileno())
            self.exit.set()
        elif line.strip() == "resign":
            self.successor = None
            self.resign.set()
        elif line.startswith("resign-to "):
            self.successor = line.split()[1]
            self.resign.set()


async def term(lead: kc.Leadership, requests: str, commands: str, cmds: Commands) -> None:
    async with await lead.consume_async(requests) as inp:
        say(event="acquired", token=str(lead.token), committed={o.partition: o.offset for o in inp.committed()})
        while not cmds.exit.is_set():
            if cmds.resign.is_set():
                cmds.resign.clear()
                await lead.resign_async(successor=cmds.successor)
                say(event="resigned", token=str(lead.token))
                return
            if lead.renew_due:
                await lead.renew_async()
            recs = await inp.poll_async(max=BATCH, timeout=0.25)
            if not recs:
                continue
            by_part: Dict[int, List[kc.InputRecord]] = {}
            for r in recs:
                by_part.setdefault(r.partition, []).append(r)
            writes = [
                lead.produce_many_async(
                    [(commands, b"cmd-" + (r.value or b"")[4:], None, p) for r in rs],
                    offsets=[kc.Offset(requests, p, rs[-1].offset + 1)],
                )
                for p, rs in by_part.items()
            ]
            results = await asyncio.gather(*writes, return_exceptions=True)
            for res in results:
                if isinstance(res, BaseException):
                    raise res
            say(event="wrote", n=len(recs), writers=len(writes), token=str(lead.token))


async def main() -> int:
    bootstrap, role, member, requests, commands = sys.argv[1:6]
    conf = {
        "bootstrap.servers": bootstrap,
        "client.id": "py-pipe-" + member,
        "krabka.lease.ms": int(os.environ.get("PIPE_LEASE_MS", "2500")),
        "krabka.renew.interval.ms": 700,
        "krabka.challenge.stagger.ms": 300,
        "krabka.poll.interval.ms": 100,
        "request.timeout.ms": 2000,
    }
    cmds = Commands()
    with kc.Client(conf) as client:
        say(event="started")
        while not cmds.exit.is_set():
            try:
                lead = await client.acquire_async(role, member, timeout=5)
            except kc.KrabkaError as e:  # a timeout, or the link is cut: campaign again
                if not isinstance(e, kc.KrabkaTimeoutError):
                    await asyncio.sleep(0.2)
                continue
            cmds.resign.clear()
            try:
                await term(lead, requests, commands, cmds)
            except kc.KrabkaError as e:
                say(event="ended", error=type(e).__name__, token=str(lead.token))
            finally:
                lead.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
