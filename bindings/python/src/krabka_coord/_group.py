"""Role groups: client.join_group(group, shards, member) -> GroupMember,
iterated with `for` or `async for` into GroupEvents (a shard assigned, with
its Leadership; a shard revoked, with why). client.join_semaphore is the
same for a semaphore's slots.

The C member (krabka_group_join) runs on the library's threads and posts
every shard event (KRABKA_EVENT_GROUP) to a completion queue of its own,
and KRABKA_EVENT_GROUP_STOPPED last. One daemon thread per member
("krabka-group", _pump._Pump) copies each event into Python state: an
ASSIGNED's leadership is taken from the event as a Leadership (borrowed: the
group renews, hands over and resigns it; writes under it fail once the shard
is revoked), and the events are appended to a list the iterators walk.
"""

from __future__ import annotations

import asyncio
import ctypes
import datetime
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Dict, Iterator, List, Optional

from . import _abi, _calls
from ._args import Timeout, timeout_ms
from ._elect_events import _NOT_YET, _ms_to_datetime, _run_blocking, _Stream
from ._errors import ClosedError, ErrorCode, KrabkaError, error_for, raise_for
from ._leadership import Leadership
from ._native import glib, lib
from ._pump import _Pump
from ._values import FencingToken, text

__all__ = ["GroupMember", "GroupEvent", "GroupEventKind", "MAX_SHARDS"]

#: krabka_group_event_kind_t: ASSIGNED, REVOKED.
GroupEventKind = _abi.GroupEventKind
#: The largest shard (or slot) count of a group (KRABKA_GROUP_MAX_SHARDS).
MAX_SHARDS = _abi.GROUP_MAX_SHARDS

_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class GroupEvent:
    """One change of a member's shards (Go's coord.GroupEvent, C's
    KRABKA_EVENT_GROUP).

    kind: ASSIGNED or REVOKED (GroupEventKind).
    shard: the shard (or slot) index.
    role: the shard's role name.
    token: the shard's term's token.
    deadline_ms: the term's lease deadline when the event was made (epoch
        ms; 0 when unknown).
    leadership: SHARD_ASSIGNED: the shard's Leadership, for guarded writes
        (the group renews it; do not resign or close it); None on REVOKED.
    error: SHARD_REVOKED: why the term ended (NotLeaderError: handed over by
        the plan; FencedError, LeaseExpiredError, ClosedError); else None.
    """

    kind: "_abi.GroupEventKind"
    shard: int
    role: str
    token: FencingToken
    deadline_ms: int
    leadership: Optional[Leadership] = None
    error: Optional[KrabkaError] = None

    @property
    def deadline(self) -> Optional[datetime.datetime]:
        """deadline_ms as an aware UTC datetime (None when unknown)."""
        return _ms_to_datetime(self.deadline_ms)


def _check_count(value: object, what: str) -> int:
    """A shard or slot count: an int that fits the C call's int32 (the
    library judges the range and names it)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be int, not %s" % (what, type(value).__name__))
    if not -_INT32_MAX - 1 <= value <= _INT32_MAX:
        raise ValueError("%s=%d is out of range [1, %d]" % (what, value, MAX_SHARDS))
    return int(value)


def _check_weight(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("weight must be int, not %s" % type(value).__name__)
    if not -_INT32_MAX - 1 <= value <= _INT32_MAX:
        raise ValueError("weight=%d is out of range [1, %d]" % (value, _INT32_MAX))
    return int(value)


def _check_bool(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError("%s must be bool, not %s" % (what, type(value).__name__))
    return value


class GroupMember(_Pump):
    """One member's part in a role group (Client.join_group) or a semaphore
    (Client.join_semaphore). Iterate it for the changes of its shards::

        with client.join_group("dispatch", 16, "node-1") as member:
            for ev in member:
                if ev.kind == GroupEventKind.ASSIGNED:
                    start(ev.shard, ev.leadership)    # writes fenced per shard
                else:
                    stop(ev.shard)                    # ev.error says why

        async with client.join_group("dispatch", 16, "node-1") as member:
            async for ev in member:
                ...

    Every ASSIGNED of a shard is followed by its REVOKED before the next
    ASSIGNED of that shard. `held` is what the member holds now (as the
    library sees it). Leaving the block leaves the group (hands the shards
    over); the iteration ends once the member stopped (left, closed, or its
    client closed: `error` then says why).
    """

    _what = "group member"

    def __init__(self, client: Any, group: str, shards: int, member: str, semaphore: bool,
                 start: Callable[[int, Any, Any], int]) -> None:
        self._client = client  # keeps the client (and its handle) alive
        self.group = group
        self.member = member
        self.shards = shards
        self.semaphore = semaphore
        self._init_pump()
        self._events: List[GroupEvent] = []
        self._it: Optional[_Stream[GroupEvent]] = None  # the member's own iteration
        self._roles: Dict[int, str] = {}
        self._stopped = False  # the GROUP_STOPPED event came
        self._end_error: Optional[KrabkaError] = None
        self._closed = False
        self._h = self._open(start, "krabka_group_join", lib.krabka_group_destroy, "krabka-group")

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("stopped" if self._stopped else "running")
        return "<GroupMember %s/%s %s>" % (self.group, self.member, state)

    # -- the events (on the member's thread) --------------------------------------
    def _role(self, shard: int) -> str:
        r = self._roles.get(shard)
        if r is None:
            p = self._h.get()
            buf = ctypes.create_string_buffer(_abi.NAME_BUF)
            n = ctypes.c_size_t()
            if p is None or lib.krabka_group_shard_role(p, shard, buf, len(buf), ctypes.byref(n), None, 0):
                return ""
            r = self._roles[shard] = text(buf.raw[: n.value])
        return r

    def _handle(self, ev: int) -> None:
        try:
            typ = ctypes.c_int()
            if glib.krabka_event_type(ev, ctypes.byref(typ)):
                return
            if typ.value == _abi.EventType.GROUP_STOPPED:
                code = ctypes.c_int()
                buf = ctypes.create_string_buffer(512)
                raise_for(glib.krabka_event_error(ev, ctypes.byref(code), buf, len(buf)))
                with self._cond:
                    self._stopped = True
                    self._end_error = error_for(code.value, buf) if code.value else None
                    self._notify_locked()
                return
            if typ.value != _abi.EventType.GROUP:
                return
            kind = ctypes.c_int()
            raise_for(glib.krabka_event_group_kind(ev, ctypes.byref(kind), None, 0))
            try:
                k = _abi.GroupEventKind(kind.value)
            except ValueError:
                return  # a kind newer than this binding
            shard = ctypes.c_int32()
            raise_for(glib.krabka_event_shard(ev, ctypes.byref(shard), None, 0))
            tok = _abi.Token()
            raise_for(glib.krabka_event_token(ev, ctypes.byref(tok), None, 0))
            deadline = ctypes.c_int64()
            raise_for(glib.krabka_event_deadline(ev, ctypes.byref(deadline), None, 0))
            role = self._role(shard.value)
            lead = None
            error = None
            if k == _abi.GroupEventKind.ASSIGNED:
                p = ctypes.c_void_p()
                if glib.krabka_event_take_leadership(ev, ctypes.byref(p), None, 0) == 0 and p.value:
                    lead = Leadership(p.value, self._client, role, self.member)
            else:
                code = ctypes.c_int()
                buf = ctypes.create_string_buffer(512)
                raise_for(glib.krabka_event_error(ev, ctypes.byref(code), buf, len(buf)))
                error = error_for(code.value, buf) if code.value else None
            ge = GroupEvent(k, int(shard.value), role, FencingToken._from_c(tok), int(deadline.value), lead, error)
            with self._cond:
                self._events.append(ge)
                self._notify_locked()
        finally:
            lib.krabka_event_destroy(ev)

    # -- iteration ------------------------------------------------------------------
    def events(self) -> "_Stream[GroupEvent]":
        """A new iterator (sync and async) over every event from the first
        on; ends once the member stopped and every event was taken."""
        return _Stream(self, lambda: self._events, 0, self._finished)

    def _finished(self) -> bool:
        return self._stopped or self._closed

    def __iter__(self) -> Iterator[GroupEvent]:
        return self._default()

    def __aiter__(self) -> AsyncIterator[GroupEvent]:
        return self._default()

    def _default(self) -> "_Stream[GroupEvent]":
        with self._cond:
            if self._it is None:
                self._it = self.events()
            return self._it

    def next_event(self, timeout: Timeout = None) -> Optional[GroupEvent]:
        """The next event of the member's own iteration; None when `timeout`
        seconds passed first or the iteration ended. Interruptible (Ctrl-C)."""
        return self._default().next(timeout)

    # -- state ----------------------------------------------------------------------
    @property
    def held(self) -> List[int]:
        """The shards the member holds now, ascending (krabka_group_held;
        [] once closed). Never blocks."""
        p = self._h.get()
        if p is None or self._closed:
            return []
        arr = (ctypes.c_int32 * max(self.shards, 1))()
        n = ctypes.c_size_t()
        buf = _calls.errbuf()
        code = lib.krabka_group_held(p, arr, len(arr), ctypes.byref(n), buf, len(buf))
        if code == ErrorCode.INVALID_HANDLE:
            return []
        raise_for(code, buf)
        return [int(arr[i]) for i in range(min(n.value, len(arr)))]

    def shard_role(self, shard: int) -> str:
        """The role name of `shard` (0 <= shard < shards)."""
        if isinstance(shard, bool) or not isinstance(shard, int):
            raise TypeError("shard must be int, not %s" % type(shard).__name__)
        if not 0 <= shard < self.shards:
            raise ValueError("shard=%d is outside [0, %d)" % (shard, self.shards))
        return self._role(shard)

    @property
    def error(self) -> Optional[KrabkaError]:
        """Why the member stopped by itself (ClosedError when its client was
        closed); None while it runs and after leave() or close()."""
        with self._cond:
            return self._end_error

    @property
    def closed(self) -> bool:
        return self._closed

    def _live(self) -> int:
        p = self._h.get()
        if p is None or self._closing:
            raise ClosedError(ErrorCode.CLOSED, "this GroupMember was closed")
        return p

    def set_eligible(self, eligible: bool) -> None:
        """Make the member eligible for shards (True) or not (False): the
        next plan hands its shards over or gives it its share. Never
        blocks."""
        on = _check_bool(eligible, "eligible")
        buf = _calls.errbuf()
        raise_for(lib.krabka_group_set_eligible(self._live(), 1 if on else 0, buf, len(buf)), buf)

    def set_weight(self, weight: int) -> None:
        """Change the member's weight (at least 1; InvalidArgumentError
        naming it otherwise). Never blocks."""
        w = _check_weight(weight)
        buf = _calls.errbuf()
        raise_for(lib.krabka_group_set_weight(self._live(), w, buf, len(buf)), buf)

    # -- the end ----------------------------------------------------------------------
    def _leave_call(self, timeout: Timeout) -> Callable[[], None]:
        ms = timeout_ms(timeout)
        p = self._live()

        def call() -> None:
            buf = _calls.errbuf()
            raise_for(lib.krabka_group_leave(p, ms, buf, len(buf)), buf)

        return call

    def leave(self, timeout: Timeout = None) -> None:
        """Leave the group: the shards are handed over to their new owners
        (a REVOKED each), within `timeout` seconds (default
        request.timeout.ms; TimeoutError when the handover did not finish:
        the rest is resigned anyway); then the iteration ends. Close the
        member afterwards (or leave its block). Blocks; interruptible."""
        _run_blocking(self._leave_call(timeout))

    async def leave_async(self, timeout: Timeout = None) -> None:
        """leave() without blocking the loop (on its default executor)."""
        call = self._leave_call(timeout)
        await asyncio.get_running_loop().run_in_executor(None, call)

    def _close_now(self) -> None:
        try:
            self._h.release()  # krabka_group_destroy: resigns what is held, posts GROUP_STOPPED
        finally:
            self._stop_pump_thread()
            with self._cond:
                self._closed = True
                self._notify_locked()
            self._close_queue()

    def close(self) -> None:
        """End the member now: what it holds is resigned (no handover; use
        leave() first for one) and the iteration ends. Idempotent. Blocks."""
        if self._begin_close():
            _run_blocking(self._close_now)
        else:
            self._wait(lambda: True if self._closed else _NOT_YET, None)

    async def close_async(self) -> None:
        """close() without blocking the loop."""
        loop = asyncio.get_running_loop()
        if self._begin_close():
            await asyncio.shield(loop.run_in_executor(None, self._close_now))
        else:
            await self._wait_async(lambda: True if self._closed else _NOT_YET)

    def __enter__(self) -> "GroupMember":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if exc_type is None and not self._closing and not self._stopped:
                self.leave()
        finally:
            self.close()

    async def __aenter__(self) -> "GroupMember":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if exc_type is None and not self._closing and not self._stopped:
                await self.leave_async()
        finally:
            await self.close_async()
