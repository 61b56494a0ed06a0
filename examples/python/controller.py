"""controller: a host run by the elector, the Python form of
examples/go/controller and examples/c/controller.c.

    python3 examples/python/controller.py BOOTSTRAP ROLE MEMBER TOPIC

The elector campaigns, renews, stops the term before the lease runs out and
campaigns again; commands go out only inside a term, as guarded writes under
its token (the broker refuses a deposed term's). SIGTERM or Ctrl-C resigns:
a standby takes over at once. The topic must exist.
"""
import signal
import sys
import threading

import krabka_coord as kc


def main(bootstrap: str, role: str, member: str, topic: str) -> None:
    stop = threading.Event()  # SIGTERM or Ctrl-C: a flag, never an exception inside a library call
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    term = None
    try:
        with kc.Client({"bootstrap.servers": bootstrap}) as client, client.elect(role, member) as elector:
            for term in elector:                                # one Term per won term, in order
                print("leading term %d with token %s" % (term.number, term.token), flush=True)
                n = 0
                while not stop.is_set() and term.wait_stopped(timeout=1.0) is None:  # the pace while leading
                    n += 1
                    try:
                        term.produce(topic, "command %d" % n, key=member)
                        print("dispatched command %d" % n, flush=True)
                    except (kc.FencedError, kc.NotLeaderError, kc.LeaseExpiredError) as exc:
                        print("command %d refused: %s" % (n, exc), flush=True)  # the term is over
                if stop.is_set():
                    break                                       # leaving the with blocks resigns the term
                stopped(term)
                term = None
        if term is not None and term.stop_reason is not None:  # resigned on the way out
            stopped(term)
            term = None
    except KeyboardInterrupt:  # leaving the with blocks resigned a held term
        if term is not None and term.stop_reason is not None:
            stopped(term)


def stopped(term: kc.Term) -> None:
    print("term %d stopped: %s (%s)" % (term.number, term.stop_reason.name, term.error), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
