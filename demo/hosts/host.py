#!/usr/bin/env python3
"""Demo host in Python: one member of the demo role, over the krabka_coord binding.

    host.py <bootstrap> <role> <member> <topic> [max_commands]

While it leads it dispatches numbered commands to <topic> through guarded
writes (each one a transaction of the role's producer, so the broker rejects
it once the leadership is superseded), renews the lease when due, stops at
once on FENCED or an expired lease, and then tries to take the role again.
Lease settings come from KRABKA_LEASE_MS, KRABKA_RENEW_INTERVAL_MS,
KRABKA_CHALLENGE_STAGGER_MS; the pace of commands from
KRABKA_DISPATCH_INTERVAL_MS; the pause after losing the role before queueing
again from KRABKA_REJOIN_DELAY_MS (default 1000).

It prints one line per event on stdout (the demo's line protocol, see
demo/events.go):

    EVENT <unix_ms> <member> <KIND> key=value ...

Run it with PYTHONPATH=bindings/python/src and KRABKA_COORD_LIBRARY set to
build/libkrabka_coord.so (make demo does this).
"""

from __future__ import annotations

import json
import os
import sys
import time

import krabka_coord as kc


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def env_ms(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.strip() else default


def optional_settings() -> dict:
    """request.timeout.ms from KRABKA_REQUEST_TIMEOUT_MS, and the test-only
    clock offset from KRABKA_TEST_CLOCK_OFFSET_MS (the chaos campaign)."""
    out = {}
    for env, key in (("KRABKA_REQUEST_TIMEOUT_MS", "request.timeout.ms"),
                     ("KRABKA_TEST_CLOCK_OFFSET_MS", "krabka.test.clock.offset.ms")):
        if os.environ.get(env, "").strip():
            out[key] = int(os.environ[env])
    return out


class Host:
    def __init__(self, bootstrap: str, role: str, member: str, topic: str, max_commands: int) -> None:
        self.role, self.member, self.topic = role, member, topic
        self.max_commands = max_commands
        self.dispatch_interval = env_ms("KRABKA_DISPATCH_INTERVAL_MS", 250) / 1000.0
        self.poll = 0.25
        self.rejoin_delay = env_ms("KRABKA_REJOIN_DELAY_MS", 1000) / 1000.0
        self.seq = 0
        self.client = kc.Client(
            {
                "bootstrap.servers": bootstrap,
                "client.id": "krabka-demo-" + member,
                "krabka.lease.ms": env_ms("KRABKA_LEASE_MS", 3000),
                "krabka.renew.interval.ms": env_ms("KRABKA_RENEW_INTERVAL_MS", 1000),
                "krabka.challenge.stagger.ms": env_ms("KRABKA_CHALLENGE_STAGGER_MS", 1000),
                "krabka.poll.interval.ms": 250,
                **optional_settings(),
            }
        )

    def emit(self, kind: str, **fields: object) -> None:
        parts = ["EVENT", str(now_ms()), self.member, kind]
        for key, value in fields.items():
            text = str(value)
            if not text or any(c in text for c in ' "\\=\n\t'):
                text = json.dumps(text)
            parts.append("%s=%s" % (key, text))
        print(" ".join(parts), flush=True)

    def error(self, kind: str, op: str, err: BaseException, **fields: object) -> None:
        if isinstance(err, kc.KrabkaError):
            self.emit(kind, op=op, code=err.name, msg=err.reason, **fields)
        else:
            self.emit(kind, op=op, code=type(err).__name__, msg=str(err), **fields)

    def run(self) -> int:
        self.emit("STARTED", lang="python", pid=os.getpid(), binding=kc.__version__, library=kc.library_version())
        standby = False
        while self.max_commands <= 0 or self.seq < self.max_commands:
            try:
                res = self.client.try_acquire(self.role, self.member, timeout=5)
            except kc.KrabkaError as err:
                self.error("ERROR", "acquire", err)
                time.sleep(self.poll)
                continue
            if not res.won:
                if not standby:
                    self.emit("STANDBY", retry_at=res.retry_at_ms)
                    standby = True
                time.sleep(min(max(res.retry_in(), 0.01), self.poll))
                continue
            standby = False
            with_lead = res.leadership
            assert with_lead is not None
            try:
                if self.lead(with_lead):
                    return 0
            finally:
                with_lead.close()
            # Lost the role: stay out for a moment before queueing again.
            time.sleep(self.rejoin_delay)
        return 0

    def lead(self, lead: kc.Leadership) -> bool:
        """Dispatch while leading. True when max_commands was reached."""
        token = str(lead.token)
        self.emit("ACQUIRED", token=token, deadline=lead.lease.deadline)
        op = "dispatch"
        while True:
            try:
                if lead.renew_due:
                    op = "renew"
                    lead.renew()
                    self.emit("RENEWED", token=token, deadline=lead.lease.deadline)
                op = "dispatch"
                seq = self.seq + 1
                value = "seq=%d member=%s token=%s at=%d" % (seq, self.member, token, now_ms())
                res = lead.produce(self.topic, value, key=self.member, partition=0)
                self.seq = seq
                self.emit("DISPATCHED", seq=seq, token=token, partition=res.partition, offset=res.offset)
                if 0 < self.max_commands <= self.seq:
                    lead.resign()
                    self.emit("RESIGNED", token=token)
                    return True
            except kc.FencedError as err:
                self.error("FENCED", op, err, token=token, seq=self.seq + 1)
                return False
            except kc.LeaseExpiredError as err:
                self.error("EXPIRED", op, err, token=token, seq=self.seq + 1)
                return False
            except kc.KrabkaError as err:
                self.error("ERROR", op, err, token=token)
                if not lead.active:
                    return False
            time.sleep(self.dispatch_interval)


def main(argv: list[str]) -> int:
    if len(argv) not in (5, 6):
        print("usage: host.py <bootstrap> <role> <member> <topic> [max_commands]", file=sys.stderr)
        return 2
    max_commands = int(argv[5]) if len(argv) == 6 else 0
    host = Host(argv[1], argv[2], argv[3], argv[4], max_commands)
    try:
        return host.run()
    except KeyboardInterrupt:
        return 130
    finally:
        host.emit("STOPPED")
        host.client.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
