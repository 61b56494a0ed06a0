"""A won role: Leadership, and TryAcquireResult (what try_acquire answers).

The blocking calls (renew, produce, produce_many, set_metadata, resign)
run through the call runner (_calls): synchronously on the process queue,
as coroutines on the loop's queue. The reads (token, lease, state, ...)
are direct calls that never block.
"""

from __future__ import annotations

import ctypes
import datetime
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple, Union

from . import _abi, _calls, _dispose
from ._input import Input, Offset, offsets_array, topics_array
from ._args import INT32_MAX, Bytes, Headers, Name, Timeout, check_int, header_pairs, metadata_bytes, name_bytes, payload_bytes, timeout_ms
from ._errors import ErrorCode, KrabkaError, NotLeaderError, error_for, raise_for
from ._native import Handle, glib, lib
from ._pure import validate_member
from ._values import FencingToken, Lease, LeadershipState, ProduceResult, read_metadata

__all__ = ["Leadership", "TryAcquireResult", "Message", "MessageWithHeaders", "leadership_of", "try_result_of"]

#: A message of produce_many: (topic, value, key, partition) ...
Message = Tuple[str, Union[bytes, str, None], Union[bytes, str, None], Optional[int]]
#: ... or (topic, value, key, partition, headers).
MessageWithHeaders = Tuple[str, Union[bytes, str, None], Union[bytes, str, None], Optional[int], Headers]

_MESSAGE_SIZE = ctypes.sizeof(_abi.Message)


def _messages(messages: object, allow_empty: bool = False) -> "ctypes.Array[_abi.Message]":
    """The krabka_message_t array of produce_many's messages (with their
    krabka_header_t arrays). The C call copies everything before it
    returns, so the array only has to outlive the submit. Empty only with
    offsets (allow_empty)."""
    if not isinstance(messages, (list, tuple)) or not (messages or allow_empty):
        raise ValueError("messages must be a non-empty list of (topic, value, key, partition)")
    arr = (_abi.Message * len(messages))()
    keep: List[object] = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, tuple) or len(msg) not in (4, 5):
            raise TypeError("message %d must be a tuple (topic, value, key, partition[, headers])" % i)
        topic, value, key, partition = msg[:4]
        pairs = header_pairs(msg[4] if len(msg) == 5 else None, "message %d headers" % i)
        if not isinstance(topic, str):
            raise TypeError("topic must be str, not %s" % type(topic).__name__)
        if not topic or "\x00" in topic:
            raise ValueError("topic must be a non-empty str without NUL, got %r" % topic)
        t = topic.encode("utf-8")
        v = payload_bytes(value, "value")
        k = payload_bytes(key, "key")
        m = arr[i]
        m.size = _MESSAGE_SIZE
        m.topic = t
        m.partition = _abi.PARTITION_ANY if partition is None else check_int(partition, "partition", 0, INT32_MAX)
        m.key = k
        m.key_len = 0 if k is None else len(k)
        m.value = v
        m.value_len = 0 if v is None else len(v)
        if pairs:
            hdrs = (_abi.Header * len(pairs))()
            for j, (hk, hv) in enumerate(pairs):
                hdrs[j].key = hk
                hdrs[j].value = hv
                hdrs[j].value_len = len(hv)
            keep.append((pairs, hdrs))
            m.headers = hdrs
            m.header_count = len(pairs)
        keep.extend((t, v, k))
    arr._keep = keep  # type: ignore[attr-defined]  # the bytes the pointers point at
    return arr


def _results_of(n: int) -> "_calls.Read[List[ProduceResult]]":
    """The reader of a PRODUCE event of n messages: where each landed."""

    def read(ev: int) -> List[ProduceResult]:
        out = (_abi.ProduceResult * n)()
        count = ctypes.c_size_t()
        raise_for(glib.krabka_event_results(ev, out, n, ctypes.byref(count), None, 0))
        if count.value != n:
            raise KrabkaError(ErrorCode.INTERNAL, "a guarded write of %d messages reported %d results" % (n, count.value))
        return [ProduceResult(r.partition, r.offset) for r in out]

    return read


def _read_nothing(_ev: int) -> None:
    return None


def _read_confirmed(ev: int) -> bool:
    current = ctypes.c_int()
    buf = _calls.errbuf()
    raise_for(glib.krabka_event_confirmed(ev, ctypes.byref(current), buf, len(buf)), buf)
    return bool(current.value)


def _ms_to_datetime(ms: int) -> datetime.datetime:
    try:
        return datetime.datetime.fromtimestamp(ms / 1000.0, tz=datetime.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return datetime.datetime.max.replace(tzinfo=datetime.timezone.utc)


def _read_ended(ev: int) -> "tuple[LeadershipState, Optional[KrabkaError]]":
    st = ctypes.c_int()
    raise_for(glib.krabka_event_state(ev, ctypes.byref(st), None, 0))
    code = ctypes.c_int()
    buf = _calls.errbuf()
    raise_for(glib.krabka_event_error(ev, ctypes.byref(code), buf, len(buf)))
    return LeadershipState(st.value), (error_for(code.value, buf) if code.value else None)


class Leadership:
    """A won role. Obtain one from Client.acquire / Client.try_acquire.

    Use it as a context manager: on exit it resigns (if still active) and
    releases its resources::

        with client.acquire("controller", "node-1") as lead:
            lead.produce("commands", b"...")

    `close()` releases the resources without resigning (standbys take over at
    the lease deadline). Every method may be called from any thread.
    """

    def __init__(self, ptr: int, client: object, role: str, member: str) -> None:
        self._h = Handle(ptr, lib.krabka_leadership_destroy)
        self._client = client  # keeps the client (and its handle) alive
        self._role = role
        self._member = member
        self._ended: Optional[_calls.Shared] = None
        self._ended_lock = threading.Lock()

    def __repr__(self) -> str:
        try:
            tok = str(self.token)
            state = self.state.name
        except Exception:  # closed
            tok, state = "?", "CLOSED"
        return "<Leadership role=%r member=%r token=%s state=%s>" % (self._role, self._member, tok, state)

    def _ptr(self) -> int:
        p = self._h.get()
        if p is None:
            raise NotLeaderError(ErrorCode.NOT_LEADER, "this Leadership was closed")
        return p

    @property
    def role(self) -> str:
        return self._role

    @property
    def member(self) -> str:
        return self._member

    # -- reads (never block) ------------------------------------------------
    @property
    def token(self) -> FencingToken:
        """The fencing token this leadership holds. Never blocks. The minted
        token, or the one an own epoch recovery continued the leadership
        under (the next lease carries it); a timeout never changes it."""
        out = _abi.Token()
        raise_for(lib.krabka_leadership_token(self._ptr(), ctypes.byref(out)))
        return FencingToken._from_c(out)

    @property
    def lease(self) -> Lease:
        """The lease this leadership last wrote. Never blocks."""
        out = _abi.Lease()
        raise_for(lib.krabka_leadership_lease(self._ptr(), ctypes.byref(out)))
        return Lease._from_c(out)

    @property
    def metadata(self) -> Optional[bytes]:
        """The term's metadata as this leadership last wrote it (acquire's
        `metadata`, or the last set_metadata), or None. Never blocks."""
        ptr = self._ptr()
        return read_metadata(lambda b, size, n: lib.krabka_leadership_metadata(ptr, b, size, n))

    @property
    def state(self) -> LeadershipState:
        """ACTIVE, FENCED, EXPIRED, RESIGNED or CLOSED. Never blocks."""
        p = self._h.get()
        if p is None:
            return LeadershipState.CLOSED
        out = ctypes.c_int()
        raise_for(lib.krabka_leadership_state(p, ctypes.byref(out)))
        return LeadershipState(out.value)

    @property
    def active(self) -> bool:
        return self.state == LeadershipState.ACTIVE

    @property
    def renew_due(self) -> bool:
        """True when the renew interval has passed since the lease was granted
        (or the deadline is near): call renew(). A property because it is a
        cheap, non-blocking read of the leadership's clock."""
        out = ctypes.c_int()
        raise_for(lib.krabka_leadership_renew_due(self._ptr(), ctypes.byref(out)))
        return bool(out.value)

    @property
    def end_error(self) -> Optional[KrabkaError]:
        """None while ACTIVE; afterwards the error its calls now raise
        (FencedError, LeaseExpiredError, NotLeaderError or ClosedError), whose
        reason says why it ended. Never blocks."""
        p = self._h.get()
        if p is None:
            return NotLeaderError(ErrorCode.NOT_LEADER, "this Leadership was closed")
        code = ctypes.c_int()
        buf = _calls.errbuf()
        raise_for(lib.krabka_leadership_end_error(p, ctypes.byref(code), buf, len(buf)))
        return error_for(code.value, buf) if code.value else None

    def event_fd(self) -> int:
        """A file descriptor (eventfd) that becomes readable when the
        leadership leaves ACTIVE, for selectors / poll loops. It belongs to
        the leadership (closed by close()); never close it yourself. Reading
        8 bytes resets it."""
        fd = ctypes.c_int()
        raise_for(lib.krabka_leadership_event_fd(self._ptr(), ctypes.byref(fd)))
        return fd.value

    # -- the blocking calls: one start function each --------------------------
    def _renew_start(self, timeout: Timeout) -> _calls.Start:
        ms = timeout_ms(timeout)
        ptr = self._ptr()
        return lambda q, tag, buf: glib.krabka_leadership_renew_async(ptr, ms, q, tag, buf, len(buf))

    def _confirm_start(self, timeout: Timeout) -> _calls.Start:
        ms = timeout_ms(timeout)
        ptr = self._ptr()
        return lambda q, tag, buf: glib.krabka_leadership_confirm_async(ptr, ms, q, tag, buf, len(buf))

    def _produce_start(
        self, messages: object, timeout: Timeout, offsets: "Optional[Sequence[Offset]]" = None
    ) -> "Tuple[_calls.Start, _calls.Read[List[ProduceResult]]]":
        offs = offsets_array(offsets)
        arr = _messages(messages, allow_empty=offs is not None)
        ms = timeout_ms(timeout)
        ptr = self._ptr()
        n = len(arr)

        def start(q: int, tag: int, buf: Any) -> int:
            if offs is None:
                return glib.krabka_leadership_produce_async(ptr, arr, n, ms, q, tag, buf, len(buf))  # type: ignore[no-any-return]
            return glib.krabka_leadership_produce_offsets_async(ptr, offs, len(offs), arr, n, ms, q, tag, buf, len(buf))  # type: ignore[no-any-return]

        return start, _results_of(n)

    def _consume_start(self, topics: "Tuple[str, ...]", timeout: Timeout) -> _calls.Start:
        arr = topics_array(topics)
        ms = timeout_ms(timeout)
        ptr = self._ptr()
        return lambda q, tag, buf: glib.krabka_leadership_consume_async(ptr, arr, len(arr), ms, q, tag, buf, len(buf))

    def _read_input(self, ev: int) -> Input:
        return Input(_calls.take(ev, glib.krabka_event_take_input, "krabka_leadership_consume_async"), self)

    def _set_metadata_start(self, data: Optional[Bytes], timeout: Timeout) -> _calls.Start:
        b = metadata_bytes(data, "data")
        ms = timeout_ms(timeout)
        ptr = self._ptr()
        n = 0 if b is None else len(b)
        return lambda q, tag, buf: glib.krabka_leadership_set_metadata_async(ptr, b, n, ms, q, tag, buf, len(buf))

    def _resign_start(self, timeout: Timeout, successor: Optional[Name]) -> _calls.Start:
        succ = None
        if successor is not None:
            succ = name_bytes(successor, "successor")
            validate_member(succ)
        ms = timeout_ms(timeout)
        ptr = self._ptr()
        n = 0 if succ is None else len(succ)
        return lambda q, tag, buf: glib.krabka_leadership_resign_async(ptr, succ, n, ms, q, tag, buf, len(buf))

    def renew(self, timeout: Timeout = None) -> None:
        """Write a fresh lease under the same token. Blocks up to `timeout`
        seconds (default: request.timeout.ms). A renewal started before the
        deadline never runs past it; a late one is still sent and the broker
        decides.

        Raises FencedError (the cluster superseded this leadership: stop at
        once) or LeaseExpiredError (a renewal failed and the deadline passed
        before one succeeded). Other errors leave the leadership active.

        Ctrl-C raises KeyboardInterrupt at once (the renewal the library
        already sends goes on to its end)."""
        _calls.run(self._renew_start(timeout), _read_nothing, _dispose.event)

    def confirm(self, timeout: Timeout = None) -> bool:
        """The check before a leader-only read: one request
        (DescribeTransactions) asks the transaction coordinator whether this
        leadership's token is still the role's current one. True: nobody
        minted the role since. False: another member (or a fence) minted a
        newer epoch and the broker refuses this leadership's writes, so do
        not serve the read. False does not end the leadership (the broker's
        refusal of its next write does). Waits for the renewal or write in
        flight on this leadership first. Blocks for one round trip, up to
        `timeout` seconds (default: request.timeout.ms).

        Raises the error the leadership ended with (FencedError,
        LeaseExpiredError, NotLeaderError, ClosedError) once it ended;
        KrabkaTimeoutError and transport errors leave it as it was."""
        return _calls.run(self._confirm_start(timeout), _read_confirmed, _dispose.event)

    def produce(
        self,
        topic: str,
        value: Union[bytes, str, None],
        key: Union[bytes, str, None] = None,
        partition: Optional[int] = None,
        timeout: Timeout = None,
        headers: Headers = None,
        offsets: "Optional[Sequence[Offset]]" = None,
    ) -> ProduceResult:
        """The guarded write: one message in one transaction of the role's
        transactional producer, so the broker rejects it if this leadership
        was superseded (FencedError). Returns (partition, offset) once the
        message is durable (acks=all). `partition` None lets Kafka's key
        hashing choose. Past the lease deadline the write is still sent (the
        broker decides) unless a renewal is failing, in which case the
        leadership has ended (LeaseExpiredError). Blocks up to `timeout`
        seconds (default request.timeout.ms); concurrent calls (threads or
        tasks) are committed together by the library (group commit).

        `headers`: record headers, a dict of str names to bytes values or a
        sequence of (str, bytes) pairs (kept in order; a name may repeat).
        Names starting with "krabka." are reserved (InvalidArgumentError).
        With krabka.produce.token.header (default true) every guarded write
        also carries krabka.token = "<producer id>:<epoch>" (see Verifier).
        Ctrl-C raises KeyboardInterrupt at once; the write already sent may
        still land.

        `offsets` (keyword): the input positions this write consumed (a
        list of Offset, e.g. Input.position()): they commit for the role's
        pipeline group in the same transaction, or neither does; the broker
        refuses a deposed leader's offsets with its write (FencedError).
        An offset for a partition no Input of this leadership read, or one
        that goes backwards, is InvalidArgumentError before anything is
        written; TypeError names a wrongly typed entry."""
        return self.produce_many([(topic, value, key, partition, headers)], timeout=timeout, offsets=offsets)[0]

    def produce_many(
        self,
        messages: "Sequence[Union[Message, MessageWithHeaders]]",
        timeout: Timeout = None,
        offsets: "Optional[Sequence[Offset]]" = None,
    ) -> "list[ProduceResult]":
        """Several messages (topic, value, key, partition) or (topic, value,
        key, partition, headers) in ONE transaction: all are written or none.
        `headers` as in produce(), per message. Returns one (partition,
        offset) per message. `offsets` as in produce() (with offsets,
        `messages` may be empty: the offsets alone are committed)."""
        start, read = self._produce_start(messages, timeout, offsets)
        return _calls.run(start, read, _dispose.event)

    def consume(self, *topics: str, timeout: Timeout = None) -> Input:
        """Start reading `topics` (every partition) read_committed from the
        offsets committed for the role's pipeline group (where the last
        leader's guarded writes with offsets left off; the earliest offset
        where none was committed). Returns an Input (poll, iterate,
        position; a context manager). Blocks up to `timeout` seconds while
        it fetches the committed offsets. Raises TypeError for a topic that
        is not str, InvalidArgumentError for an empty, over-long or invalid
        name, UnknownTopicOrPartitionError for a topic that does not exist,
        and the leadership's end once it ended."""
        return _calls.run(self._consume_start(topics, timeout), self._read_input, _dispose.event)

    async def consume_async(self, *topics: str, timeout: Timeout = None) -> Input:
        """consume() as a coroutine."""
        return await _calls.run_async(self._consume_start(topics, timeout), self._read_input, _dispose.event)

    def set_metadata(self, data: Optional[Bytes], timeout: Timeout = None) -> None:
        """Change the term's metadata (None: none from now on): a renewal
        whose lease record carries the new value, so the lease and its
        metadata change in one record and no reader sees it with another
        term's lease. Watchers get it as a LEASE_RENEWED event even without
        renewals=True. Raises TypeError unless `data` is bytes or None,
        InvalidArgumentError over MAX_METADATA_BYTES (4096) before anything is
        written, and otherwise what renew() raises. Blocks up to `timeout`
        seconds (default request.timeout.ms)."""
        _calls.run(self._set_metadata_start(data, timeout), _read_nothing, _dispose.event)

    def resign(self, timeout: Timeout = None, *, successor: Optional[Name] = None) -> None:
        """Give the role up and step aside: an expired lease and a tombstone
        of this member's registration, in one transaction under this token,
        so the first standby challenges at once. A courtesy, not a fence:
        stop guarded writes first. The leadership is RESIGNED afterwards even
        if the write failed (the error is raised). Blocks up to `timeout`
        seconds; Ctrl-C raises KeyboardInterrupt at once (the resign goes on).

        `successor` (keyword only; str or bytes, a member id) hands the role
        to that member (header krabka.successor on the expired lease): if it
        is registered it challenges at once, and every other standby waits
        one krabka.challenge.stagger.ms longer than its rank alone would make
        it; a member that is not registered is ignored (the first standby
        takes over as after a plain resign). The handoff is a preference,
        not a promise (docs/PROTOCOL.md 11.3): a member of another
        implementation (registered without krabka.rejoin) ignores the header
        and challenges at its own rank, so when `successor` is one, or one
        ranks ahead of it, another member may take the role (one mint wins:
        never two holders). Watch the role to learn who took over."""
        _calls.run(self._resign_start(timeout, successor), _read_nothing, _dispose.event)

    # -- the end --------------------------------------------------------------
    def _end(self) -> _calls.Shared:
        """The one krabka_leadership_ended_async every waiter shares."""
        with self._ended_lock:
            if self._ended is None:
                ptr = self._ptr()
                self._ended = _calls.Shared(
                    lambda q, tag, _buf: glib.krabka_leadership_ended_async(ptr, q, tag),
                    _read_ended,
                )
            return self._ended

    def wait_ended(self, timeout: Timeout = None) -> LeadershipState:
        """Block until the leadership is no longer ACTIVE (fenced, expired,
        resigned or closed) and return the final state; ACTIVE when
        `timeout` seconds passed first (None: no limit). Interruptible
        (Ctrl-C). Every wait shares one krabka_leadership_ended_async."""
        if self._h.get() is None:
            return LeadershipState.CLOSED
        seconds = None if timeout is None else timeout_ms(timeout) / 1000.0
        done, value = self._end().wait(seconds)
        return value[0] if done else LeadershipState.ACTIVE

    async def ended(self) -> LeadershipState:
        """Wait, without a thread of its own, until the leadership is no
        longer ACTIVE; returns the final state (`end_error` says why). Any
        number of waiters, on any loops, share one
        krabka_leadership_ended_async."""
        if self._h.get() is None:
            return LeadershipState.CLOSED
        value = await self._end().wait_async()
        return value[0]  # type: ignore[no-any-return]

    def close(self) -> None:
        """Release the leadership's resources without resigning (standbys
        take over at the lease deadline). Idempotent."""
        self._h.release()

    def __enter__(self) -> "Leadership":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if self._h.get() is not None and self.state == LeadershipState.ACTIVE:
                try:
                    self.resign()
                except KrabkaError:
                    if exc_type is None:
                        raise
        finally:
            self.close()

    def __del__(self) -> None:
        try:
            self._h.release()
        except Exception:
            pass

    # -- asyncio ----------------------------------------------------------------
    async def renew_async(self, timeout: Timeout = None) -> None:
        """renew() as a coroutine, completed through the loop's queue."""
        await _calls.run_async(self._renew_start(timeout), _read_nothing, _dispose.event)

    async def confirm_async(self, timeout: Timeout = None) -> bool:
        """confirm() as a coroutine."""
        return await _calls.run_async(self._confirm_start(timeout), _read_confirmed, _dispose.event)

    async def produce_async(
        self,
        topic: str,
        value: Union[bytes, str, None],
        key: Union[bytes, str, None] = None,
        partition: Optional[int] = None,
        timeout: Timeout = None,
        headers: Headers = None,
        offsets: "Optional[Sequence[Offset]]" = None,
    ) -> ProduceResult:
        """produce() as a coroutine, completed through the loop's queue: any
        number of concurrent awaits are in flight together (no thread each)
        and the library commits them in one transaction (group commit;
        their `offsets` merge per partition, the highest wins)."""
        start, read = self._produce_start([(topic, value, key, partition, headers)], timeout, offsets)
        return (await _calls.run_async(start, read, _dispose.event))[0]

    async def produce_many_async(
        self,
        messages: "Sequence[Union[Message, MessageWithHeaders]]",
        timeout: Timeout = None,
        offsets: "Optional[Sequence[Offset]]" = None,
    ) -> "list[ProduceResult]":
        """produce_many() as a coroutine."""
        start, read = self._produce_start(messages, timeout, offsets)
        return await _calls.run_async(start, read, _dispose.event)

    async def set_metadata_async(self, data: Optional[Bytes], timeout: Timeout = None) -> None:
        """set_metadata() as a coroutine."""
        await _calls.run_async(self._set_metadata_start(data, timeout), _read_nothing, _dispose.event)

    async def resign_async(self, timeout: Timeout = None, *, successor: Optional[Name] = None) -> None:
        """resign() as a coroutine."""
        await _calls.run_async(self._resign_start(timeout, successor), _read_nothing, _dispose.event)

    async def __aenter__(self) -> "Leadership":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if self._h.get() is not None and self.state == LeadershipState.ACTIVE:
                try:
                    await self.resign_async()
                except KrabkaError:
                    if exc_type is None:
                        raise
        finally:
            self.close()


@dataclass(frozen=True)
class TryAcquireResult:
    """The answer of Client.try_acquire.

    leadership: the won Leadership, or None when the role was not won.
    retry_at: when not won, the instant (UTC datetime) at which the answer
        can change; None when won. retry_at_ms is the same in epoch ms.

    Truthy when the role was won, and unpacks as (leadership, retry_at)::

        lead, retry_at = client.try_acquire("controller", "node-1")
        if lead is None:
            sleep_until(retry_at)
    """

    leadership: Optional[Leadership]
    retry_at_ms: Optional[int]

    @property
    def won(self) -> bool:
        return self.leadership is not None

    @property
    def retry_at(self) -> Optional[datetime.datetime]:
        return None if self.retry_at_ms is None else _ms_to_datetime(self.retry_at_ms)

    def retry_in(self) -> float:
        """Seconds from now until retry_at (0 when won or already due)."""
        if self.retry_at_ms is None:
            return 0.0
        now_ms = datetime.datetime.now(tz=datetime.timezone.utc).timestamp() * 1000.0
        return max(0.0, (self.retry_at_ms - now_ms) / 1000.0)

    def __bool__(self) -> bool:
        return self.won

    def __iter__(self) -> Iterator[Any]:
        yield self.leadership
        yield self.retry_at


def _take_leadership(ev: int) -> Optional[int]:
    out = ctypes.c_void_p()
    buf = _calls.errbuf()
    raise_for(glib.krabka_event_take_leadership(ev, ctypes.byref(out), buf, len(buf)), buf)
    return out.value


def _wrap(ptr: int, client: object, role: str, member: str) -> Leadership:
    try:
        return Leadership(ptr, client, role, member)
    except BaseException:
        _dispose.leadership(ptr)
        raise


def leadership_of(client: object, role: str, member: str) -> Callable[[int], Leadership]:
    """The reader of an ACQUIRE event: the Leadership it carries."""

    def read(ev: int) -> Leadership:
        ptr = _take_leadership(ev)
        if not ptr:
            raise KrabkaError(ErrorCode.INTERNAL, "krabka_client_acquire_async succeeded without a leadership")
        return _wrap(ptr, client, role, member)

    return read


def try_result_of(client: object, role: str, member: str) -> Callable[[int], TryAcquireResult]:
    """The reader of a TRY_ACQUIRE event: won, or when to retry."""

    def read(ev: int) -> TryAcquireResult:
        ptr = _take_leadership(ev)
        if ptr:
            return TryAcquireResult(_wrap(ptr, client, role, member), None)
        retry = ctypes.c_int64()
        raise_for(glib.krabka_event_retry_at(ev, ctypes.byref(retry), None, 0))
        return TryAcquireResult(None, retry.value)

    return read


def release_try_result(res: TryAcquireResult) -> None:
    """Disposes of a try_acquire's value nobody will use."""
    if res.leadership is not None:
        release_leadership(res.leadership)


def release_leadership(lead: Leadership) -> None:
    """Disposes of a Leadership value nobody will use: resigned, then
    destroyed (_dispose)."""
    ptr = lead._h.detach()
    if ptr is not None:
        _dispose.leadership(ptr)
