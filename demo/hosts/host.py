#!/usr/bin/env python3
"""Demo host in Python: one member of the demo role, over the krabka_coord binding.

    host.py <bootstrap> <role> <member> <topic> [max_commands]

While it leads it dispatches numbered commands to <topic> through guarded
writes (each one a transaction of the role's producer, so the broker rejects
it once the leadership is superseded) from KRABKA_WRITERS threads (default
1; concurrent calls on one leadership are committed together by the
library), renews the lease when due, stops at once on FENCED or an expired
lease, and then tries to take the role again. Sequence numbers count from 1
in each leadership; a writer re-sends its number after an error until the
leadership ends. The library's line of each minted producer epoch becomes a
MINTED event (token, at_ms).
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
import logging
import os
import sys
import threading
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
        self.writers = max(1, env_ms("KRABKA_WRITERS", 1))
        self.acked = 0  # acknowledged commands of this process
        self.out_lock = threading.Lock()
        self.count_lock = threading.Lock()
        log = logging.getLogger("krabka_coord")
        log.setLevel(logging.INFO)  # the client logs at this level: minted epochs are info
        log.addHandler(_MintHandler(self))
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
        with self.out_lock:
            print(" ".join(parts), flush=True)

    def error(self, kind: str, op: str, err: BaseException, **fields: object) -> None:
        if isinstance(err, kc.KrabkaError):
            self.emit(kind, op=op, code=err.name, msg=err.reason, **fields)
        else:
            self.emit(kind, op=op, code=type(err).__name__, msg=str(err), **fields)

    def run(self) -> int:
        self.emit("STARTED", lang="python", pid=os.getpid(), binding=kc.__version__, library=kc.library_version())
        standby = False
        while self.max_commands <= 0 or self.acked < self.max_commands:
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
        """Dispatch while leading: the writer threads produce, this thread
        renews. True when max_commands was reached."""
        token = str(lead.token)
        self.emit("ACQUIRED", token=token, deadline=lead.lease.deadline)
        term = _Term()
        threads = [threading.Thread(target=self.writer, args=(lead, term, w + 1), daemon=True)
                   for w in range(self.writers)]
        for t in threads:
            t.start()
        try:
            while not term.stop.is_set():
                try:
                    if lead.renew_due:
                        lead.renew()
                        self.emit("RENEWED", token=str(lead.token), deadline=lead.lease.deadline)
                except kc.FencedError as err:
                    self.ended(term, "FENCED", "renew", err, str(lead.token), 0)
                except kc.LeaseExpiredError as err:
                    self.ended(term, "EXPIRED", "renew", err, str(lead.token), 0)
                except kc.KrabkaError as err:
                    self.error("ERROR", "renew", err, token=str(lead.token))
                    if not lead.active:
                        self.ended(term, "ERROR", "renew", err, str(lead.token), 0)
                term.stop.wait(min(self.dispatch_interval, 0.1))
        finally:
            term.stop.set()
            for t in threads:
                t.join()
        if term.done:
            lead.resign()
            self.emit("RESIGNED", token=str(lead.token))
            return True
        return False

    def ended(self, term: "_Term", kind: str, op: str, err: BaseException, token: str, seq: int) -> None:
        """The leadership ended: every writer stops; the first report wins."""
        with term.lock:
            first = not term.reported
            term.reported = True
            term.stop.set()
        if first:
            self.error(kind, op, err, token=token, seq=seq)

    def writer(self, lead: kc.Leadership, term: "_Term", w: int) -> None:
        """One writer: the next sequence number, re-sent until acknowledged
        or the leadership ends; then the dispatch interval."""
        while not term.stop.is_set():
            with term.lock:
                term.seq += 1
                seq = term.seq
            attempt = 0
            while not term.stop.is_set():
                attempt += 1
                token = str(lead.token)  # read again: an own epoch recovery changes it
                value = "seq=%d member=%s token=%s writer=%d try=%d at=%d" % (
                    seq, self.member, token, w, attempt, now_ms())
                try:
                    res = lead.produce(self.topic, value, key=self.member, partition=0)
                except kc.FencedError as err:
                    self.ended(term, "FENCED", "dispatch", err, token, seq)
                    return
                except kc.LeaseExpiredError as err:
                    self.ended(term, "EXPIRED", "dispatch", err, token, seq)
                    return
                except kc.KrabkaError as err:
                    self.error("ERROR", "dispatch", err, token=token, writer=w)
                    if not lead.active:
                        self.ended(term, "ERROR", "dispatch", err, token, seq)
                        return
                    term.stop.wait(self.dispatch_interval)
                    continue
                self.emit("DISPATCHED", seq=seq, token=token, partition=res.partition, offset=res.offset, writer=w)
                with self.count_lock:
                    self.acked += 1
                    if 0 < self.max_commands <= self.acked:
                        term.done = True
                        term.stop.set()
                break
            term.stop.wait(self.dispatch_interval)


class _Term:
    """What the writers of one leadership share."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.seq = 0
        self.reported = False
        self.done = False


class _MintHandler(logging.Handler):
    """Forwards the library's lines of minted producer epochs as MINTED."""

    def __init__(self, host: Host) -> None:
        super().__init__(logging.INFO)
        self.host = host

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if msg.startswith("krabka: minted a producer epoch"):
            key = "token"
        elif msg.startswith("krabka: own epoch recovery"):
            key = "new_token"
        else:
            return
        fields = dict(f.split("=", 1) for f in msg.split() if "=" in f)
        if fields.get(key):
            self.host.emit("MINTED", token=fields[key], at_ms=fields.get("at_ms", "0"))


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
