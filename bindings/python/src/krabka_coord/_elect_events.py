"""The elector's events and the pieces its Term and Elector share: the
TermEvent value read from a KRABKA_EVENT_TERM, Health, the stream over a
growing list of events, and the blocking helper that keeps Ctrl-C working
on the main thread.
"""

from __future__ import annotations

import asyncio
import ctypes
import datetime
import threading
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Generic, Iterator, List, Optional, Protocol, TypeVar

from . import _abi, _calls
from ._args import Timeout, timeout_ms
from ._errors import KrabkaError, error_for, raise_for
from ._native import glib
from ._values import FencingToken, text



class _Waiter(Protocol):
    """What an event stream uses of its owner (an Elector, a GroupMember):
    the waits of _pump._Pump."""

    def _wait(self, pick: Callable[[], Any], timeout: Optional[float]) -> Any: ...

    async def _wait_async(self, pick: Callable[[], Any]) -> Any: ...


class _ElectorLike(Protocol):
    """What a Term and an event stream use of their Elector (_elect.py),
    which imports them: a Protocol keeps the package's imports free of
    cycles."""

    role: str
    member: str
    _cond: threading.Condition
    _closed: bool

    def _wait(self, pick: Callable[[], Any], timeout: Optional[float]) -> Any: ...

    async def _wait_async(self, pick: Callable[[], Any]) -> Any: ...


__all__ = ["TermEvent", "TermEventKind", "StopReason", "ElectorState", "Health"]

#: krabka_term_event_kind_t: STARTED, AT_RISK, RECOVERED, STOPPED, NEW_LEADER,
#: SUSPENDED, ELECTOR_STOPPED.
TermEventKind = _abi.TermEventKind
#: krabka_stop_reason_t: NONE, FENCED, EXPIRED, RESIGNED, CLOSED, LOST_AT_RISK.
StopReason = _abi.StopReason
#: krabka_elector_state_t: NOT_STARTED, CAMPAIGNING, HOLDING, AT_RISK,
#: SUSPENDED, STOPPED.
ElectorState = _abi.ElectorState

T = TypeVar("T")
E = TypeVar("E")

_NOT_YET = object()  # a wait predicate's "keep waiting"


def _ms_to_datetime(ms: int) -> Optional[datetime.datetime]:
    if ms <= 0:
        return None
    try:
        return datetime.datetime.fromtimestamp(ms / 1000.0, tz=datetime.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return datetime.datetime.max.replace(tzinfo=datetime.timezone.utc)


@dataclass(frozen=True)
class TermEvent:
    """One event of an elector (the fields of Go's coord.TermEvent, C's
    KRABKA_EVENT_TERM accessors).

    kind: STARTED, AT_RISK, RECOVERED, STOPPED or NEW_LEADER (TermEventKind).
    term: the term number (1, 2, ... per elector; 0 on NEW_LEADER).
    token: the term's fencing token (NEW_LEADER: the new holder's).
    holder: this member on term events, the new holder on NEW_LEADER.
    deadline_ms: the lease deadline in epoch ms (0 when unknown): the first
        lease on STARTED, the lease at risk on AT_RISK, the renewed one on
        RECOVERED, the last one on STOPPED, the holder's on NEW_LEADER.
    stop_reason: why the term stopped (StopReason.NONE unless STOPPED).
    error: STOPPED: the term's error (FencedError, LeaseExpiredError,
        NotLeaderError or ClosedError); ELECTOR_STOPPED: why the loop ended
        (None when the elector was closed); else None.
    """

    kind: "_abi.TermEventKind"
    term: int
    token: FencingToken
    holder: str
    deadline_ms: int
    stop_reason: "_abi.StopReason" = _abi.StopReason.NONE
    error: Optional[KrabkaError] = None

    @property
    def deadline(self) -> Optional[datetime.datetime]:
        """deadline_ms as an aware UTC datetime (None when unknown)."""
        return _ms_to_datetime(self.deadline_ms)


@dataclass(frozen=True)
class Health:
    """Elector.healthy: truthy while the elector does its job (campaigning,
    standing by, withdrawn, or holding the role with its lease renewed on
    time); falsy with the reason while the held lease is at risk and after
    the election loop ended."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


def _read_event(ev: int, typ_want: int = _abi.EventType.TERM) -> Optional[TermEvent]:
    """A TermEvent out of a KRABKA_EVENT_TERM (or of another type carrying
    the same data: typ_want, KRABKA_EVENT_SET_TERM); None: not one, or a
    kind newer than this binding."""
    typ = ctypes.c_int()
    if glib.krabka_event_type(ev, ctypes.byref(typ)) or typ.value != typ_want:
        return None
    kind = ctypes.c_int()
    raise_for(glib.krabka_event_term_kind(ev, ctypes.byref(kind), None, 0))
    try:
        k = _abi.TermEventKind(kind.value)
    except ValueError:
        return None
    n = ctypes.c_uint64()
    raise_for(glib.krabka_event_term(ev, ctypes.byref(n), None, 0))
    tok = _abi.Token()
    raise_for(glib.krabka_event_token(ev, ctypes.byref(tok), None, 0))
    holder = ctypes.create_string_buffer(_abi.NAME_BUF)
    hn = ctypes.c_size_t()
    raise_for(glib.krabka_event_holder(ev, holder, len(holder), ctypes.byref(hn), None, 0))
    deadline = ctypes.c_int64()
    raise_for(glib.krabka_event_deadline(ev, ctypes.byref(deadline), None, 0))
    reason = ctypes.c_int()
    raise_for(glib.krabka_event_stop_reason(ev, ctypes.byref(reason), None, 0))
    try:
        r = _abi.StopReason(reason.value)
    except ValueError:
        r = _abi.StopReason.NONE
    error = None
    if k in (_abi.TermEventKind.STOPPED, _abi.TermEventKind.ELECTOR_STOPPED):
        code = ctypes.c_int()
        buf = ctypes.create_string_buffer(512)
        raise_for(glib.krabka_event_error(ev, ctypes.byref(code), buf, len(buf)))
        error = error_for(code.value, buf) if code.value else None
    return TermEvent(k, int(n.value), FencingToken._from_c(tok), text(holder.raw[: hn.value]),
                     int(deadline.value), r, error)


def _run_blocking(fn: Callable[[], T]) -> T:
    """fn(), a C call that blocks without an asynchronous form. On the main
    thread it runs on a helper thread and the main thread waits in slices,
    so Ctrl-C raises KeyboardInterrupt at once (the call goes on to its end
    on the helper thread). Elsewhere it is called directly."""
    if threading.current_thread() is not threading.main_thread():
        return fn()
    done = threading.Event()
    box: List[Any] = [None, None]

    def run() -> None:
        try:
            box[0] = fn()
        except BaseException as exc:  # handed to the waiter
            box[1] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="krabka-elector-call", daemon=True).start()
    _calls.wait_event(done, None)
    if box[1] is not None:
        raise box[1]
    return box[0]  # type: ignore[no-any-return]


class _Stream(Generic[E]):
    """An iterator (sync and async) over a growing list of events (an
    elector's TermEvents, a group member's GroupEvents) its owner appends
    to, ending when `finished()` is true and every event was taken."""

    def __init__(self, elector: _Waiter, log: Callable[[], List[E]], start: int,
                 finished: Callable[[], bool]) -> None:
        self._el = elector
        self._log = log
        self._i = start
        self._finished = finished

    def _pick(self) -> Any:
        log = self._log()
        if self._i < len(log):
            ev = log[self._i]
            self._i += 1
            return ev
        if self._finished():
            return None
        return _NOT_YET

    def next(self, timeout: Timeout = None) -> Optional[E]:
        """The next event; None when `timeout` seconds passed first, or
        when the stream ended. Interruptible (Ctrl-C)."""
        seconds = None if timeout is None else timeout_ms(timeout) / 1000.0
        got = self._el._wait(self._pick, seconds)
        return None if got is _NOT_YET else got

    def __iter__(self) -> Iterator[E]:
        return self

    def __next__(self) -> E:
        got = self._el._wait(self._pick, None)
        if got is None or got is _NOT_YET:
            raise StopIteration
        return got  # type: ignore[no-any-return]

    def __aiter__(self) -> AsyncIterator[E]:
        return self

    async def __anext__(self) -> E:
        got = await self._el._wait_async(self._pick)
        if got is None:
            raise StopAsyncIteration
        return got  # type: ignore[no-any-return]


def _settle(f: "asyncio.Future[None]") -> None:
    if not f.done():
        f.set_result(None)


def _now() -> float:
    return time.monotonic()
