"""An elector in its own process, for the live elector tests.

    python elect_member.py BOOTSTRAP ROLE MEMBER

Runs client.elect(ROLE, MEMBER) with short leases and prints one JSON line
per event: {"event": "ready"} once the elector runs, {"event": "started",
"term": n, "token": "id:epoch"} per won term, {"event": "stopped", "term":
n, "reason": "RESIGNED"} per stop. Leaves (resigning a held term) when stdin
closes; a kill leaves nothing behind but the lease, which runs out.
"""

from __future__ import annotations

import json
import select
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
import krabka_coord as kc  # noqa: E402


def say(**kw: object) -> None:
    print(json.dumps(kw), flush=True)


def main() -> int:
    bootstrap, role, member = sys.argv[1:4]
    conf = {
        "bootstrap.servers": bootstrap,
        "krabka.lease.ms": 2000,
        "krabka.renew.interval.ms": 500,
        "krabka.challenge.stagger.ms": 500,
        "krabka.poll.interval.ms": 200,
    }
    with kc.Client(conf) as client:
        with client.elect(role, member) as elector:

            def terms() -> None:
                for term in elector:
                    say(event="started", term=term.number, token=str(term.token))
                    reason = term.wait_stopped()
                    say(event="stopped", term=term.number, reason=reason.name if reason is not None else None)

            consumer = threading.Thread(target=terms, daemon=True)
            consumer.start()
            say(event="ready")
            while True:
                ready, _, _ = select.select([sys.stdin], [], [], 0.5)
                if ready and not sys.stdin.readline():
                    break
        consumer.join()  # the close delivered the stop; the iteration ended
    say(event="left")
    return 0


if __name__ == "__main__":
    sys.exit(main())
