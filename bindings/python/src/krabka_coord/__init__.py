"""krabka_coord: leader election, leases and fencing tokens on Apache Kafka.

A thin ctypes binding over libkrabka_coord.so (the C API of
include/krabka_coord.h). Quick start::

    import krabka_coord

    with krabka_coord.Client({"bootstrap.servers": "localhost:9092"}) as client:
        with client.acquire("controller", "node-1") as lead:
            print("leader with token", lead.token)       # e.g. 4242:7
            lead.produce("commands", b"start", key=b"job-1")

Set KRABKA_COORD_LIBRARY to the path of a libkrabka_coord.so to load that
library instead of the packaged one.
"""

from __future__ import annotations

from . import _abi
from ._native import LibraryLoadError, lib as _lib, library_path
from ._errors import (
    AuthorizationError,
    AuthenticationError,
    MessageTooLargeError,
    UnknownTopicOrPartitionError,
    TLSError,
    ClosedError,
    ConfigError,
    DataError,
    ErrorCode,
    FencedError,
    ForkedProcessError,
    InvalidArgumentError,
    KrabkaError,
    KrabkaTimeoutError,
    LeaseExpiredError,
    NotLeaderError,
    TransportError,
    UnsupportedError,
)
from ._values import (
    NO_EPOCH,
    FencingToken,
    Key,
    Kind,
    LeadershipState,
    Lease,
    ProduceResult,
    Registration,
    RosterEntry,
    Status,
    WatchEvent,
)
from ._pure import (
    decode_key,
    decode_lease,
    decode_registration,
    encode_key,
    encode_lease,
    encode_registration,
    format_token,
    is_tombstone,
    murmur2,
    parse_token,
    role_partition,
    token_compare,
    validate_member,
    validate_role,
    validate_token,
)
from ._verify import Verdict, Verifier
from ._input import Input, InputRecord, Offset
from ._leadership import Leadership, TryAcquireResult
from ._watch import Watch
from ._elect import Elector, ElectorState, Health, StopReason, Term, TermEvent, TermEventKind
from ._group import MAX_SHARDS, GroupEvent, GroupEventKind, GroupMember
from ._electorset import ElectorSet, RoleEvent
from ._client import Client

__version__ = "2.0.0"


def library_version() -> str:
    """Version of the loaded libkrabka_coord.so, e.g. "1.0.0"."""
    return (_lib.krabka_version() or b"").decode("ascii")


ABI_VERSION = _abi.ABI_VERSION
"""The ABI version this package needs (krabka_abi_version() of the library)."""

NAME_MAX = _abi.NAME_MAX
"""Longest role or member id in bytes."""

MAX_METADATA_BYTES = _abi.MAX_METADATA_BYTES
"""Most bytes of metadata of a term or of a member (KRABKA_MAX_METADATA_BYTES)."""

__all__ = [
    "ElectorSet",
    "RoleEvent",
    "GroupEvent",
    "GroupEventKind",
    "GroupMember",
    "MAX_SHARDS",
    "Elector",
    "ElectorState",
    "Health",
    "StopReason",
    "Term",
    "TermEvent",
    "TermEventKind",
    "Watch",
    "WatchEvent",
    "ABI_VERSION",
    "MAX_METADATA_BYTES",
    "NAME_MAX",
    "NO_EPOCH",
    "AuthorizationError",
    "AuthenticationError",
    "MessageTooLargeError",
    "UnknownTopicOrPartitionError",
    "TLSError",
    "Client",
    "ClosedError",
    "ConfigError",
    "DataError",
    "ErrorCode",
    "FencedError",
    "FencingToken",
    "ForkedProcessError",
    "InvalidArgumentError",
    "Key",
    "Kind",
    "KrabkaError",
    "KrabkaTimeoutError",
    "Input",
    "InputRecord",
    "Leadership",
    "LeadershipState",
    "Lease",
    "LeaseExpiredError",
    "LibraryLoadError",
    "NotLeaderError",
    "Offset",
    "ProduceResult",
    "Registration",
    "RosterEntry",
    "Status",
    "TransportError",
    "TryAcquireResult",
    "UnsupportedError",
    "Verdict",
    "Verifier",
    "decode_key",
    "decode_lease",
    "decode_registration",
    "encode_key",
    "encode_lease",
    "encode_registration",
    "format_token",
    "is_tombstone",
    "library_path",
    "library_version",
    "murmur2",
    "parse_token",
    "role_partition",
    "token_compare",
    "validate_member",
    "validate_role",
    "validate_token",
]
