"""controller: a host run by the elector, the Python form of
examples/go/controller and examples/c/controller.c.

    python3 examples/python/controller.py BOOTSTRAP ROLE MEMBER TOPIC

The elector campaigns, renews, stops the term before the lease runs out and
campaigns again; commands go out only inside a term, as guarded writes under
its token (the broker refuses a deposed term's). SIGTERM or Ctrl-C resigns:
a standby takes over at once. The topic must exist. test_controller.py
tests it on an in-process cluster (krabka_coord.testing), with no broker.
"""
import signal
import sys
import threading
from typing import Callable

import krabka_coord as kc


def main(bootstrap: str, role: str, member: str, topic: str) -> None:
    stop = threading.Event()  # SIGTERM or Ctrl-C: a flag, never an exception inside a library call
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with kc.Client({"bootstrap.servers": bootstrap}) as client:
        run(client, role, member, topic, stop)


def _print(line: str) -> None:
    print(line, flush=True)


def run(client: kc.Client, role: str, member: str, topic: str, stop: threading.Event,
        pace: float = 1.0, say: Callable[[str], None] = _print) -> None:
    """The controller on client until stop is set: one command per `pace`
    seconds while leading, each line it reports through say (its test,
    test_controller.py, runs it on an in-process cluster)."""
    term = None
    try:
        with client.elect(role, member) as elector:
            for term in elector:                                # one Term per won term, in order
                say("leading term %d with token %s" % (term.number, term.token))
                n = 0
                while not stop.is_set() and term.wait_stopped(timeout=pace) is None:  # the pace while leading
                    n += 1
                    try:
                        term.produce(topic, "command %d" % n, key=member)
                        say("dispatched command %d" % n)
                    except (kc.FencedError, kc.NotLeaderError, kc.LeaseExpiredError) as exc:
                        say("command %d refused: %s" % (n, exc))  # the term is over
                if stop.is_set():
                    break                                       # leaving the with blocks resigns the term
                stopped(term, say)
                term = None
        if term is not None and term.stop_reason is not None:  # resigned on the way out
            stopped(term, say)
            term = None
    except KeyboardInterrupt:  # leaving the with blocks resigned a held term
        if term is not None and term.stop_reason is not None:
            stopped(term, say)


def stopped(term: kc.Term, say: Callable[[str], None]) -> None:
    say("term %d stopped: %s (%s)" % (term.number, term.stop_reason.name, term.error))


if __name__ == "__main__":
    main(*sys.argv[1:5])
