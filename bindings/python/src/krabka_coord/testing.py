"""Test aids: an in-process cluster with a manual clock and faults, so that a
test of a controller's failover runs in milliseconds without a broker.

A Cluster registers an in-process cluster for the whole process under a
name; a Client whose configuration says ``bootstrap.servers=mem://NAME``
(``cluster.bootstrap``) joins it instead of connecting to Kafka. It is the
project's in-memory model of what the library relies on from Kafka
(core/memtransport, through include/krabka_coord_testing.h): one order per
partition, transactions with the coordinator's minting and fencing,
read_committed visibility, describe. The cluster's clock moves only when
the test advances it (unless created with ``real_time=True``); leases,
renewals, the standbys' stagger and the at-risk margin follow it. Request
timeouts stay real time. ::

    import krabka_coord as kc
    from krabka_coord.testing import Cluster

    with Cluster() as cluster:
        a = cluster.client()                 # a kc.Client on mem://<name>
        b = cluster.client()
        lead = a.acquire("controller", "a")
        cluster.mint("controller")           # a blind successor
        try:
            lead.produce("commands", b"x")
        except kc.FencedError:
            ...                              # refused; nothing was written
        cluster.kill(a)                      # no resign: the lease stays
        cluster.clock.advance(30_000)        # past its deadline
        b.acquire("controller", "b")         # the standby takes over

With pytest the plugin of this package (loaded when it is installed)
offers the fixtures ``krabka_cluster``, ``krabka_clock`` and
``krabka_cluster_factory``; see docs/TESTING.md.

Errors are the package's: a wrong type raises TypeError naming the
argument; what the library refuses raises InvalidArgumentError (a name with
a character outside ``[A-Za-z0-9._-]``, a clock moved backwards, a control
on a client that is not in-process: the message names it), ClosedError for
a closed client or cluster.
"""

from __future__ import annotations

import ctypes
import datetime
import itertools
import os
import threading
import uuid
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Union

from . import _abi, _testing_abi
from ._args import INT32_MAX, INT64_MAX, INT64_MIN, check_int, name_bytes
from ._calls import errbuf
from ._client import Client
from ._errors import ClosedError, ErrorCode, raise_for
from ._native import Handle, lib, library_path
from ._values import FencingToken

__all__ = ["Cluster", "Clock", "Record", "NAME_MAX", "CLOCK_START_MS", "unique_name"]

_testing_abi.bind(lib, library_path)

#: The longest cluster name, in bytes (KRABKA_TESTING_NAME_MAX).
NAME_MAX = _testing_abi.NAME_MAX
#: What a manual clock reads when its cluster is created (epoch ms,
#: 2026-01-01T00:00:00Z; KRABKA_TESTING_CLOCK_START_MS).
CLOCK_START_MS = _testing_abi.CLOCK_START_MS

_names = itertools.count(1)


def unique_name(prefix: str = "py") -> str:
    """A cluster name no other cluster of this process (or another process)
    takes: ``<prefix>-<pid>-<n>-<random>``, within NAME_MAX."""
    if not isinstance(prefix, str):
        raise TypeError("prefix must be str, not %s" % type(prefix).__name__)
    return "%s-%d-%d-%s" % (prefix[:24], os.getpid(), next(_names), uuid.uuid4().hex[:8])


class Record(NamedTuple):
    """A committed record of a topic partition of an in-process cluster."""

    offset: int
    value: Optional[bytes]  # None: a null value (a tombstone)


def _client_ptr(client: object, what: str = "client") -> int:
    if not isinstance(client, Client):
        raise TypeError("%s must be a krabka_coord.Client, not %s" % (what, type(client).__name__))
    return client._ptr()  # ClosedError for a closed client


class Clock:
    """The clock of one in-process cluster (epoch milliseconds). A manual
    clock moves only by advance(); a real-time one follows the system
    clock."""

    __slots__ = ("_cluster",)

    def __init__(self, cluster: "Cluster") -> None:
        self._cluster = cluster

    @property
    def real_time(self) -> bool:
        """True when the clock follows the system clock (advance() is then
        refused)."""
        return self._cluster.real_time

    def now_ms(self) -> int:
        """The cluster's time, epoch milliseconds. Never blocks."""
        out = ctypes.c_int64()
        buf = errbuf()
        raise_for(lib.krabka_testing_clock_now(self._cluster._ptr(), ctypes.byref(out), buf, len(buf)), buf)
        return out.value

    def now(self) -> datetime.datetime:
        """now_ms() as an aware UTC datetime."""
        return datetime.datetime.fromtimestamp(self.now_ms() / 1000, tz=datetime.timezone.utc)

    def advance(self, by: Union[int, datetime.timedelta]) -> int:
        """Moves the clock forward by `by` (int milliseconds, or a timedelta,
        rounded down to whole milliseconds) and wakes every timer of the
        cluster's clients whose time has come (a renewal, a standby's wait
        for a lease's deadline, an at-risk mark), except those of paused
        clients. Returns the new time (epoch ms). It does not wait for what
        the woken timers do: wait for the effect you need (a term event, a
        leadership's state, an acquire's return). Never blocks.

        Raises TypeError for another type (a float is refused: say
        milliseconds as an int or pass a timedelta), InvalidArgumentError
        for a negative amount (the clock never goes backwards) and on a
        real-time clock."""
        if isinstance(by, datetime.timedelta):
            ms = (by.days * 86_400_000) + (by.seconds * 1000) + (by.microseconds // 1000)
        elif isinstance(by, bool) or not isinstance(by, int):
            raise TypeError("advance(by): by must be int milliseconds or a datetime.timedelta, not %s"
                            % type(by).__name__)
        else:
            ms = by
        if not INT64_MIN <= ms <= INT64_MAX:
            raise ValueError("advance(by): %d ms is outside the signed 64-bit range" % ms)
        buf = errbuf()
        raise_for(lib.krabka_testing_clock_advance(self._cluster._ptr(), ms, buf, len(buf)), buf)
        return self.now_ms()

    def __repr__(self) -> str:
        if self._cluster.closed:
            return "<krabka_coord.testing.Clock of a closed cluster>"
        return "<krabka_coord.testing.Clock %s%s>" % (self.now().isoformat(), " real time" if self.real_time else "")


class Cluster:
    """An in-process cluster registered for this process as ``mem://name``.

    name: 1 to 64 ASCII letters, digits, ``.``, ``_``, ``-`` (None: a
    unique one, unique_name()). partitions: the partition count of every
    topic of the cluster (the coordination topic and the topics guarded
    writes go to). real_time: the clock follows the system clock instead of
    moving only when advanced. Use it as a context manager, or call
    close(): the clients made by client() are closed, then the name is
    unregistered; clients made elsewhere that are still on it fail with
    TransportError from then on.

    Raises TypeError for wrong types, InvalidArgumentError for a name the
    library refuses (the message names the character) or that another live
    cluster of the process has, for partitions outside 1..100000."""

    def __init__(self, name: Optional[str] = None, *, partitions: int = 1, real_time: bool = False) -> None:
        self._h: Optional[Handle] = None
        if name is None:
            name = unique_name()
        elif not isinstance(name, str):
            raise TypeError("name must be str or None, not %s" % type(name).__name__)
        parts = check_int(partitions, "partitions", 1, INT32_MAX)
        if not isinstance(real_time, bool):
            raise TypeError("real_time must be bool, not %s" % type(real_time).__name__)
        raw = name_bytes(name, "name")
        out = ctypes.c_void_p()
        buf = errbuf()
        flags = _testing_abi.REAL_TIME if real_time else 0
        raise_for(lib.krabka_testing_cluster_new(raw, len(raw), parts, flags, ctypes.byref(out), buf, len(buf)), buf)
        self._h = Handle(out.value or 0, lib.krabka_testing_cluster_destroy)
        self._name = (lib.krabka_testing_cluster_name(out.value) or raw).decode("utf-8")
        self._partitions = parts
        self._real_time = real_time
        self._lock = threading.Lock()
        self._clients: List[Client] = []
        self._minter: Optional[Client] = None
        self.clock = Clock(self)
        """The cluster's clock."""

    # -- identity ----------------------------------------------------------
    @property
    def name(self) -> str:
        """The name the cluster is registered under."""
        return self._name

    @property
    def bootstrap(self) -> str:
        """``mem://<name>``: the bootstrap.servers of its clients."""
        return "mem://" + self._name

    @property
    def partitions(self) -> int:
        return self._partitions

    @property
    def real_time(self) -> bool:
        return self._real_time

    @property
    def closed(self) -> bool:
        return self._h is None or self._h.get() is None

    def _ptr(self) -> int:
        p = None if self._h is None else self._h.get()
        if p is None:
            raise ClosedError(ErrorCode.CLOSED, "this in-process Cluster was closed")
        return p

    def __repr__(self) -> str:
        return "<krabka_coord.testing.Cluster %s%s>" % (self.bootstrap, " closed" if self.closed else "")

    # -- clients -----------------------------------------------------------
    def config(self, extra: Optional[Mapping[str, Union[str, int, bool]]] = None,
               **more: Union[str, int, bool]) -> Dict[str, Union[str, int, bool]]:
        """A client configuration on this cluster: ``bootstrap.servers`` and
        the properties of `extra` (a dict, for the dotted names) and of the
        keyword arguments. A bootstrap.servers in them is refused
        (ValueError): the cluster sets it."""
        conf: Dict[str, Union[str, int, bool]] = {}
        if extra is not None:
            if not isinstance(extra, Mapping):
                raise TypeError("extra must be a dict of property names to values, not %s" % type(extra).__name__)
            conf.update(extra)
        conf.update(more)
        if "bootstrap.servers" in conf:
            raise ValueError("config: bootstrap.servers is the cluster's (%s); leave it out" % self.bootstrap)
        conf["bootstrap.servers"] = self.bootstrap
        return conf

    def client(self, extra: Optional[Mapping[str, Union[str, int, bool]]] = None,
               **more: Union[str, int, bool]) -> Client:
        """A new Client on this cluster (config(extra, **more)); close()
        closes it with the cluster."""
        self._ptr()
        c = Client(self.config(extra, **more))
        with self._lock:
            self._clients.append(c)
        return c

    # -- faults on a client ------------------------------------------------
    def _control(self, fn: Any, client: object, *args: int) -> None:
        ptr = _client_ptr(client)
        buf = errbuf()
        raise_for(fn(ptr, *args, buf, len(buf)), buf)

    def cut(self, client: Client) -> None:
        """Cuts the client's link: every request of it fails at once with
        TransportError until heal(). Its leaderships go at risk and expire
        by the clock as on Kafka. InvalidArgumentError for a client that is
        not in-process or was killed."""
        self._control(lib.krabka_testing_client_set_cut, client, 1)

    def heal(self, client: Client) -> None:
        """Heals the client's cut link."""
        self._control(lib.krabka_testing_client_set_cut, client, 0)

    def pause(self, client: Client) -> None:
        """Pauses the client (SIGSTOP): its requests hold, its view of the
        clock freezes, its timers (renewal, at-risk) do not fire."""
        self._control(lib.krabka_testing_client_set_paused, client, 1)

    def resume(self, client: Client) -> None:
        """Resumes a paused client: its held requests go on and it sees the
        cluster's time jump, as a resumed process does."""
        self._control(lib.krabka_testing_client_set_paused, client, 0)

    def kill(self, client: Client) -> None:
        """Kills the client (its process died): none of its requests reaches
        the cluster again, it neither resigns nor leaves (also not on
        close()): its leases stay until their deadline. Idempotent. Close
        the Client as usual."""
        self._control(lib.krabka_testing_client_kill, client)

    # -- faults on the cluster ---------------------------------------------
    def set_available(self, available: bool) -> None:
        """False: every request of every client of the cluster fails at
        once with TransportError, until set_available(True)."""
        if not isinstance(available, bool):
            raise TypeError("available must be bool, not %s" % type(available).__name__)
        buf = errbuf()
        raise_for(lib.krabka_testing_cluster_set_available(self._ptr(), 1 if available else 0, buf, len(buf)), buf)

    def mint(self, role: Union[str, bytes], *, client: Optional[Client] = None) -> FencingToken:
        """A blind successor: mints a new token for `role` at the cluster's
        transaction coordinator without writing a lease, and returns it.
        The role's holder does not learn of it: its next guarded write,
        renewal or resign raises FencedError, and nothing of that write is
        committed. The role's transactional id is the one `client` uses
        (its krabka.role.prefix plus role); without `client`, one with the
        default configuration (no prefix). Works while the holder is cut,
        paused or killed. DataError for a role the contract refuses,
        TransportError while the cluster is unavailable."""
        r = name_bytes(role, "role")
        if client is None:
            ptr = self._mint_client()._ptr()
        else:
            ptr = _client_ptr(client, "client")
        out = _abi.Token()
        buf = errbuf()
        raise_for(lib.krabka_testing_mint(ptr, r, len(r), ctypes.byref(out), buf, len(buf)), buf)
        return FencingToken._from_c(out)

    def _mint_client(self) -> Client:
        self._ptr()
        with self._lock:
            if self._minter is None:
                self._minter = Client({"bootstrap.servers": self.bootstrap})
            return self._minter

    # -- what was written ----------------------------------------------------
    def records(self, topic: str, partition: int = 0) -> List[Record]:
        """The committed records of `partition` of `topic`, in offset order
        (read_committed: a refused or aborted write left nothing). Empty for
        a topic nothing was written to. InvalidArgumentError for an empty
        topic or a partition out of range."""
        if not isinstance(topic, str):
            raise TypeError("topic must be str, not %s" % type(topic).__name__)
        if "\x00" in topic:
            raise ValueError("topic %r contains NUL" % topic)
        p = check_int(partition, "partition", 0, INT32_MAX)
        t = topic.encode("utf-8")
        ptr = self._ptr()
        count = ctypes.c_int64()
        buf = errbuf()
        raise_for(lib.krabka_testing_topic_count(ptr, t, p, ctypes.byref(count), buf, len(buf)), buf)
        out: List[Record] = []
        for i in range(count.value):
            offset = ctypes.c_int64()
            need = ctypes.c_size_t()
            is_null = ctypes.c_int()
            code = lib.krabka_testing_topic_record(ptr, t, p, i, ctypes.byref(offset), None, 0, ctypes.byref(need),
                                                   ctypes.byref(is_null), buf, len(buf))
            value: Optional[bytes] = None
            if code == ErrorCode.BUFFER_TOO_SMALL:
                data = ctypes.create_string_buffer(max(need.value, 1))
                raise_for(lib.krabka_testing_topic_record(ptr, t, p, i, ctypes.byref(offset), data, len(data),
                                                          ctypes.byref(need), ctypes.byref(is_null), buf, len(buf)),
                          buf)
                value = data.raw[:need.value]
            else:
                raise_for(code, buf)
                value = None if is_null.value else b""
            out.append(Record(offset.value, value))
        return out

    def values(self, topic: str, partition: int = 0) -> List[Optional[bytes]]:
        """The values of records(topic, partition)."""
        return [r.value for r in self.records(topic, partition)]

    # -- lifetime ------------------------------------------------------------
    def close(self) -> None:
        """Closes the clients made by client() (their leaderships end
        without resigning), then unregisters the name and destroys the
        cluster. Idempotent."""
        with self._lock:
            clients, self._clients = self._clients, []
            minter, self._minter = self._minter, None
        for c in clients:
            c.close()
        if minter is not None:
            minter.close()
        if self._h is not None:
            self._h.release()

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if self._h is not None and self._h.get() is not None:
                self.close()
        except Exception:
            pass
