"""Elector sets: client.elector_set(member) -> ElectorSet, one member's
election loops over many roles (docs/MANY-ROLES.md), iterated with `for` or
`async for` into RoleEvents, every role's events on one iterator.

The C set (krabka_elector_set_new) runs an elector per role on the
library's threads and posts every role's term events (KRABKA_EVENT_SET_TERM,
each with its role) to one completion queue of its own. One daemon thread
per set ("krabka-elector-set", _pump._Pump) copies each event into a
RoleEvent; a STARTED's leadership is taken from the event as a Leadership
(borrowed: the set renews and resigns it).

The release rule of the C ABI, per role: a role campaigns again only once
its STOPPED event was destroyed. The binding keeps that event until the
iteration moved past it (the next event was asked for) or the set was
closed, so a role is never won again before its stop was delivered.
"""

from __future__ import annotations

import asyncio
import collections
import ctypes
import dataclasses
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Deque, Iterator, Optional, Tuple

from . import _abi, _calls
from ._args import Name, Timeout, name_bytes, timeout_ms
from ._elect_events import _NOT_YET, ElectorState, TermEvent, _read_event, _run_blocking
from ._errors import ClosedError, ErrorCode, KrabkaError, raise_for
from ._leadership import Leadership
from ._native import glib, lib
from ._pump import _Pump
from ._values import text

__all__ = ["ElectorSet", "RoleEvent"]


@dataclass(frozen=True)
class RoleEvent(TermEvent):
    """One event of an ElectorSet: a role's term event (Go's
    coord.RoleEvent, C's KRABKA_EVENT_SET_TERM), tagged with the role: a
    TermEvent (kind, term, token, holder, deadline_ms, stop_reason, error:
    term numbers count 1, 2, ... per role, from 1 again when a role is
    removed and added again; ELECTOR_STOPPED is the role's last event: it
    left the set, or its loop ended by itself, `error` says why) and

    role: the role the event is about.
    leadership: STARTED: the term's Leadership, for guarded writes (the set
        renews and resigns it; do not close it); else None.
    """

    role: str = ""
    leadership: Optional[Leadership] = None


def _read_set_event(ev: int) -> Optional[RoleEvent]:
    """A RoleEvent out of a KRABKA_EVENT_SET_TERM (None: not one, or a kind
    newer than this binding); a STARTED's leadership is not taken yet."""
    te = _read_event(ev, _abi.EventType.SET_TERM)
    if te is None:
        return None
    role = ctypes.create_string_buffer(_abi.NAME_BUF)
    rn = ctypes.c_size_t()
    raise_for(glib.krabka_event_role(ev, role, len(role), ctypes.byref(rn), None, 0))
    return RoleEvent(te.kind, te.term, te.token, te.holder, te.deadline_ms, te.stop_reason, te.error,
                     role=text(role.raw[: rn.value]))


class ElectorSet(_Pump):
    """One member's election loops over many roles (Client.elector_set):
    an elector per role, every role's events on one iterator::

        with client.elector_set("node-1") as s:
            for role in roles:
                s.add(role)                          # campaigns at once
            for ev in s:                             # every role's events
                if ev.kind == TermEventKind.STARTED:
                    start(ev.role, ev.leadership)    # writes fenced per role
                elif ev.kind == TermEventKind.STOPPED:
                    stop(ev.role)                    # ev.stop_reason, ev.error

        async with client.elector_set("node-1") as s:
            s.add("tenant-1")
            async for ev in s:
                ...

    Per role, the elector's guarantees: STARTED and STOPPED alternate with
    the same term number, ELECTOR_STOPPED is the role's last event, and a
    role is won again only after the iteration moved past its STOPPED (the
    next event was asked for). Other roles go on meanwhile. Roles are added
    and removed while it runs; leaving the block (or close()) resigns every
    held role, delivers the last events, and ends the iteration.
    """

    _what = "elector set"

    def __init__(self, client: Any, member: str, start: Callable[[int, Any, Any], int]) -> None:
        self._client = client  # keeps the client (and its handle) alive
        self.member = member
        self._init_pump()
        self._events: Deque[Tuple[RoleEvent, Optional[int]]] = collections.deque()  # not yet yielded
        self._held_stop: Optional[int] = None  # the C STOPPED event last yielded (released on the next ask)
        self._closed = False
        self._h = self._open(start, "krabka_elector_set_new", lib.krabka_elector_set_destroy, "krabka-elector-set")

    def __repr__(self) -> str:
        return "<ElectorSet %s %s>" % (self.member, "closed" if self._closed else "running")

    # -- the events (on the set's thread) -------------------------------------------
    def _handle(self, ev: int) -> None:
        keep = False
        try:
            re = _read_set_event(ev)
            if re is None:
                return
            if re.kind == _abi.TermEventKind.STARTED:
                p = ctypes.c_void_p()
                if glib.krabka_event_take_leadership(ev, ctypes.byref(p), None, 0) == 0 and p.value:
                    re = dataclasses.replace(re, leadership=Leadership(p.value, self._client, re.role, self.member))
            keep = re.kind == _abi.TermEventKind.STOPPED  # released once the iteration moved past it
            with self._cond:
                self._events.append((re, ev if keep else None))
                self._notify_locked()
        finally:
            if not keep:
                lib.krabka_event_destroy(ev)

    # -- iteration ------------------------------------------------------------------
    def _release_held(self) -> None:
        with self._cond:
            ev, self._held_stop = self._held_stop, None
        if ev is not None:
            lib.krabka_event_destroy(ev)  # the role may campaign again

    def _pick(self) -> Any:
        if self._events:
            re, ev = self._events.popleft()
            self._held_stop = ev
            return re
        if self._closed:
            return None
        return _NOT_YET

    def next_event(self, timeout: Timeout = None) -> Optional[RoleEvent]:
        """The next event of any role; None when `timeout` seconds passed
        first or the set was closed and every event was taken. Releases
        the STOPPED it returned before, if any. Interruptible (Ctrl-C)."""
        seconds = None if timeout is None else timeout_ms(timeout) / 1000.0
        self._release_held()
        got = self._wait(self._pick, seconds)
        return None if got is _NOT_YET else got

    def __iter__(self) -> Iterator[RoleEvent]:
        return self

    def __next__(self) -> RoleEvent:
        self._release_held()
        got = self._wait(self._pick, None)
        if got is None:
            raise StopIteration
        return got  # type: ignore[no-any-return]

    def __aiter__(self) -> AsyncIterator[RoleEvent]:
        return self

    async def __anext__(self) -> RoleEvent:
        """The next event, without blocking the loop."""
        self._release_held()
        got = await self._wait_async(self._pick)
        if got is None:
            raise StopAsyncIteration
        return got  # type: ignore[no-any-return]

    # -- roles ----------------------------------------------------------------------
    def _live(self) -> int:
        p = self._h.get()
        if p is None or self._closing:
            raise ClosedError(ErrorCode.CLOSED, "this ElectorSet was closed")
        return p

    def add(self, role: Name) -> None:
        """Add `role` to the set: its election loop starts and campaigns at
        once. Never waits on the cluster. TypeError for a role that is not
        str or bytes; the library's errors name the role:
        InvalidArgumentError for a role already in the set (or still being
        removed) or held by this client outside the set; DataError for an
        empty, over-long (its first bytes and its length named) or invalid
        UTF-8 role; ClosedError once closed."""
        r = name_bytes(role, "role")
        buf = _calls.errbuf()
        raise_for(lib.krabka_elector_set_add(self._live(), r, len(r), buf, len(buf)), buf)

    def _remove_call(self, role: Name, timeout: Timeout) -> Callable[[], None]:
        r = name_bytes(role, "role")
        ms = timeout_ms(timeout)
        p = self._live()

        def call() -> None:
            buf = _calls.errbuf()
            raise_for(lib.krabka_elector_set_remove(p, r, len(r), ms, buf, len(buf)), buf)

        return call

    def remove(self, role: Name, timeout: Timeout = None) -> None:
        """Remove `role` from the set: a held term is resigned (its STOPPED,
        RESIGNED, then ELECTOR_STOPPED come on the iteration), a standby
        leaves the race; the other roles go on. Returns once the role's loop
        ended, within `timeout` seconds (default request.timeout.ms;
        TimeoutError: it ends in the background). InvalidArgumentError
        naming the role when it is not in the set. Blocks; interruptible."""
        _run_blocking(self._remove_call(role, timeout))

    async def remove_async(self, role: Name, timeout: Timeout = None) -> None:
        """remove() without blocking the loop (on its default executor)."""
        call = self._remove_call(role, timeout)
        await asyncio.get_running_loop().run_in_executor(None, call)

    def state(self, role: Name) -> ElectorState:
        """Where `role`'s loop is now (ElectorState: CAMPAIGNING, HOLDING,
        AT_RISK, SUSPENDED). InvalidArgumentError naming the role when it is
        not in the set. Never blocks."""
        r = name_bytes(role, "role")
        out = ctypes.c_int()
        buf = _calls.errbuf()
        raise_for(lib.krabka_elector_set_state(self._live(), r, len(r), ctypes.byref(out), buf, len(buf)), buf)
        return ElectorState(out.value)

    def _count(self) -> Tuple[int, int]:
        p = self._h.get()
        if p is None or self._closed:
            return 0, 0
        roles = ctypes.c_size_t()
        held = ctypes.c_size_t()
        buf = _calls.errbuf()
        code = lib.krabka_elector_set_count(p, ctypes.byref(roles), ctypes.byref(held), buf, len(buf))
        if code == ErrorCode.INVALID_HANDLE:
            return 0, 0
        raise_for(code, buf)
        return int(roles.value), int(held.value)

    def __len__(self) -> int:
        """How many roles are in the set now (0 once closed)."""
        return self._count()[0]

    @property
    def held_count(self) -> int:
        """How many roles of the set it holds now (a term runs)."""
        return self._count()[1]

    @property
    def closed(self) -> bool:
        return self._closed

    # -- the end ----------------------------------------------------------------------
    def _close_now(self) -> None:
        try:
            self._h.release()  # krabka_elector_set_destroy: resigns every role, posts the last events
        finally:
            self._stop_pump_thread()  # and delivers what the destroy posted
            with self._cond:
                self._closed = True
                kept = [ev for _, ev in self._events if ev is not None]
                if self._held_stop is not None:
                    kept.append(self._held_stop)
                self._held_stop = None
                self._events = collections.deque((re, None) for re, _ in self._events)
                self._notify_locked()
            for ev in kept:
                lib.krabka_event_destroy(ev)
            self._close_queue()

    def close(self) -> None:
        """End every role's loop: held terms are resigned (their STOPPED
        and every role's ELECTOR_STOPPED are still delivered to the
        iteration, which then ends). Blocks until every loop ended. Idempotent;
        Ctrl-C raises KeyboardInterrupt at once while the close goes on."""
        if self._begin_close():
            _run_blocking(self._close_now)
        else:
            self._wait(lambda: True if self._closed else _NOT_YET, None)

    async def close_async(self) -> None:
        """close() without blocking the loop. Shielded: a task cancelled
        while it waits does not stop the close."""
        loop = asyncio.get_running_loop()
        if self._begin_close():
            await asyncio.shield(loop.run_in_executor(None, self._close_now))
        else:
            await self._wait_async(lambda: True if self._closed else _NOT_YET)

    def __enter__(self) -> "ElectorSet":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.close()

    async def __aenter__(self) -> "ElectorSet":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await self.close_async()

