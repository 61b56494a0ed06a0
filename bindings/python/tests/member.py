"""A member in its own process, for the live failover tests.

    python member.py BOOTSTRAP ROLE MEMBER TOPIC

Acquires ROLE as MEMBER with short leases, prints one JSON line
{"event": "acquired", "token": "id:epoch"}, makes one guarded write to TOPIC
and prints {"event": "produced", "partition": p, "offset": o}, then renews
while stdin stays open, and resigns when it closes.
"""

from __future__ import annotations

import json
import select
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
import krabka_coord as kc  # noqa: E402


def say(**kw: object) -> None:
    print(json.dumps(kw), flush=True)


def main() -> int:
    bootstrap, role, member, topic = sys.argv[1:5]
    conf = {
        "bootstrap.servers": bootstrap,
        "client.id": "py-" + member,
        "krabka.lease.ms": 3000,
        "krabka.renew.interval.ms": 1000,
        "krabka.challenge.stagger.ms": 500,
        "krabka.poll.interval.ms": 200,
    }
    with kc.Client(conf) as client:
        say(event="started")
        with client.acquire(role, member, timeout=60) as lead:
            say(event="acquired", token=str(lead.token))
            part, off = lead.produce(topic, b"from " + member.encode(), key=member)
            say(event="produced", partition=part, offset=off)
            while True:
                ready, _, _ = select.select([sys.stdin], [], [], 0.2)
                if ready and not sys.stdin.readline():
                    break
                if lead.renew_due:
                    lead.renew()
        say(event="resigned")
    return 0


if __name__ == "__main__":
    sys.exit(main())
