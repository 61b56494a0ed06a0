"""A member of a role group in Python: the Python third of the
mixed-language group example (examples/group/README.md).

    python member.py BOOTSTRAP GROUP SHARDS MEMBER [WEIGHT]

Joins GROUP (SHARDS shards) as MEMBER and prints one JSON line per change
of its shards: {"member": M, "event": "assigned", "shard": k, "token":
"id:epoch", "held": [...]} and {"member": M, "event": "revoked", "shard":
k, "reason": "NOT_LEADER", "held": [...]}, after {"event": "ready"} once
joined. For each assigned shard it writes one guarded record,
"<member>:<shard>", to the topic named by $KRABKA_GROUP_TOPIC (when set),
under the shard's own token. Leaves the group (handing its shards over)
when stdin closes; a kill leaves its leases to run out.
"""

from __future__ import annotations

import json
import os
import select
import sys
import threading
from pathlib import Path

try:
    import krabka_coord as kc
except ImportError:  # run from a checkout: the binding's source tree
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bindings" / "python" / "src"))
    import krabka_coord as kc


def say(**kw: object) -> None:
    print(json.dumps(kw), flush=True)


def main() -> int:
    bootstrap, group, shards, member = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    weight = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    topic = os.environ.get("KRABKA_GROUP_TOPIC")
    conf = {
        "bootstrap.servers": bootstrap,
        "client.id": member,
        "krabka.lease.ms": 3000,
        "krabka.renew.interval.ms": 1000,
        "krabka.challenge.stagger.ms": 500,
        "krabka.poll.interval.ms": 200,
    }
    with kc.Client(conf) as client:
        m = client.join_group(group, shards, member, weight=weight)
        held = set()

        def events() -> None:
            for ev in m:
                if ev.kind == kc.GroupEventKind.ASSIGNED:
                    held.add(ev.shard)
                    say(member=member, event="assigned", shard=ev.shard, token=str(ev.token), held=sorted(held))
                    if topic and ev.leadership is not None:
                        try:
                            ev.leadership.produce(topic, ("%s:%d" % (member, ev.shard)).encode())
                        except kc.KrabkaError as e:  # revoked meanwhile: the broker or the library refused it
                            say(member=member, event="write-refused", shard=ev.shard, error=e.name)
                else:
                    held.discard(ev.shard)
                    reason = ev.error.name if ev.error is not None else None
                    say(member=member, event="revoked", shard=ev.shard, reason=reason, held=sorted(held))
            say(member=member, event="stopped")

        t = threading.Thread(target=events, daemon=True)
        t.start()
        say(member=member, event="ready")
        while True:
            ready, _, _ = select.select([sys.stdin], [], [], 0.5)
            if ready and not sys.stdin.readline():
                break
        m.leave(30)
        m.close()
        t.join(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
