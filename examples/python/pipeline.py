"""pipeline: a leader that turns requests into commands exactly once, the
Python form of examples/c/pipeline.c and examples/go/pipeline.

    python3 examples/python/pipeline.py BOOTSTRAP ROLE MEMBER REQUESTS COMMANDS

The elector campaigns; in each term the leader reads REQUESTS under the
term (read_committed, from the offsets committed for the role) and writes
one command per request to COMMANDS (same partition, "done <request>")
with the consumed offsets in the same transaction. A deposed leader's late
commands and offsets are refused together by the broker, and the next
term starts exactly after the last request whose command was committed
(docs/PIPELINES.md). SIGTERM or Ctrl-C resigns. Both topics must exist.
"""
import signal
import sys
import threading

import krabka_coord as kc


def main(bootstrap: str, role: str, member: str, requests: str, commands: str) -> None:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with kc.Client({"bootstrap.servers": bootstrap}) as client, client.elect(role, member) as elector:
        for term in elector:  # one Term per won term, in order
            print("leading term %d with token %s" % (term.number, term.token), flush=True)
            lead = term.leadership  # the elector renews it
            try:
                with lead.consume(requests) as inp:
                    while not stop.is_set() and term.active:
                        recs = inp.poll(max=100, timeout=0.5)  # [] when nothing came
                        if not recs:
                            continue
                        cmds = [(commands, b"done " + (r.value or b""), r.key, r.partition) for r in recs]
                        lead.produce_many(cmds, offsets=inp.position())  # commands and offsets: one transaction
                        print("dispatched %d commands" % len(cmds), flush=True)
            except (kc.FencedError, kc.LeaseExpiredError, kc.NotLeaderError, kc.ClosedError) as exc:
                print("term %d over: %s" % (term.number, exc), flush=True)  # nothing of the refused write counts
            if stop.is_set():
                break  # leaving the with blocks resigns a held term


if __name__ == "__main__":
    main(*sys.argv[1:6])
