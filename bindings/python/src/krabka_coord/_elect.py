"""The elector: client.elect(role, member) -> Elector, iterated with `for`
or `async for` into Term objects, one per won term.

The C elector (krabka_elector_new) runs the election loop on the library's
threads and posts every term event (KRABKA_EVENT_TERM) to a completion
queue of its own. One daemon thread per elector ("krabka-elector") waits on
that queue's fd and copies each event into Python state under one lock:
a STARTED becomes a Term (with the Leadership handle taken from the event),
AT_RISK / SUSPENDED / RECOVERED / STOPPED go to their term, NEW_LEADER to
the elector, and ELECTOR_STOPPED (the last event: the loop ended, with the
error code that ended it) ends the iteration. No state is read from text.
Synchronous waiters wait on a Condition (in slices on the main thread, so
Ctrl-C works); asyncio waiters on futures completed with
call_soon_threadsafe, so a loop never blocks.

The release rule of the C ABI: the elector campaigns again only once the
STOPPED event of the last term was destroyed. The binding keeps that event
until the Python side is done with the term: the loop body moved on (the
next iteration was asked for), the term's `with` block was left, or the
elector was closed. So a new term is never yielded before the previous
one's stop was delivered, and a host slow to stop holds no new term.
"""


from __future__ import annotations

import asyncio
import collections
import ctypes
from typing import Any, AsyncIterator, Callable, Deque, Iterator, List, Optional

from . import _abi
from ._args import Timeout, timeout_ms
from ._elect_events import (_NOT_YET, ElectorState, Health, StopReason, TermEvent, TermEventKind, _read_event,
                            _run_blocking, _Stream)
from ._errors import ClosedError, ErrorCode, KrabkaError, raise_for
from ._leadership import Leadership
from ._native import glib, lib
from ._pump import _Pump
from ._term import Term

__all__ = ["Elector", "Term", "TermEvent", "TermEventKind", "StopReason", "ElectorState", "Health"]


class Elector(_Pump):
    """The election loop of one member for one role (Client.elect): it
    campaigns, renews the won lease in the background, stops the term
    before the lease runs out when renewals keep failing, and campaigns
    again after a loss. Iterate it for the won terms::

        with client.elect("controller", "node-1") as elector:
            for term in elector:                 # one Term per won term
                with term:                       # resigns if left early
                    while term.active:
                        term.produce("commands", b"...")

        async with client.elect("controller", "node-1") as elector:
            async for term in elector:
                async with term:
                    ...

    Guarantees: terms come in order (numbers 1, 2, ...); every term's stop
    is delivered exactly once, after its start; the next term is yielded
    only after the previous one stopped and was handed back (its `with`
    block left, or the next iteration asked for); leaving the elector's
    block (normally, by an exception, KeyboardInterrupt, a cancelled task)
    resigns a held term and ends the loop. The iteration ends when the
    elector or its client is closed, or (recampaign=False) after the first
    term.

    leader: the last NEW_LEADER notice (holder, token), leaders() every
    one; healthy: Health (truthy, or falsy with the reason);
    set_eligible(False / True) withdraws and restores the candidacy.

    An elector runs until it is closed (close(), its with block, or its
    client's close): one left open without a reference keeps running (and
    its thread, "krabka-elector", keeps it alive) until the process exits.
    """

    _what = "elector"

    def __init__(self, client: Any, client_ptr: int, role: str, member: str, flags: int,
                 start: Callable[[int, Any, Any], int]) -> None:
        self._client = client  # keeps the client (and its handle) alive
        self.role = role
        self.member = member
        self._recampaign = not flags & _abi.ELECT_NO_RECAMPAIGN
        self._eligible = not flags & _abi.ELECT_INELIGIBLE
        self._init_pump()
        self._pending: Deque[Term] = collections.deque()  # started, not yet yielded
        self._current: Optional[Term] = None  # yielded, not yet handed back
        self._terms: List[Term] = []  # every term, in order (until handed back)
        self._leaders: List[TermEvent] = []
        self._loop_ended = False  # the C loop returned (its ELECTOR_STOPPED event came)
        self._end_error: Optional[KrabkaError] = None  # why, unless it was closed
        self._closed = False
        self._h = self._open(start, "krabka_elector_new", lib.krabka_elector_destroy, "krabka-elector")

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("ended" if self._loop_ended else "running")
        return "<Elector %s/%s %s>" % (self.role, self.member, state)

    # -- the events (on the elector's thread) ---------------------------------------
    def _handle(self, ev: int) -> None:
        keep = False
        try:
            te = _read_event(ev)
            if te is None:
                return
            if te.kind == _abi.TermEventKind.STARTED:
                lead = None
                p = ctypes.c_void_p()
                if glib.krabka_event_take_leadership(ev, ctypes.byref(p), None, 0) == 0 and p.value:
                    lead = Leadership(p.value, self._client, self.role, self.member)
                term = Term(self, te, lead)
                with self._cond:
                    self._pending.append(term)
                    self._terms.append(term)
                    self._notify_locked()
                return
            if te.kind == _abi.TermEventKind.ELECTOR_STOPPED:
                with self._cond:
                    self._loop_ended = True
                    self._end_error = te.error
                    self._notify_locked()
                return
            if te.kind == _abi.TermEventKind.NEW_LEADER:
                with self._cond:
                    self._leaders.append(te)
                    self._notify_locked()
                return
            with self._cond:
                term_ = self._term_locked(te.term)
                if term_ is None or term_._stop is not None:
                    return  # not a term of ours (never happens): drop it (a STOPPED: released)
                term_._events.append(te)
                if te.deadline_ms:
                    term_._deadline_ms = te.deadline_ms
                if te.kind == _abi.TermEventKind.AT_RISK:
                    term_._at_risk = True
                elif te.kind == _abi.TermEventKind.SUSPENDED:
                    term_._suspended = True
                elif te.kind == _abi.TermEventKind.RECOVERED:
                    term_._at_risk = term_._suspended = False
                elif te.kind == _abi.TermEventKind.STOPPED:
                    term_._at_risk = term_._suspended = False
                    term_._stop = te
                    term_._stop_ev = ev
                    keep = True  # released by the consumer (Term._release)
                self._notify_locked()
        finally:
            if not keep:
                lib.krabka_event_destroy(ev)

    def _term_locked(self, n: int) -> Optional[Term]:
        for t in reversed(self._terms):
            if t.number == n:
                return t
        return None

    # -- the terms ------------------------------------------------------------------
    def _hand_back_pick(self) -> Any:
        cur = self._current
        if cur is None or cur._stop is not None or self._closed:
            return True
        return _NOT_YET

    def _next_pick(self) -> Any:
        if self._closed:
            return None
        if self._pending:
            t = self._pending.popleft()
            self._current = t
            return t
        if self._loop_ended:
            return None
        return _NOT_YET

    def _done_with_current(self) -> None:
        """The consumer moved on: the current term is handed back once it
        stopped (the wait for that stop is the caller's)."""
        with self._cond:
            cur, self._current = self._current, None
            if cur is not None and cur in self._terms:
                self._terms.remove(cur)
        if cur is not None:
            cur._release()

    def next_term(self, timeout: Timeout = None) -> Optional[Term]:
        """The next won term; None when `timeout` seconds passed first or the
        iteration ended. Waits first for the previous term's stop and hands
        it back. Interruptible (Ctrl-C)."""
        seconds = None if timeout is None else timeout_ms(timeout) / 1000.0
        if self._wait(self._hand_back_pick, seconds) is _NOT_YET:
            return None
        self._done_with_current()
        got = self._wait(self._next_pick, seconds)
        return None if got is _NOT_YET else got

    def __iter__(self) -> Iterator[Term]:
        return self

    def __next__(self) -> Term:
        self._wait(self._hand_back_pick, None)
        self._done_with_current()
        got = self._wait(self._next_pick, None)
        if got is None:
            raise StopIteration
        return got  # type: ignore[no-any-return]

    def __aiter__(self) -> AsyncIterator[Term]:
        return self

    async def __anext__(self) -> Term:
        """The next term, without blocking the loop."""
        await self._wait_async(self._hand_back_pick)
        self._done_with_current()
        got = await self._wait_async(self._next_pick)
        if got is None:
            raise StopAsyncIteration
        return got  # type: ignore[no-any-return]

    # -- leaders, health, eligibility ----------------------------------------------------
    @property
    def leader(self) -> Optional[TermEvent]:
        """The last NEW_LEADER notice (holder, token, deadline_ms): who the
        log shows holding the role, this member included; None before the
        first."""
        with self._cond:
            return self._leaders[-1] if self._leaders else None

    def leaders(self) -> "_Stream[TermEvent]":
        """The NEW_LEADER notices from the last one on (if any), then each
        change of holder or token; iterate with `for` or `async for`; ends
        when the elector is closed."""
        with self._cond:
            start = max(0, len(self._leaders) - 1)
        return _Stream(self, lambda: self._leaders, start, lambda: self._closed)

    @property
    def state(self) -> ElectorState:
        """Where the loop is (krabka_elector_state): CAMPAIGNING between
        terms (standing by and withdrawn included), HOLDING, AT_RISK,
        SUSPENDED (a term rides out an outage: do not dispatch), STOPPED
        once the loop ended (`error` says why). Never blocks."""
        p = self._h.get()
        if p is None or self._closed:
            return ElectorState.STOPPED
        out = ctypes.c_int()
        code = lib.krabka_elector_state(p, ctypes.byref(out))
        if code == ErrorCode.INVALID_HANDLE:
            return ElectorState.STOPPED
        raise_for(code)
        return ElectorState(out.value)

    @property
    def error(self) -> Optional[KrabkaError]:
        """Why the loop ended by itself (the ELECTOR_STOPPED event's error:
        ClosedError when the client was closed, the lost term's error with
        recampaign=False, a refusal such as AuthorizationError); None while
        it runs and when close() ended it."""
        with self._cond:
            return self._end_error

    @property
    def healthy(self) -> Health:
        """Health: truthy while campaigning, standing by, withdrawn or holding
        the role with its lease renewed on time; falsy, with the reason,
        while the held lease is at risk, while a term is suspended, after
        the loop ended and once closed. The reason is for people; `state` is the code. Never
        blocks."""
        p = self._h.get()
        if p is None or self._closed:
            return Health(False, "this Elector was closed")
        ok = ctypes.c_int()
        reason = ctypes.create_string_buffer(512)
        code = lib.krabka_elector_healthy(p, ctypes.byref(ok), reason, len(reason))
        if code == ErrorCode.INVALID_HANDLE:
            return Health(False, "this Elector was closed")
        raise_for(code, reason)
        return Health(bool(ok.value), reason.value.decode("utf-8", "replace"))

    @property
    def eligible(self) -> bool:
        """Whether the member is a candidate (set_eligible)."""
        return self._eligible

    @property
    def closed(self) -> bool:
        return self._closed

    def _eligible_call(self, eligible: object, timeout: Timeout) -> Callable[[], None]:
        if not isinstance(eligible, bool):
            raise TypeError("eligible must be bool, not %s" % type(eligible).__name__)
        ms = timeout_ms(timeout)
        if self._closing:
            raise ClosedError(ErrorCode.CLOSED, "this Elector was closed")
        p = self._h.get()
        if p is None:
            raise ClosedError(ErrorCode.CLOSED, "this Elector was closed")

        def call() -> None:
            buf = ctypes.create_string_buffer(512)
            code = lib.krabka_elector_set_eligible(p, 1 if eligible else 0, ms, buf, len(buf))
            if code == ErrorCode.INVALID_HANDLE:
                raise ClosedError(ErrorCode.CLOSED, "this Elector was closed")
            raise_for(code, buf)
            self._eligible = eligible

        return call

    def set_eligible(self, eligible: bool, timeout: Timeout = None) -> None:
        """Withdraw (False) or restore (True) the candidacy: a holder
        resigns (its term stops RESIGNED; the first standby takes over at
        once), a standby leaves the roster; restored, the member registers
        again at the tail of the roster. Returns once that was written (or
        raises why it failed), within `timeout` seconds (default
        request.timeout.ms). Interruptible (Ctrl-C; the call goes on)."""
        _run_blocking(self._eligible_call(eligible, timeout))

    async def set_eligible_async(self, eligible: bool, timeout: Timeout = None) -> None:
        """set_eligible() without blocking the loop (the C call has no
        asynchronous form: it runs on the loop's default executor)."""
        call = self._eligible_call(eligible, timeout)
        await asyncio.get_running_loop().run_in_executor(None, call)

    # -- the end ---------------------------------------------------------------------------
    def _close_now(self) -> None:
        """Destroys the C elector (resigns a held term: its STOPPED is in the
        queue when destroy returns; waits for the loop), then delivers what
        the queue still holds, hands every term back and destroys the
        queue. Blocks. Runs once."""
        try:
            self._h.release()
        finally:
            self._stop_pump_thread()  # and delivers what the destroy posted
            with self._cond:
                self._closed = True
                self._loop_ended = True
                terms = list(self._terms) + list(self._pending)
                self._terms = []
                self._pending.clear()
                self._current = None
                self._notify_locked()
            for t in terms:
                t._release()
            self._close_queue()

    def close(self) -> None:
        """End the election: a held term is resigned (the first standby
        takes over at once) and its stop delivered to the Term; the
        iterations end. Blocks until the loop ended (bounded by
        request.timeout.ms). Idempotent; Ctrl-C raises KeyboardInterrupt at
        once while the close goes on by itself."""
        if self._begin_close():
            _run_blocking(self._close_now)
        else:
            self._wait(lambda: True if self._closed else _NOT_YET, None)

    async def close_async(self) -> None:
        """close() without blocking the loop (on the loop's default
        executor). Shielded: a task cancelled while it waits does not stop
        the close."""
        loop = asyncio.get_running_loop()
        if self._begin_close():
            await asyncio.shield(loop.run_in_executor(None, self._close_now))
        else:
            await self._wait_async(lambda: True if self._closed else _NOT_YET)

    def __enter__(self) -> "Elector":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.close()

    async def __aenter__(self) -> "Elector":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await self.close_async()
