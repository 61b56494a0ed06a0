"""Client, Leadership and describe results over the C handles."""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import datetime
import enum
import json
import queue
import select
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple, TypeVar, Union

from . import _events, _native
from ._args import Bytes, Headers, Name, Timeout, check_int, header_pairs, metadata_bytes, name_bytes, payload_bytes, timeout_ms
from ._errors import ClosedError, ConfigError, ErrorCode, KrabkaError, NotLeaderError, error_for, raise_for
from ._native import (
    INT32_MAX,
    MAX_METADATA_BYTES,
    NAME_BUF,
    HeaderStruct,
    PARTITION_ANY,
    LeaseStruct,
    MessageStruct,
    ProduceResultStruct,
    RosterEntryStruct,
    Token,
    lib,
    read_name,
)
from ._pure import FencingToken, Lease, validate_member, validate_role

__all__ = [
    "Client",
    "Leadership",
    "LeadershipState",
    "ProduceResult",
    "TryAcquireResult",
    "Status",
    "RosterEntry",
]

if TYPE_CHECKING:
    from ._watch import Watch

T = TypeVar("T")
_check = _native.check_fork


def _errbuf() -> ctypes.Array[ctypes.c_char]:
    return ctypes.create_string_buffer(_native.ERRSTR_SIZE)


def _config_text(key: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int)):
        return str(value)
    raise TypeError(
        "configuration value of %r must be str, int or bool, not %s" % (key, type(value).__name__)
    )


def _read_metadata(fn: Callable[[Any, int, Any], int]) -> Optional[bytes]:
    """Metadata through one of the C copy-out calls (fn(buf, size, &len)):
    None when there is none (length 0; empty metadata is none)."""
    size = MAX_METADATA_BYTES
    while True:
        buf = ctypes.create_string_buffer(size)
        n = ctypes.c_size_t()
        code = fn(buf, size, ctypes.byref(n))
        if code == ErrorCode.INVALID_ARG and n.value > size:
            size = n.value  # never with this library (4096 always suffices)
            continue
        raise_for(code)
        return buf.raw[: n.value] if n.value else None


def _ms_to_datetime(ms: int) -> datetime.datetime:
    try:
        return datetime.datetime.fromtimestamp(ms / 1000.0, tz=datetime.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return datetime.datetime.max.replace(tzinfo=datetime.timezone.utc)


# Guarded writes awaited concurrently are committed together by the library
# (group commit), but only as many can be in flight as there are threads
# blocked in them: the default executor has min(32, cores + 4) threads, which
# would cap a group at 6 on a 2-core machine. produce_async therefore runs on
# its own pool; its threads are started only when that many calls are in
# flight at once and idle ones are reused.
_WRITE_POOL_SIZE = 256
_write_pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
_write_pool_lock = threading.Lock()


def _writes_executor() -> concurrent.futures.ThreadPoolExecutor:
    global _write_pool
    with _write_pool_lock:
        if _write_pool is None:
            _write_pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=_WRITE_POOL_SIZE, thread_name_prefix="krabka-produce"
            )
        return _write_pool


async def _in_thread(
    fn: Callable[[], T],
    on_cancel_result: Optional[Callable[[T], None]] = None,
    executor: Optional[concurrent.futures.Executor] = None,
) -> T:
    """Run a blocking call on the default executor, or on `executor`
    (ctypes releases the GIL while the C call blocks). If the awaiting task
    is cancelled, the call still runs to its end in its thread;
    `on_cancel_result` then receives its result so nothing leaks (an
    acquired leadership is released)."""
    loop = asyncio.get_running_loop()
    fut = loop.run_in_executor(executor, fn)
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        if on_cancel_result is not None:

            def _done(f: "asyncio.Future[T]") -> None:
                if not f.cancelled() and f.exception() is None:
                    on_cancel_result(f.result())

            fut.add_done_callback(_done)
        raise


# --------------------------------------------------------------------------
# Ctrl-C on the blocking calls
# --------------------------------------------------------------------------
# A C call that blocks keeps the main thread inside ctypes, where Python
# cannot run its SIGINT handler until the call returns. Called on the main
# thread, the blocking calls therefore run on a daemon worker while the main
# thread waits in 0.1 s slices (interruptible): Ctrl-C raises
# KeyboardInterrupt within about 100 ms. The C call goes on to its end on
# the worker (bounded by its timeout or close()); its late result is handed
# to a disposer (a leadership won meanwhile is resigned and released).
# Calls from other threads (which never see KeyboardInterrupt) run directly.


class _Job:
    __slots__ = ("fn", "on_late", "done", "lock", "result", "exc", "abandoned")

    def __init__(self, fn: Callable[[], Any], on_late: Optional[Callable[[Any], None]]) -> None:
        self.fn = fn
        self.on_late = on_late
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.result: Any = None
        self.exc: Optional[BaseException] = None
        self.abandoned = False

    def execute(self) -> None:
        try:
            r, e = self.fn(), None
        except BaseException as x:  # handed to the waiting thread
            r, e = None, x
        with self.lock:
            self.result, self.exc = r, e
            abandoned = self.abandoned
            self.done.set()
        if abandoned:
            self._dispose()

    def _dispose(self) -> None:
        if self.exc is None and self.on_late is not None:
            try:
                self.on_late(self.result)
            except Exception:
                pass

    def wait(self) -> Any:
        try:
            while not self.done.wait(0.1):
                pass
        except BaseException:
            with self.lock:
                finished = self.done.is_set()
                self.abandoned = not finished
            if finished:
                self._dispose()
            raise
        if self.exc is not None:
            raise self.exc
        return self.result


class _Workers:
    """Daemon threads for the main thread's blocking calls, started on
    demand and reused (they never delay the interpreter's exit)."""

    def __init__(self) -> None:
        self._jobs: "queue.SimpleQueue[_Job]" = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            job.execute()
            del job
            with self._lock:
                self._idle += 1

    def run(self, fn: Callable[[], T], on_late: Optional[Callable[[T], None]] = None) -> T:
        if threading.current_thread() is not threading.main_thread():
            return fn()
        job = _Job(fn, on_late)
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
                start = False
            else:
                start = True
        if start:
            threading.Thread(target=self._loop, name="krabka-call", daemon=True).start()
        self._jobs.put(job)
        return job.wait()  # type: ignore[no-any-return]


_workers = _Workers()
_interruptible = _workers.run


# --------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------

#: A message of produce_many: (topic, value, key, partition) ...
Message = Tuple[str, Union[bytes, str, None], Union[bytes, str, None], Optional[int]]
#: ... or (topic, value, key, partition, headers).
MessageWithHeaders = Tuple[str, Union[bytes, str, None], Union[bytes, str, None], Optional[int], Headers]


class LeadershipState(enum.IntEnum):
    """krabka_leadership_state_t."""

    ACTIVE = 0
    FENCED = 1
    EXPIRED = 2
    RESIGNED = 3
    CLOSED = 4


class ProduceResult(NamedTuple):
    """Where a guarded write landed; unpacks as (partition, offset)."""

    partition: int
    offset: int


@dataclass(frozen=True)
class RosterEntry:
    """One member of the succession order (rank 0 = lease holder or first
    standby)."""

    member: str
    offset: int
    registered_at: int
    rank: int
    #: the member's own metadata (the registration's krabka.meta), or None.
    #: Always None in a WatchEvent's roster (the C ABI reports it only in
    #: describe results).
    metadata: Optional[bytes] = None


@dataclass(frozen=True)
class Status:
    """The third-party check of a role (Client.describe).

    holder: the member named by the last lease, or None.
    token: the coordinator's current token for the role (NO_EPOCH if nobody
        ever took it).
    current: a lease exists and its token is `token`.
    lease: the last lease, or None.
    roster: registered members in succession order, with ranks.
    skipped: undecodable records the read skipped.
    partition: the role's partition of the coordination topic.
    removed: registrations removed by a tombstone (members that resigned,
        were pruned by a winner or left); they are not in `roster`.
    metadata: the metadata of the term the last lease belongs to
        (krabka.meta, set by acquire(metadata=...) or set_metadata), or None.
    """

    role: str
    holder: Optional[str]
    token: FencingToken
    current: bool
    lease: Optional[Lease]
    roster: Tuple[RosterEntry, ...]
    skipped: int
    partition: int
    removed: int = 0
    metadata: Optional[bytes] = None


# --------------------------------------------------------------------------
# Handles
# --------------------------------------------------------------------------


class _Handle:
    """An owned C handle that is destroyed exactly once."""

    __slots__ = ("_ptr", "_lock", "_destroy")

    def __init__(self, ptr: int, destroy: Callable[[int], int]) -> None:
        self._ptr: Optional[int] = ptr
        self._lock = threading.Lock()
        self._destroy = destroy

    def get(self) -> Optional[int]:
        return self._ptr

    def release(self) -> bool:
        with self._lock:
            ptr, self._ptr = self._ptr, None
        if ptr is None:
            return False
        if not _native.in_forked_child():
            self._destroy(ptr)
        return True


class Leadership:
    """A won role. Obtain one from Client.acquire / Client.try_acquire.

    Use it as a context manager: on exit it resigns (if still active) and
    releases its resources::

        with client.acquire("controller", "node-1") as lead:
            lead.produce("commands", b"...")

    `close()` releases the resources without resigning (standbys take over at
    the lease deadline). Every method may be called from any thread.
    """

    def __init__(self, ptr: int, client: "Client", role: str, member: str) -> None:
        self._h = _Handle(ptr, lib.krabka_leadership_destroy)
        self._client = client
        self._role = role
        self._member = member

    def __repr__(self) -> str:
        try:
            tok = str(self.token)
            state = self.state.name
        except Exception:  # closed
            tok, state = "?", "CLOSED"
        return "<Leadership role=%r member=%r token=%s state=%s>" % (self._role, self._member, tok, state)

    def _ptr(self) -> int:
        _check()
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

    @property
    def token(self) -> FencingToken:
        """The fencing token this leadership holds. Never blocks. The minted
        token, or the one an own epoch recovery continued the leadership
        under (the next lease carries it); a timeout never changes it."""
        out = Token()
        raise_for(lib.krabka_leadership_token(self._ptr(), ctypes.byref(out)))
        return FencingToken._from_c(out)

    @property
    def lease(self) -> Lease:
        """The lease this leadership last wrote. Never blocks."""
        out = LeaseStruct()
        raise_for(lib.krabka_leadership_lease(self._ptr(), ctypes.byref(out)))
        return Lease._from_c(out)

    @property
    def metadata(self) -> Optional[bytes]:
        """The term's metadata as this leadership last wrote it (acquire's
        `metadata`, or the last set_metadata), or None. Never blocks."""
        ptr = self._ptr()
        _native.require("krabka_leadership_metadata")
        return _read_metadata(lambda b, size, n: lib.krabka_leadership_metadata(ptr, b, size, n))

    def set_metadata(self, data: Optional[Bytes], timeout: Timeout = None) -> None:
        """Change the term's metadata (None: none from now on): a renewal
        whose lease record carries the new value, so the lease and its
        metadata change in one record and no reader sees it with another
        term's lease. Watchers get it as a LEASE_RENEWED event even without
        renewals=True. Raises TypeError unless `data` is bytes or None,
        InvalidArgumentError over MAX_METADATA_BYTES (4096) before anything is
        written, and otherwise what renew() raises. Blocks up to `timeout`
        seconds (default request.timeout.ms); Ctrl-C raises KeyboardInterrupt
        within about 100 ms (the renewal already sent goes on)."""
        b = metadata_bytes(data, "data")
        ms = timeout_ms(timeout)
        buf = _errbuf()
        ptr = self._ptr()
        _native.require("krabka_leadership_set_metadata")
        n = 0 if b is None else len(b)
        raise_for(
            _interruptible(lambda: lib.krabka_leadership_set_metadata(ptr, b, n, ms, buf, len(buf))), buf
        )

    @property
    def state(self) -> LeadershipState:
        """ACTIVE, FENCED, EXPIRED, RESIGNED or CLOSED. Never blocks."""
        if self._h.get() is None:
            _check()
            return LeadershipState.CLOSED
        out = ctypes.c_int()
        raise_for(lib.krabka_leadership_state(self._ptr(), ctypes.byref(out)))
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

    def renew(self, timeout: Timeout = None) -> None:
        """Write a fresh lease under the same token. Blocks up to `timeout`
        seconds (default: request.timeout.ms). A renewal started before the
        deadline never runs past it; a late one is still sent and the broker
        decides.

        Raises FencedError (the cluster superseded this leadership: stop at
        once) or LeaseExpiredError (a renewal failed and the deadline passed
        before one succeeded). Other errors leave the leadership active.

        Ctrl-C raises KeyboardInterrupt within about 100 ms (the renewal
        the library already sends goes on to its end)."""
        ms = timeout_ms(timeout)
        buf = _errbuf()
        ptr = self._ptr()
        raise_for(_interruptible(lambda: lib.krabka_leadership_renew(ptr, ms, buf, len(buf))), buf)

    def produce(
        self,
        topic: str,
        value: Union[bytes, str, None],
        key: Union[bytes, str, None] = None,
        partition: Optional[int] = None,
        timeout: Timeout = None,
        headers: Headers = None,
    ) -> ProduceResult:
        """The guarded write: one message in one transaction of the role's
        transactional producer, so the broker rejects it if this leadership
        was superseded (FencedError). Returns (partition, offset) once the
        message is durable (acks=all). `partition` None lets Kafka's key
        hashing choose. Past the lease deadline the write is still sent (the
        broker decides) unless a renewal is failing, in which case the
        leadership has ended (LeaseExpiredError). Blocks up to `timeout`
        seconds (default request.timeout.ms).

        `headers`: record headers, a dict of str names to bytes values or a
        sequence of (str, bytes) pairs (kept in order; a name may repeat).
        Names starting with "krabka." are reserved (InvalidArgumentError).
        With krabka.produce.token.header (default true) every guarded write
        also carries krabka.token = "<producer id>:<epoch>" (see Verifier)."""
        return self.produce_many([(topic, value, key, partition, headers)], timeout=timeout)[0]

    def produce_many(
        self,
        messages: "Sequence[Union[Message, MessageWithHeaders]]",
        timeout: Timeout = None,
    ) -> "list[ProduceResult]":
        """Several messages (topic, value, key, partition) or (topic, value,
        key, partition, headers) in ONE transaction: all are written or none.
        `headers` as in produce(), per message. Returns one (partition,
        offset) per message."""
        if not isinstance(messages, (list, tuple)) or not messages:
            raise ValueError("messages must be a non-empty list of (topic, value, key, partition)")
        arr = (MessageStruct * len(messages))()
        keep: list[object] = []
        per_message: List[List[Tuple[bytes, bytes]]] = []
        for i, msg in enumerate(messages):
            if not isinstance(msg, tuple) or len(msg) not in (4, 5):
                raise TypeError("message %d must be a tuple (topic, value, key, partition[, headers])" % i)
            topic, value, key, partition = msg[:4]
            per_message.append(header_pairs(msg[4] if len(msg) == 5 else None, "message %d headers" % i))
            if not isinstance(topic, str):
                raise TypeError("topic must be str, not %s" % type(topic).__name__)
            if not topic or "\x00" in topic:
                raise ValueError("topic must be a non-empty str without NUL, got %r" % topic)
            t = topic.encode("utf-8")
            v = payload_bytes(value, "value")
            k = payload_bytes(key, "key")
            p = PARTITION_ANY if partition is None else check_int(partition, "partition", 0, INT32_MAX)
            keep.extend((t, v, k))
            arr[i].topic = t
            arr[i].partition = p
            arr[i].key = k
            arr[i].key_len = 0 if k is None else len(k)
            arr[i].value = v
            arr[i].value_len = 0 if v is None else len(v)
        ms = timeout_ms(timeout)
        results = (ProduceResultStruct * len(messages))()
        buf = _errbuf()
        ptr = self._ptr()
        n = len(messages)
        total = sum(len(h) for h in per_message)
        if total:
            _native.require("krabka_leadership_produce_with_headers")
            hdrs = (HeaderStruct * total)()
            counts = (ctypes.c_size_t * n)()
            j = 0
            for i, pairs in enumerate(per_message):
                counts[i] = len(pairs)
                for hk, hv in pairs:
                    keep.extend((hk, hv))
                    hdrs[j].key = hk
                    hdrs[j].value = hv
                    hdrs[j].value_len = len(hv)
                    j += 1

        # Ctrl-C raises KeyboardInterrupt within about 100 ms; the write the
        # library already sends goes on to its end (it may still land).
        # The worker's call keeps the message bytes (keep) alive to its end.
        def call() -> int:
            len(keep)  # referenced: the closure holds the bytes
            if total:
                return lib.krabka_leadership_produce_with_headers(  # type: ignore[no-any-return]
                    ptr, arr, n, hdrs, counts, ms, results, buf, len(buf)
                )
            return lib.krabka_leadership_produce(ptr, arr, n, ms, results, buf, len(buf))  # type: ignore[no-any-return]

        code = _interruptible(call)
        raise_for(code, buf)
        return [ProduceResult(r.partition, r.offset) for r in results]

    def resign(self, timeout: Timeout = None, *, successor: Optional[Name] = None) -> None:
        """Give the role up and step aside: an expired lease and a tombstone
        of this member's registration, in one transaction under this token,
        so the first standby challenges at once. A courtesy, not a fence: stop guarded
        writes first. The leadership is RESIGNED afterwards even if the write
        failed (the error is raised). Blocks up to `timeout` seconds; Ctrl-C
        raises KeyboardInterrupt within about 100 ms (the resign goes on).

        `successor` (keyword only; str or bytes, a member id) hands the role
        to that member (header krabka.successor on the expired lease): if it
        is registered it challenges at once, and every other standby waits
        one krabka.challenge.stagger.ms longer than its rank alone would make
        it; a member that is not registered is ignored (the first standby
        takes over as after a plain resign)."""
        succ = None
        if successor is not None:
            succ = name_bytes(successor, "successor")
            validate_member(succ)
        ms = timeout_ms(timeout)
        buf = _errbuf()
        ptr = self._ptr()
        if succ is None:
            raise_for(_interruptible(lambda: lib.krabka_leadership_resign(ptr, ms, buf, len(buf))), buf)
            return
        _native.require("krabka_leadership_resign_to")
        s = succ
        raise_for(
            _interruptible(lambda: lib.krabka_leadership_resign_to(ptr, s, len(s), ms, buf, len(buf))), buf
        )

    def wait_ended(self, timeout: Timeout = None) -> LeadershipState:
        """Block until the leadership is no longer ACTIVE (fenced, expired,
        resigned or closed) and return the final state; ACTIVE when
        `timeout` seconds passed first (None: no limit). The GIL is released
        while it waits."""
        if self._h.get() is None:
            _check()
            return LeadershipState.CLOSED
        ms = timeout_ms(timeout)
        st = ctypes.c_int()
        code = lib.krabka_leadership_wait(self._ptr(), ms, ctypes.byref(st))
        if code == ErrorCode.TIMEOUT:
            return LeadershipState.ACTIVE
        raise_for(code)
        return LeadershipState(st.value)

    async def ended(self) -> LeadershipState:
        """Wait, without a thread, until the leadership is no longer ACTIVE;
        returns the final state (`end_error` says why). Completes through
        the event loop's queue fd."""
        q = _events.loop_queue()
        tag, fut = _events.future_for(q, lambda c: LeadershipState(c.state), raise_errors=False)
        try:
            raise_for(lib.krabka_leadership_ended_async(self._ptr(), q.ptr, tag))
        except BaseException:
            q.forget(tag)
            raise
        return await fut  # type: ignore[no-any-return]

    @property
    def end_error(self) -> Optional[KrabkaError]:
        """None while ACTIVE; afterwards the error its calls now raise
        (FencedError, LeaseExpiredError, NotLeaderError or ClosedError), whose
        reason says why it ended. Never blocks."""
        if self._h.get() is None:
            return NotLeaderError(ErrorCode.NOT_LEADER, "this Leadership was closed")
        code = ctypes.c_int()
        buf = _errbuf()
        raise_for(lib.krabka_leadership_end_error(self._ptr(), ctypes.byref(code), buf, len(buf)))
        return error_for(code.value, buf) if code.value else None

    def event_fd(self) -> int:
        """A file descriptor (eventfd) that becomes readable when the
        leadership leaves ACTIVE, for selectors / poll loops. It belongs to
        the leadership (closed by close()); never close it yourself. Reading
        8 bytes resets it."""
        fd = ctypes.c_int()
        raise_for(lib.krabka_leadership_event_fd(self._ptr(), ctypes.byref(fd)))
        return fd.value

    def close(self) -> None:
        """Release the leadership's resources without resigning (standbys
        take over at the lease deadline). Idempotent."""
        if self._h.get() is not None:
            _check()
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

    # -- asyncio ---------------------------------------------------------
    async def renew_async(self, timeout: Timeout = None) -> None:
        """renew() on a worker thread."""
        await _in_thread(lambda: self.renew(timeout))

    async def produce_async(
        self,
        topic: str,
        value: Union[bytes, str, None],
        key: Union[bytes, str, None] = None,
        partition: Optional[int] = None,
        timeout: Timeout = None,
        headers: Headers = None,
    ) -> ProduceResult:
        """produce() on a worker thread of the binding's write pool (up to
        256 threads, started on demand), so that many concurrent awaits are
        in flight together and the library commits them in one transaction
        (group commit)."""
        header_pairs(headers)  # wrong types raise here, not in the thread
        return await _in_thread(
            lambda: self.produce(topic, value, key, partition, timeout, headers), executor=_writes_executor()
        )

    async def set_metadata_async(self, data: Optional[Bytes], timeout: Timeout = None) -> None:
        """set_metadata() on a worker thread."""
        metadata_bytes(data, "data")
        timeout_ms(timeout)
        await _in_thread(lambda: self.set_metadata(data, timeout))

    async def resign_async(self, timeout: Timeout = None, *, successor: Optional[Name] = None) -> None:
        """resign() on a worker thread."""
        await _in_thread(lambda: self.resign(timeout, successor=successor))

    async def __aenter__(self) -> "Leadership":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await _in_thread(lambda: self.__exit__(exc_type, exc, tb))


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
        self._h: Optional[_Handle] = None
        # One lock per (role, member): krabka_client_set_metadata and the
        # acquire that uses it run under it (see _metadata_for).
        self._meta_locks: Dict[Tuple[bytes, bytes], threading.Lock] = {}
        self._meta_locks_guard = threading.Lock()
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
        _check()
        _native.require("krabka_conf_new")
        conf = lib.krabka_conf_new()
        if not conf:
            raise KrabkaError(ErrorCode.INTERNAL, "krabka_conf_new failed: the library is unusable")
        try:
            for k, text in items:
                buf = _errbuf()
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
                lib.krabka_conf_set(conf, b"krabka.log.level", _events.library_log_level().encode(), None, 0)
            raise_for(lib.krabka_conf_set_log_cb(conf, _events.LOG_CALLBACK, None))
            out = ctypes.c_void_p()
            buf = _errbuf()
            raise_for(lib.krabka_client_new(conf, ctypes.byref(out), buf, len(buf)), buf)
            if not out.value:
                raise KrabkaError(ErrorCode.INTERNAL, "krabka_client_new returned no handle")
            self._h = _Handle(out.value, lib.krabka_client_destroy)
            _events._open_clients.add(self)
        finally:
            lib.krabka_conf_destroy(conf)

    def __repr__(self) -> str:
        return "<krabka_coord.Client %s>" % ("closed" if self.closed else "open")

    @property
    def closed(self) -> bool:
        return self._h is None or self._h.get() is None

    def _ptr(self) -> int:
        _check()
        p = None if self._h is None else self._h.get()
        if p is None:
            raise ClosedError(ErrorCode.CLOSED, "this Client was closed")
        return p

    def close(self) -> None:
        """Close the client: calls blocked in other threads raise
        ClosedError; its leaderships end without resigning. Blocks until
        background work has stopped. Idempotent."""
        if self._h is not None:
            if self._h.get() is not None:
                _check()
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

    # -- election --------------------------------------------------------
    @staticmethod
    def _names(role: Name, member: Name) -> Tuple[bytes, bytes, str, str]:
        r = name_bytes(role, "role")
        m = name_bytes(member, "member")
        role_s = validate_role(r)
        member_s = validate_member(m)
        return r, m, role_s, member_s

    # -- metadata of an acquire ---------------------------------------------
    # The C ABI takes an acquire's metadata out of band: krabka_client_
    # set_metadata stores it per (role, member) in the client, and the next
    # acquire of that pair reads it. The binding therefore sets it (or clears
    # it, when the call passes none) right before every acquire, under the
    # pair's lock, so that the metadata of one call cannot be replaced by a
    # concurrent call's before it is used:
    # - try_acquire holds the lock over the whole C call (it reads the
    #   metadata first and is bounded by its timeout);
    # - acquire / acquire_async hold it while the call is issued
    #   (krabka_client_acquire_async returns at once). The library reads the
    #   metadata on its own thread just after that, so two such calls of one
    #   (role, member) with DIFFERENT metadata, started at the same instant
    #   from two threads, could in principle still see the later one's: start
    #   them one after the other (the README says so).
    def _meta_lock(self, r: bytes, m: bytes) -> threading.Lock:
        with self._meta_locks_guard:
            lk = self._meta_locks.get((r, m))
            if lk is None:
                lk = self._meta_locks[(r, m)] = threading.Lock()
            return lk

    @staticmethod
    def _metadata_args(metadata: object, member_metadata: object) -> Tuple[Optional[bytes], Optional[bytes]]:
        tm = metadata_bytes(metadata, "metadata")
        mm = metadata_bytes(member_metadata, "member_metadata")
        if (tm is not None or mm is not None) and "krabka_client_set_metadata" in _native.MISSING:
            _native.require("krabka_client_set_metadata")
        return tm, mm

    @staticmethod
    def _set_metadata(ptr: int, r: bytes, m: bytes, tm: Optional[bytes], mm: Optional[bytes], buf: Any) -> int:
        """krabka_client_set_metadata (the pair's lock held); 0 or the error
        code with `buf` filled. Without the function (an older library) there
        is nothing to clear."""
        if "krabka_client_set_metadata" in _native.MISSING:
            return 0
        return lib.krabka_client_set_metadata(  # type: ignore[no-any-return]
            ptr, r, len(r), m, len(m), tm, 0 if tm is None else len(tm), mm, 0 if mm is None else len(mm), buf, len(buf)
        )

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

        Interruptible: the library waits on its own threads and this thread
        waits on a private event queue in 0.1 s slices, so Ctrl-C raises
        KeyboardInterrupt within about 100 ms. The library's call goes on
        until it ends (bounded by `timeout`, or by close()); a leadership it
        wins after the interrupt is resigned and released by a background
        thread, never left behind."""
        r, m, role_s, member_s = self._names(role, member)
        ms = timeout_ms(timeout)
        tm, mm = self._metadata_args(metadata, member_metadata)
        q = ctypes.c_void_p()
        raise_for(lib.krabka_queue_new(ctypes.byref(q)))
        handed_off = False
        try:
            fd = ctypes.c_int()
            raise_for(lib.krabka_queue_fd(q, ctypes.byref(fd)))
            buf = _errbuf()
            ptr = self._ptr()
            with self._meta_lock(r, m):
                raise_for(self._set_metadata(ptr, r, m, tm, mm, buf), buf)
                raise_for(lib.krabka_client_acquire_async(ptr, r, len(r), m, len(m), ms, q, 1, buf, len(buf)), buf)
            ev = _native.EventStruct()
            got = False
            try:
                while True:
                    select.select([fd.value], [], [], 0.1)
                    raise_for(lib.krabka_queue_poll(q, ctypes.byref(ev)))
                    if ev.type == _events.EVENT_ACQUIRE:
                        got = True
                        break
                if ev.err:
                    raise error_for(ev.err, ctypes.create_string_buffer(ev.errstr or b""))
                ptr, ev.leadership = ev.leadership, None
                try:
                    return Leadership(ptr, self, role_s, member_s)  # type: ignore[arg-type]
                except BaseException:
                    _resign_in_background(ptr, None)
                    raise
            except BaseException:
                if not got:
                    # Interrupted (or failed) while the library still waits:
                    # the queue goes to a thread that resigns what it wins.
                    handed_off = True
                    _resign_in_background(None, q)
                elif ev.leadership:
                    ptr, ev.leadership = ev.leadership, None
                    _resign_in_background(ptr, None)
                raise
        finally:
            if not handed_off:
                lib.krabka_queue_destroy(q)

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
        raises KeyboardInterrupt within about 100 ms; a role the pass wins
        afterwards is resigned and released in the background.
        `metadata` and `member_metadata` as in acquire()."""
        r, m, role_s, member_s = self._names(role, member)
        ms = timeout_ms(timeout)
        tm, mm = self._metadata_args(metadata, member_metadata)
        out = ctypes.c_void_p()
        retry = ctypes.c_int64()
        buf = _errbuf()
        ptr = self._ptr()
        lock = self._meta_lock(r, m)

        def late(code: int) -> None:
            if code == 0 and out.value:
                _resign_in_background(out.value, None)

        def call() -> int:
            # On the worker when interrupted, so the lock is held until the
            # C call ends, not until Ctrl-C.
            with lock:
                code = self._set_metadata(ptr, r, m, tm, mm, buf)
                if code:
                    return code
                return lib.krabka_client_try_acquire(  # type: ignore[no-any-return]
                    ptr, r, len(r), m, len(m), ms, ctypes.byref(out), ctypes.byref(retry), buf, len(buf)
                )

        code = _interruptible(call, late)
        raise_for(code, buf)
        if out.value:
            return TryAcquireResult(Leadership(out.value, self, role_s, member_s), None)
        return TryAcquireResult(None, retry.value)

    def leave(self, role: Name, member: Name, timeout: Timeout = None) -> None:
        """Removes `member`'s registration of `role` (a tombstone of it): the
        member leaves the succession order, and a later acquire registers it
        again at the tail. Does not end a leadership. Closing the client
        leaves by itself the roles it registered in and does not hold
        (krabka.leave.on.close, default true). Blocks for one write, up to
        `timeout` seconds (default request.timeout.ms)."""
        r = name_bytes(role, "role")
        validate_role(r)
        m = name_bytes(member, "member")
        validate_member(m)
        ms = timeout_ms(timeout)
        buf = _errbuf()
        ptr = self._ptr()
        raise_for(_interruptible(lambda: lib.krabka_client_leave(ptr, r, len(r), m, len(m), ms, buf, len(buf))), buf)

    def describe(self, role: Name, timeout: Timeout = None) -> Status:
        """The third-party check: the coordinator's current token for the
        role and the state folded from its partition. Takes no epoch and joins
        no group. Blocks up to `timeout` seconds (default request.timeout.ms);
        Ctrl-C raises KeyboardInterrupt within about 100 ms."""
        r = name_bytes(role, "role")
        role_s = validate_role(r)
        ms = timeout_ms(timeout)
        out = ctypes.c_void_p()
        buf = _errbuf()
        ptr = self._ptr()

        def late(code: int) -> None:
            if code == 0 and out.value:
                lib.krabka_status_destroy(out.value)

        raise_for(_interruptible(lambda: lib.krabka_client_describe(ptr, r, len(r), ms, ctypes.byref(out), buf, len(buf)), late), buf)
        st = _Handle(out.value, lib.krabka_status_destroy)  # type: ignore[arg-type]
        try:
            return _read_status(out.value, role_s)  # type: ignore[arg-type]
        finally:
            st.release()

    def watch(self, role: Name, renewals: bool = False, timeout: Timeout = None) -> "Watch":
        """Watch `role` without taking part (no epoch, no registration):
        iterate the returned Watch with `for` or `async for`. The first events
        describe the current state. `renewals=True` also yields
        LEASE_RENEWED. Blocks up to `timeout` seconds (default
        request.timeout.ms) while the view catches up."""
        from ._watch import Watch

        r = name_bytes(role, "role")
        role_s = validate_role(r)
        ms = timeout_ms(timeout)
        out = ctypes.c_void_p()
        buf = _errbuf()
        raise_for(lib.krabka_client_watch(self._ptr(), r, len(r), 1 if renewals else 0, ms, ctypes.byref(out), buf, len(buf)), buf)
        return Watch(out.value, role_s)  # type: ignore[arg-type]

    def stats(self) -> Dict[str, Any]:
        """The client's statistics as a dict (schema: docs/STATISTICS.md):
        counters and gauges per client and per role ("roles"). Never blocks."""
        out = ctypes.c_void_p()
        n = ctypes.c_size_t()
        raise_for(lib.krabka_client_stats_json(self._ptr(), ctypes.byref(out), ctypes.byref(n)))
        try:
            return json.loads(ctypes.string_at(out.value, n.value))  # type: ignore[no-any-return]
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
        """acquire() without a thread: the library waits on its own threads
        and completes the call through the event loop's queue fd, so any
        number of acquires can wait at once without an executor thread each.
        If the awaiting task is cancelled, the call goes on until it ends
        (bounded by `timeout`, or by close()); a leadership won after the
        cancellation is resigned and released by a background thread.
        `metadata` and `member_metadata` as in acquire()."""
        r, m, role_s, member_s = self._names(role, member)
        ms = timeout_ms(timeout)
        tm, mm = self._metadata_args(metadata, member_metadata)
        ptr = self._ptr()
        lock = self._meta_lock(r, m)
        if not lock.acquire(blocking=False):
            # Held by a try_acquire of the same pair in another thread: wait
            # off the event loop (released at once if this task is cancelled
            # while the thread still waits).
            await _in_thread(lock.acquire, lambda _got: lock.release())
        try:
            q = _events.loop_queue()
            tag, fut = _events.future_for(
                q,
                lambda c: Leadership(c.leadership, self, role_s, member_s),
                lambda c: _resign_in_background(c.leadership, None) if c.leadership else None,
            )
            buf = _errbuf()
            try:
                raise_for(self._set_metadata(ptr, r, m, tm, mm, buf), buf)
                raise_for(lib.krabka_client_acquire_async(ptr, r, len(r), m, len(m), ms, q.ptr, tag, buf, len(buf)), buf)
            except BaseException:
                q.forget(tag)
                raise
        finally:
            lock.release()
        return await fut

    async def try_acquire_async(
        self,
        role: Name,
        member: Name,
        timeout: Timeout = None,
        *,
        metadata: Optional[Bytes] = None,
        member_metadata: Optional[Bytes] = None,
    ) -> TryAcquireResult:
        """try_acquire() on a worker thread."""
        self._names(role, member)
        timeout_ms(timeout)
        self._metadata_args(metadata, member_metadata)

        def release(res: TryAcquireResult) -> None:
            if res.leadership is not None:
                res.leadership.close()

        return await _in_thread(
            lambda: self.try_acquire(role, member, timeout, metadata=metadata, member_metadata=member_metadata),
            release,
        )

    async def describe_async(self, role: Name, timeout: Timeout = None) -> Status:
        """describe() on a worker thread."""
        return await _in_thread(lambda: self.describe(role, timeout))

    async def close_async(self) -> None:
        """close() on a worker thread (it blocks while background work stops)."""
        await _in_thread(self.close)

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await self.close_async()


def _resign_in_background(leadership: Optional[int], queue: Optional[ctypes.c_void_p]) -> None:
    """Resigns and destroys a leadership nobody will use (won during an
    interrupt), on a daemon thread; with a queue, first waits for the
    acquire still pending on it, then destroys the queue."""

    def run() -> None:
        lead = leadership
        if queue is not None:
            ev = _native.EventStruct()
            fd = ctypes.c_int()
            lib.krabka_queue_fd(queue, ctypes.byref(fd))
            while True:
                select.select([fd.value], [], [], 1.0)
                if lib.krabka_queue_poll(queue, ctypes.byref(ev)) != 0:
                    break
                if ev.type == _events.EVENT_ACQUIRE:
                    if not ev.err and ev.leadership:
                        lead, ev.leadership = ev.leadership, None
                    break
        if lead:
            buf = _errbuf()
            lib.krabka_leadership_resign(lead, 0, buf, len(buf))
            lib.krabka_leadership_destroy(lead)
        if queue is not None:
            lib.krabka_queue_destroy(queue)

    threading.Thread(target=run, name="krabka-resign-interrupted", daemon=True).start()


def _read_status(st: int, role: str) -> Status:
    has = ctypes.c_int()
    name = ctypes.create_string_buffer(NAME_BUF)
    n = ctypes.c_size_t()
    raise_for(lib.krabka_status_holder(st, ctypes.byref(has), name, len(name), ctypes.byref(n)))
    holder = name.raw[: n.value].decode("utf-8", "surrogateescape") if has.value else None
    tok = Token()
    raise_for(lib.krabka_status_token(st, ctypes.byref(tok)))
    cur = ctypes.c_int()
    raise_for(lib.krabka_status_current(st, ctypes.byref(cur)))
    has_lease = ctypes.c_int()
    ls = LeaseStruct()
    raise_for(lib.krabka_status_lease(st, ctypes.byref(has_lease), ctypes.byref(ls)))
    part = ctypes.c_int32()
    raise_for(lib.krabka_status_partition(st, ctypes.byref(part)))
    skipped = ctypes.c_int64()
    raise_for(lib.krabka_status_skipped(st, ctypes.byref(skipped)))
    removed = ctypes.c_int64()
    raise_for(lib.krabka_status_removed(st, ctypes.byref(removed)))
    count = ctypes.c_size_t()
    raise_for(lib.krabka_status_roster_count(st, ctypes.byref(count)))
    has_meta = "krabka_status_metadata" not in _native.MISSING
    roster = []
    for i in range(count.value):
        e = RosterEntryStruct()
        raise_for(lib.krabka_status_roster_entry(st, i, ctypes.byref(e)))
        meta = None
        if has_meta:
            meta = _read_metadata(lambda b, size, n: lib.krabka_status_roster_metadata(st, i, b, size, n))
        roster.append(
            RosterEntry(
                read_name(e, "member", e.member_len).decode("utf-8", "surrogateescape"),
                e.offset,
                e.registered_at,
                e.rank,
                meta,
            )
        )
    term_meta = None
    if has_meta:
        term_meta = _read_metadata(lambda b, size, n: lib.krabka_status_metadata(st, b, size, n))
    return Status(
        role=role,
        holder=holder,
        token=FencingToken._from_c(tok),
        current=bool(cur.value),
        lease=Lease._from_c(ls) if has_lease.value else None,
        roster=tuple(roster),
        skipped=skipped.value,
        partition=part.value,
        removed=removed.value,
        metadata=term_meta,
    )
