"""A lease holder in its own process, for the pause scenario of
test_fidelity.py on a real broker (a process can be stopped with SIGSTOP;
a client of the test's own process cannot).

    python fidelity_member.py BOOTSTRAP ROLE MEMBER LEASE_MS RENEW_MS

Acquires ROLE as MEMBER and prints {"event": "acquired", "token": "id:epoch"};
then, per line on stdin "produce TOPIC VALUE", makes one guarded write and
prints {"event": "produce", "error": null or the exception's class name}.
Exits without resigning when stdin closes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
import krabka_coord as kc  # noqa: E402


def say(**kw: object) -> None:
    print(json.dumps(kw), flush=True)


def main() -> int:
    bootstrap, role, member, lease_ms, renew_ms = sys.argv[1:6]
    conf = {"bootstrap.servers": bootstrap, "krabka.lease.ms": int(lease_ms),
            "krabka.renew.interval.ms": int(renew_ms), "krabka.poll.interval.ms": 200}
    client = kc.Client(conf)
    lead = client.acquire(role, member, timeout=60)
    say(event="acquired", token=str(lead.token))
    for line in sys.stdin:
        cmd, topic, value = line.split()
        assert cmd == "produce", cmd
        try:
            lead.produce(topic, value.encode(), timeout=30)
            say(event="produce", error=None)
        except kc.KrabkaError as e:
            say(event="produce", error=type(e).__name__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
