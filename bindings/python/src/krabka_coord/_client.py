"""Client: the configuration, the election calls (acquire, try_acquire,
leave), describe, watch and the statistics, over a krabka_client_t.

The blocking calls run through the call runner (_calls): the synchronous
methods on the process queue, the *_async methods on the running loop's
queue. What a call wins after its caller gave up is disposed of by
_dispose.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

from . import _abi, _calls, _dispose, _log
from ._args import Bytes, Name, Timeout, metadata_bytes, name_bytes, timeout_ms
from ._errors import ClosedError, ConfigError, ErrorCode, KrabkaError, error_for, raise_for
from ._elect import Elector
from ._electorset import ElectorSet
from ._group import GroupMember, _check_bool, _check_count, _check_weight
from ._leadership import Leadership, TryAcquireResult, leadership_of, release_leadership, release_try_result, try_result_of
from ._native import Handle, glib, lib
from ._pure import validate_member, validate_role
from ._values import Status, read_status
from ._watch import Watch, watch_of

__all__ = ["Client"]


def _config_text(key: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int)):
        return str(value)
    raise TypeError(
        "configuration value of %r must be str, int or bool, not %s" % (key, type(value).__name__)
    )


def _read_nothing(_ev: int) -> None:
    return None


def _status_of(role: str) -> "_calls.Read[Status]":
    def read(ev: int) -> Status:
        out = ctypes.c_void_p()
        buf = _calls.errbuf()
        raise_for(glib.krabka_event_take_status(ev, ctypes.byref(out), buf, len(buf)), buf)
        if not out.value:
            raise KrabkaError(ErrorCode.INTERNAL, "krabka_client_describe_async succeeded without a result")
        try:
            return read_status(out.value, role)
        finally:
            lib.krabka_status_destroy(out.value)

    return read


def _with_acquire_options(term: Optional[bytes], member: Optional[bytes], buf: Any, call: Callable[[int], int]) -> int:
    """Runs call with a krabka_acquire_options_t holding the term's and the
    member's metadata (None: none) and returns its code, or the code of the
    setter that refused the metadata (errstr in buf). The *_opts calls copy
    the options, which are destroyed when call returns. Never blocks."""
    out = ctypes.c_void_p()
    code: int = glib.krabka_acquire_options_new(ctypes.byref(out))
    if code:
        return code
    try:
        if term is not None:
            code = glib.krabka_acquire_options_set_metadata(out, term, len(term), buf, len(buf))
            if code:
                return code
        if member is not None:
            code = glib.krabka_acquire_options_set_member_metadata(out, member, len(member), buf, len(buf))
            if code:
                return code
        return call(out.value or 0)
    finally:
        glib.krabka_acquire_options_destroy(out)


class Client:
    """A krabka-coord client: a connection to one Kafka cluster.

    `config` holds Kafka client properties (bootstrap.servers, client.id,
    security.protocol, sasl.mechanism, sasl.username, sasl.password,
    ssl.ca.location, request.timeout.ms) and krabka.* coordination settings
    (krabka.lease.ms, krabka.renew.interval.ms, ...). Values may be str, int
    or bool. An unknown key or a bad value raises ConfigError (a ValueError)
    naming the key. The client does not connect until the first blocking
    call. Use it as a context manager, or call close() (idempotent).
    """

    def __init__(self, config: Mapping[str, Union[str, int, bool]]) -> None:
        self._h: Optional[Handle] = None
        if not isinstance(config, Mapping):
            raise TypeError("config must be a dict of property names to values, not %s" % type(config).__name__)
        items = []
        for k, v in config.items():
            if not isinstance(k, str):
                raise TypeError("configuration keys must be str, not %s" % type(k).__name__)
            if "\x00" in k:
                raise ValueError("configuration key %r contains NUL" % k)
            text = _config_text(k, v)
            if "\x00" in text:
                raise ValueError("configuration value of %r contains NUL" % k)
            items.append((k, text))
        conf = lib.krabka_conf_new()
        if not conf:
            # NULL only when the library is unusable: in a child after
            # fork() its guard answers every call FORKED, so ask it why with
            # a call that changes nothing.
            why = lib.krabka_conf_destroy(None)
            if why == ErrorCode.FORKED:
                raise error_for(why)
            raise KrabkaError(ErrorCode.INTERNAL, "krabka_conf_new failed: the library is unusable")
        try:
            for k, text in items:
                buf = _calls.errbuf()
                code = lib.krabka_conf_set(conf, k.encode("utf-8"), text.encode("utf-8"), buf, len(buf))
                if code:
                    err = error_for(code, buf)
                    if isinstance(err, ConfigError):
                        err.key = k
                        if k not in err.reason:
                            err.reason = "%s: %s" % (k, err.reason)
                    raise err
            if not any(k in ("krabka.log.level", "krabka.debug") for k, _ in items):
                # Follow the krabka_coord logger's level unless configured.
                lib.krabka_conf_set(conf, b"krabka.log.level", _log.library_log_level().encode(), None, 0)
            raise_for(lib.krabka_conf_set_log_cb(conf, _log.LOG_CALLBACK, None))
            out = ctypes.c_void_p()
            buf = _calls.errbuf()
            raise_for(lib.krabka_client_new(conf, ctypes.byref(out), buf, len(buf)), buf)
            if not out.value:
                raise KrabkaError(ErrorCode.INTERNAL, "krabka_client_new returned no handle")
            self._h = Handle(out.value, lib.krabka_client_destroy)
            _log.open_clients.add(self)
        finally:
            lib.krabka_conf_destroy(conf)

    def __repr__(self) -> str:
        return "<krabka_coord.Client %s>" % ("closed" if self.closed else "open")

    @property
    def closed(self) -> bool:
        return self._h is None or self._h.get() is None

    def _ptr(self) -> int:
        p = None if self._h is None else self._h.get()
        if p is None:
            raise ClosedError(ErrorCode.CLOSED, "this Client was closed")
        return p

    def close(self) -> None:
        """Close the client: calls blocked in other threads raise
        ClosedError; its leaderships end without resigning. Blocks until
        background work has stopped. Idempotent."""
        if self._h is not None:
            self._h.release()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if self._h is not None:
                self._h.release()
        except Exception:
            pass

    # -- arguments ---------------------------------------------------------
    @staticmethod
    def _names(role: Name, member: Name) -> Tuple[bytes, bytes, str, str]:
        r = name_bytes(role, "role")
        m = name_bytes(member, "member")
        role_s = validate_role(r)
        member_s = validate_member(m)
        return r, m, role_s, member_s

    # -- metadata of an acquire ---------------------------------------------
    def _acquire_start(self, fn: Any, role: Name, member: Name, timeout: Timeout,
                       metadata: object, member_metadata: object) -> "Tuple[_calls.Start, str, str]":
        """The start of an acquire or try_acquire (fn: its *_opts_async
        form); the metadata goes in the call's own options."""
        r, m, role_s, member_s = self._names(role, member)
        ms = timeout_ms(timeout)
        tm = metadata_bytes(metadata, "metadata")
        mm = metadata_bytes(member_metadata, "member_metadata")
        ptr = self._ptr()

        def start(q: int, tag: int, buf: Any) -> int:
            return _with_acquire_options(
                tm, mm, buf, lambda opts: fn(ptr, r, len(r), m, len(m), opts, ms, q, tag, buf, len(buf)))

        return start, role_s, member_s

    def _describe_start(self, role: Name, timeout: Timeout) -> "Tuple[_calls.Start, str]":
        r = name_bytes(role, "role")
        role_s = validate_role(r)
        ms = timeout_ms(timeout)
        ptr = self._ptr()
        return (lambda q, tag, buf: glib.krabka_client_describe_async(ptr, r, len(r), ms, q, tag, buf, len(buf))), role_s

    def _leave_start(self, role: Name, member: Name, timeout: Timeout) -> _calls.Start:
        r, m, _, _ = self._names(role, member)
        ms = timeout_ms(timeout)
        ptr = self._ptr()
        return lambda q, tag, buf: glib.krabka_client_leave_async(ptr, r, len(r), m, len(m), ms, q, tag, buf, len(buf))

    def _watch_start(self, role: Name, renewals: bool, timeout: Timeout) -> "Tuple[_calls.Start, str]":
        r = name_bytes(role, "role")
        role_s = validate_role(r)
        ms = timeout_ms(timeout)
        flags = 1 if renewals else 0
        ptr = self._ptr()
        return (lambda q, tag, buf: glib.krabka_client_watch_async(ptr, r, len(r), flags, ms, q, tag, buf, len(buf))), role_s

    # -- the election -------------------------------------------------------
    def acquire(
        self,
        role: Name,
        member: Name,
        timeout: Timeout = None,
        *,
        metadata: Optional[Bytes] = None,
        member_metadata: Optional[Bytes] = None,
    ) -> Leadership:
        """Take `role` for `member`, waiting as long as the succession rules
        say. Blocks up to `timeout` seconds (None: no limit); raises
        KrabkaTimeoutError (also a builtin TimeoutError) when it passes.
        The returned Leadership is a context manager that resigns on exit.

        `metadata` (bytes): the metadata of the term this call wins, on
        every lease record of it (an address clients should use, say);
        describe, watch events and Leadership.metadata report it, and the
        holder changes it with set_metadata. `member_metadata` (bytes): on
        the member's registration (what a candidate advertises before it
        leads; a member already registered keeps the registration it has);
        roster entries report it. At most MAX_METADATA_BYTES (4096) each:
        more raises InvalidArgumentError before anything is written; str
        raises TypeError (encode it). Empty bytes are the same as none.

        Interruptible: Ctrl-C raises KeyboardInterrupt at once. The
        library's call goes on until it ends (bounded by `timeout`, or by
        close()); a leadership it wins after the interrupt is resigned and
        released (_dispose), never left behind."""
        start, role_s, member_s = self._acquire_start(glib.krabka_client_acquire_opts_async, role, member, timeout,
                                                      metadata, member_metadata)
        return _calls.run(start, leadership_of(self, role_s, member_s), _dispose.event)

    def try_acquire(
        self,
        role: Name,
        member: Name,
        timeout: Timeout = None,
        *,
        metadata: Optional[Bytes] = None,
        member_metadata: Optional[Bytes] = None,
    ) -> TryAcquireResult:
        """One pass of acquire that never waits for another member's lease.
        Returns a TryAcquireResult: `.leadership` (or None when not won) and
        `.retry_at` (when the answer can change). Unpacks as
        (leadership_or_None, retry_at). Blocks for the round trips of one
        pass, up to `timeout` seconds (default request.timeout.ms). Ctrl-C
        raises KeyboardInterrupt at once; a role the pass wins afterwards is
        resigned and released. `metadata` and `member_metadata` as in
        acquire()."""
        start, role_s, member_s = self._acquire_start(glib.krabka_client_try_acquire_opts_async, role, member, timeout,
                                                      metadata, member_metadata)
        return _calls.run(start, try_result_of(self, role_s, member_s), _dispose.event)

    def leave(self, role: Name, member: Name, timeout: Timeout = None) -> None:
        """Removes `member`'s registration of `role` (a tombstone of it): the
        member leaves the succession order, and a later acquire registers it
        again at the tail. Does not end a leadership. Closing the client
        leaves by itself the roles it registered in and does not hold
        (krabka.leave.on.close, default true). Blocks for one write, up to
        `timeout` seconds (default request.timeout.ms)."""
        _calls.run(self._leave_start(role, member, timeout), _read_nothing, _dispose.event)

    def describe(self, role: Name, timeout: Timeout = None) -> Status:
        """The third-party check: the coordinator's current token for the
        role and the state folded from its partition. Takes no epoch and joins
        no group. Blocks up to `timeout` seconds (default request.timeout.ms);
        Ctrl-C raises KeyboardInterrupt at once."""
        start, role_s = self._describe_start(role, timeout)
        return _calls.run(start, _status_of(role_s), _dispose.event)

    def watch(self, role: Name, renewals: bool = False, timeout: Timeout = None) -> Watch:
        """Watch `role` without taking part (no epoch, no registration):
        iterate the returned Watch with `for` or `async for`. The first events
        describe the current state. `renewals=True` also yields
        LEASE_RENEWED. Blocks up to `timeout` seconds (default
        request.timeout.ms) while the view catches up."""
        start, role_s = self._watch_start(role, renewals, timeout)
        return _calls.run(start, watch_of(role_s), _dispose.event)

    def elect(
        self,
        role: Name,
        member: Name,
        *,
        recampaign: bool = True,
        eligible: bool = True,
        metadata: Optional[Bytes] = None,
        member_metadata: Optional[Bytes] = None,
    ) -> Elector:
        """Run the election loop of `member` for `role` (the elector,
        docs/ELECTOR.md): it campaigns, renews a won lease in the
        background, stops the term before the lease runs out when renewals
        keep failing, and campaigns again after a loss. Returns at once (it
        never waits on the cluster) an Elector: use it as a context manager
        (leaving the block resigns a held term and ends the loop) and
        iterate it, with `for` or `async for`, for one Term per won term::

            with client.elect("controller", "node-1") as elector:
                for term in elector:
                    with term:
                        while term.active:
                            term.produce("commands", b"...")

        recampaign=False: the loop ends after the first lost term (the
        iteration ends). eligible=False: start withdrawn
        (Elector.set_eligible(True) turns the candidacy on). `metadata` and
        `member_metadata` go with every acquire, as in acquire()."""
        if not isinstance(recampaign, bool):
            raise TypeError("recampaign must be bool, not %s" % type(recampaign).__name__)
        if not isinstance(eligible, bool):
            raise TypeError("eligible must be bool, not %s" % type(eligible).__name__)
        r, m, role_s, member_s = self._names(role, member)
        tm = metadata_bytes(metadata, "metadata")
        mm = metadata_bytes(member_metadata, "member_metadata")
        ptr = self._ptr()
        flags = (0 if recampaign else _abi.ELECT_NO_RECAMPAIGN) | (0 if eligible else _abi.ELECT_INELIGIBLE)

        def start(q: int, out: Any, buf: Any) -> int:
            return _with_acquire_options(
                tm, mm, buf, lambda opts: lib.krabka_elector_new_opts(ptr, r, len(r), m, len(m), opts, flags, q, 0, out,
                                                                      buf, len(buf)))

        return Elector(self, ptr, role_s, member_s, flags, start)

    def elector_set(self, member: Name, *, recampaign: bool = True) -> ElectorSet:
        """One election loop of `member` per role over many roles, all on one
        iterator (docs/MANY-ROLES.md): add roles with ElectorSet.add (each
        campaigns at once), remove them with ElectorSet.remove, and iterate the set, with `for` or
        `async for`, for every role's RoleEvents::

            with client.elector_set("node-1") as s:
                for r in ("tenant-1", "tenant-2"):
                    s.add(r)
                for ev in s:
                    if ev.kind == TermEventKind.STARTED:
                        ev.leadership.produce("commands-" + ev.role, b"...")

        recampaign=False: a role's loop ends after its first lost term.
        Returns at once; never waits on the cluster. TypeError names an
        argument of the wrong type; the library's errors name a bad member."""
        if not isinstance(recampaign, bool):
            raise TypeError("recampaign must be bool, not %s" % type(recampaign).__name__)
        m = name_bytes(member, "member")
        member_s = validate_member(m)
        ptr = self._ptr()
        flags = 0 if recampaign else _abi.ELECT_NO_RECAMPAIGN

        def start(q: int, out: Any, buf: Any) -> int:
            return lib.krabka_elector_set_new(ptr, m, len(m), flags, q, 0, out, buf, len(buf))  # type: ignore[no-any-return]

        return ElectorSet(self, member_s, start)

    def join_group(self, group: Name, shards: int, member: Name, *, weight: int = 1,
                   eligible: bool = True) -> GroupMember:
        """Join `member` to the role group `group` of `shards` shards
        (docs/GROUPS.md): the group spreads the shards over its eligible
        members by weight, and this member campaigns for, holds, renews and
        hands over the shards it is given, each under a token of its own.
        Returns at once a GroupMember: use it as a context manager (leaving
        the block leaves the group, handing the shards over) and iterate it,
        with `for` or `async for`, for one GroupEvent per change::

            with client.join_group("dispatch", 16, "node-1") as m:
                for ev in m:
                    if ev.kind == GroupEventKind.ASSIGNED:
                        ev.leadership.produce("commands-%d" % ev.shard, b"...")

        Every member of a group names the same shard count (1 to
        MAX_SHARDS). TypeError names an argument of the wrong type; the
        library's InvalidArgumentError names a count out of range, a weight
        below 1 or an empty group, RoleTooLongError a group too long for
        its shards' role names."""
        return self._join(lib.krabka_group_join, group, shards, "shards", member, weight, eligible, False)

    def join_semaphore(self, name: Name, slots: int, member: Name, *, weight: int = 1,
                       eligible: bool = True) -> GroupMember:
        """Join `member` to the semaphore `name` of `slots` slots: a group
        whose members hold at most one slot each, so at most `slots`
        members hold one at a time, each under its own token. The events,
        errors and the GroupMember are join_group's (a slot is a shard)."""
        return self._join(lib.krabka_semaphore_join, name, slots, "slots", member, weight, eligible, True)

    def _join(self, fn: Any, group: Name, count: object, what: str, member: Name, weight: object,
              eligible: object, semaphore: bool) -> GroupMember:
        g = name_bytes(group, "semaphore name" if semaphore else "group")
        n = _check_count(count, what)
        m = name_bytes(member, "member")
        w = _check_weight(weight)
        flags = 0 if _check_bool(eligible, "eligible") else _abi.GROUP_INELIGIBLE
        member_s = validate_member(m)
        ptr = self._ptr()

        def start(q: int, out: Any, buf: Any) -> int:
            return fn(ptr, g, len(g), n, m, len(m), w, flags, q, 0, out, buf, len(buf))  # type: ignore[no-any-return]

        return GroupMember(self, g.decode("utf-8", "replace"), n, member_s, semaphore, start)

    def stats(self) -> Dict[str, Any]:
        """The client's statistics as a dict (schema: docs/STATISTICS.md):
        counters and gauges per client and per role ("roles"). Never blocks."""
        out = ctypes.c_void_p()
        n = ctypes.c_size_t()
        raise_for(lib.krabka_client_stats_json(self._ptr(), ctypes.byref(out), ctypes.byref(n)))
        try:
            return json.loads(ctypes.string_at(out, n.value))  # type: ignore[no-any-return]
        finally:
            lib.krabka_free(out)

    # -- asyncio ---------------------------------------------------------
    async def acquire_async(
        self,
        role: Name,
        member: Name,
        timeout: Timeout = None,
        *,
        metadata: Optional[Bytes] = None,
        member_metadata: Optional[Bytes] = None,
    ) -> Leadership:
        """acquire() as a coroutine: the library waits on its own threads
        and the call completes through the loop's queue fd, so any number
        of acquires can wait at once without a thread each. If the awaiting
        task is cancelled, the call goes on until it ends (bounded by
        `timeout`, or by close()); a leadership won after the cancellation
        is resigned and released. `metadata` and `member_metadata` as in
        acquire()."""
        start, role_s, member_s = self._acquire_start(glib.krabka_client_acquire_opts_async, role, member, timeout,
                                                      metadata, member_metadata)
        return await _calls.run_async(start, leadership_of(self, role_s, member_s), _dispose.event, release_leadership)

    async def try_acquire_async(
        self,
        role: Name,
        member: Name,
        timeout: Timeout = None,
        *,
        metadata: Optional[Bytes] = None,
        member_metadata: Optional[Bytes] = None,
    ) -> TryAcquireResult:
        """try_acquire() as a coroutine (a cancelled task's win is resigned
        and released)."""
        start, role_s, member_s = self._acquire_start(glib.krabka_client_try_acquire_opts_async, role, member, timeout,
                                                      metadata, member_metadata)
        return await _calls.run_async(start, try_result_of(self, role_s, member_s), _dispose.event, release_try_result)

    async def describe_async(self, role: Name, timeout: Timeout = None) -> Status:
        """describe() as a coroutine."""
        start, role_s = self._describe_start(role, timeout)
        return await _calls.run_async(start, _status_of(role_s), _dispose.event)

    async def close_async(self) -> None:
        """close() without blocking the loop: krabka_client_destroy blocks
        until the client's background work has stopped and has no
        asynchronous form, so it runs on the loop's default executor (the
        one call of the binding that does)."""
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await self.close_async()
