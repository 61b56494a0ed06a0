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

from ._native import ABI_VERSION, MAX_METADATA_BYTES as _MAX_METADATA_BYTES, ForkedProcessError, LibraryLoadError, lib as _lib, library_path
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
    InvalidArgumentError,
    KrabkaError,
    KrabkaTimeoutError,
    LeaseExpiredError,
    NotLeaderError,
    TransportError,
    UnsupportedError,
)
from ._pure import (
    NO_EPOCH,
    FencingToken,
    Key,
    Kind,
    Lease,
    Registration,
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
from ._watch import Watch, WatchEvent
from ._verify import Verdict, Verifier
from ._client import (
    Client,
    Leadership,
    LeadershipState,
    ProduceResult,
    RosterEntry,
    Status,
    TryAcquireResult,
)

__version__ = "2.0.0"


def library_version() -> str:
    """Version of the loaded libkrabka_coord.so, e.g. "1.0.0"."""
    return (_lib.krabka_version() or b"").decode("ascii")


NAME_MAX = 249
"""Longest role or member id in bytes."""

MAX_METADATA_BYTES = _MAX_METADATA_BYTES
"""Most bytes of metadata of a term or of a member (KRABKA_MAX_METADATA_BYTES)."""

__all__ = [
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
    "Leadership",
    "LeadershipState",
    "Lease",
    "LeaseExpiredError",
    "LibraryLoadError",
    "NotLeaderError",
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
