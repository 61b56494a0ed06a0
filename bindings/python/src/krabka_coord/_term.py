"""Term: one won term of an Elector, from its STARTED to its STOPPED."""

from __future__ import annotations

from typing import Any, List, Optional, Union
import datetime

from . import _abi
from ._args import Headers, Timeout, timeout_ms
from ._elect_events import _NOT_YET, TermEvent, _ElectorLike, _ms_to_datetime, _Stream
from ._errors import ErrorCode, KrabkaError
from ._leadership import Leadership
from ._native import lib
from ._values import FencingToken, LeadershipState, ProduceResult

__all__ = ["Term"]


class Term:
    """One won term of an Elector: from its STARTED to its STOPPED.

    number, token, role, member: what the term is. leadership: the term's
    Leadership for guarded writes (produce, produce_many, set_metadata);
    the elector renews it, and once the term is over its calls fail
    (FencedError, NotLeaderError, ...). `active` is true until the elector
    reported the stop; then stop_reason and error say why.

    Use it as a context manager for the term's work: leaving the block
    resigns the term if it still runs (as Leadership's block does), waits
    for its stop and hands the term back to the elector, which may then
    campaign again::

        for term in elector:
            with term:
                while term.active:
                    term.produce("commands", next_command())

    at_risk is true while the lease is at risk (AT_RISK not yet followed
    by RECOVERED); suspended while the term rides out an outage (SUSPENDED
    not yet followed by RECOVERED: do not dispatch); events() yields the
    term's events (STARTED, AT_RISK, SUSPENDED, RECOVERED, STOPPED last);
    wait_stopped() / stopped() wait for the end.
    """

    def __init__(self, elector: _ElectorLike, started: TermEvent, leadership: Optional[Leadership]) -> None:
        self._el = elector
        self._started = started
        self._leadership = leadership
        self._events: List[TermEvent] = [started]
        self._at_risk = False
        self._suspended = False
        self._deadline_ms = started.deadline_ms
        self._stop: Optional[TermEvent] = None
        self._stop_ev: Optional[int] = None  # the STOPPED event, kept until released
        self._released = False

    def __repr__(self) -> str:
        state = "active" if self._stop is None else self._stop.stop_reason.name
        return "<Term %d of %s/%s token=%s %s>" % (self.number, self.role, self.member, self.token, state)

    # -- what the term is ----------------------------------------------------
    @property
    def number(self) -> int:
        """The term number: 1, 2, ... per elector."""
        return self._started.term

    @property
    def token(self) -> FencingToken:
        return self._started.token

    @property
    def role(self) -> str:
        return self._el.role

    @property
    def member(self) -> str:
        return self._el.member

    @property
    def leadership(self) -> Leadership:
        """The term's leadership, for guarded writes. Closed (its calls raise
        NotLeaderError) once the term was handed back to the elector."""
        if self._leadership is None:
            raise KrabkaError(ErrorCode.INTERNAL, "the STARTED event of term %d carried no leadership" % self.number)
        return self._leadership

    @property
    def deadline_ms(self) -> int:
        """The lease deadline the last event of the term reported (epoch ms);
        leadership.lease is the live lease."""
        with self._el._cond:
            return self._deadline_ms

    @property
    def deadline(self) -> Optional[datetime.datetime]:
        return _ms_to_datetime(self.deadline_ms)

    # -- how it goes ------------------------------------------------------------
    @property
    def active(self) -> bool:
        """True until the elector reported the term's stop."""
        with self._el._cond:
            return self._stop is None

    @property
    def at_risk(self) -> bool:
        """True while the term's lease is at risk: AT_RISK came and no
        RECOVERED after it (nor the stop)."""
        with self._el._cond:
            return self._at_risk

    @property
    def suspended(self) -> bool:
        """True while the term rides out an outage (SUSPENDED, with
        krabka.elector.ride.outage): no broker answers; the term is kept
        under the same token but nothing may be dispatched until RECOVERED
        (then False again) or the stop (FENCED if a standby minted)."""
        with self._el._cond:
            return self._suspended

    @property
    def stop_reason(self) -> Optional["_abi.StopReason"]:
        """Why the term stopped (FENCED, EXPIRED, RESIGNED, CLOSED,
        LOST_AT_RISK); None while it runs."""
        with self._el._cond:
            return None if self._stop is None else self._stop.stop_reason

    @property
    def error(self) -> Optional[KrabkaError]:
        """The stop's error (what the term's calls raise now); None while it
        runs."""
        with self._el._cond:
            return None if self._stop is None else self._stop.error

    def events(self) -> "_Stream[TermEvent]":
        """The term's events from its STARTED on: AT_RISK and RECOVERED as
        they happen, STOPPED last (then the iteration ends). Iterate with
        `for` or `async for`; every call starts from the STARTED again."""
        return _Stream(self._el, lambda: self._events, 0, lambda: self._stop is not None or self._el._closed)

    def _stopped_pick(self) -> Any:
        if self._stop is not None:
            return self._stop.stop_reason
        if self._el._closed:
            return _abi.StopReason.CLOSED  # never happens: close delivers every stop
        return _NOT_YET

    def wait_stopped(self, timeout: Timeout = None) -> Optional["_abi.StopReason"]:
        """Block until the term stopped and return why (`error` has the
        error); None when `timeout` seconds passed first (None: no limit).
        Interruptible (Ctrl-C)."""
        seconds = None if timeout is None else timeout_ms(timeout) / 1000.0
        got = self._el._wait(self._stopped_pick, seconds)
        return None if got is _NOT_YET else got

    async def stopped(self) -> "_abi.StopReason":
        """Wait, without blocking the loop, until the term stopped; returns
        why (`error` has the error)."""
        return await self._el._wait_async(self._stopped_pick)  # type: ignore[no-any-return]

    # -- the term's calls --------------------------------------------------------
    def produce(self, topic: str, value: Union[bytes, str, None], key: Union[bytes, str, None] = None,
                partition: Optional[int] = None, timeout: Timeout = None, headers: Headers = None) -> ProduceResult:
        """leadership.produce(): a guarded write under the term's token."""
        return self.leadership.produce(topic, value, key, partition, timeout, headers)

    async def produce_async(self, topic: str, value: Union[bytes, str, None], key: Union[bytes, str, None] = None,
                            partition: Optional[int] = None, timeout: Timeout = None,
                            headers: Headers = None) -> ProduceResult:
        """leadership.produce_async()."""
        return await self.leadership.produce_async(topic, value, key, partition, timeout, headers)

    def resign(self, timeout: Timeout = None) -> None:
        """End the term now (STOPPED, RESIGNED): the first standby takes over
        at once; the elector campaigns again once the term was handed back
        (the member registers at the tail). A no-op once the term stopped."""
        lead = self._leadership
        if lead is not None and self.active and lead.state == LeadershipState.ACTIVE:
            lead.resign(timeout)

    async def resign_async(self, timeout: Timeout = None) -> None:
        """resign() as a coroutine."""
        lead = self._leadership
        if lead is not None and self.active and lead.state == LeadershipState.ACTIVE:
            await lead.resign_async(timeout)

    # -- the hand-back ------------------------------------------------------------
    def _release(self) -> None:
        """Hand the stopped term back: destroys the kept STOPPED event (the
        elector may campaign again) and closes the leadership handle. Only
        once the stop arrived; idempotent."""
        with self._el._cond:
            if self._stop is None or self._released:
                return
            self._released = True
            ev, self._stop_ev = self._stop_ev, None
        if self._leadership is not None:
            self._leadership.close()
        if ev is not None:
            lib.krabka_event_destroy(ev)

    def __enter__(self) -> "Term":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            try:
                self.resign()
            except KrabkaError:
                if exc_type is None:
                    raise
            self.wait_stopped()
        finally:
            self._release()

    async def __aenter__(self) -> "Term":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            try:
                await self.resign_async()
            except KrabkaError:
                if exc_type is None:
                    raise
            await self.stopped()
        finally:
            self._release()
