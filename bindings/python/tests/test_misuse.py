"""Misuse is refused with a clear Python exception, before anything blocks:
wrong types, bad timeouts, bad names, bad configuration, closed clients and
forked children."""

from __future__ import annotations

import os

import pytest

import krabka_coord as kc

# Nothing listens here: every test in this file must fail before the network.
NOWHERE = {"bootstrap.servers": "127.0.0.1:9", "request.timeout.ms": 2000}


@pytest.fixture
def client():  # type: ignore[no-untyped-def]
    c = kc.Client(NOWHERE)
    yield c
    c.close()


def test_unknown_configuration_key_raises_value_error_naming_it() -> None:
    with pytest.raises(ValueError) as ei:
        kc.Client({"bootstrap.servers": "localhost:9092", "no.such.property": "1"})
    err = ei.value
    assert isinstance(err, kc.ConfigError)
    assert err.code == kc.ErrorCode.UNKNOWN_CONFIG and err.name == "UNKNOWN_CONFIG"
    assert err.key == "no.such.property"
    assert "no.such.property" in str(err)


def test_invalid_configuration_value_raises_config_error_naming_the_key() -> None:
    with pytest.raises(kc.ConfigError) as ei:
        kc.Client({"bootstrap.servers": "localhost:9092", "krabka.lease.ms": "soon"})
    assert ei.value.code == kc.ErrorCode.INVALID_CONFIG
    assert "krabka.lease.ms" in str(ei.value)


def test_configuration_values_are_str_int_or_bool() -> None:
    with kc.Client({"bootstrap.servers": "127.0.0.1:9", "request.timeout.ms": 1500, "krabka.renew.background": False}) as c:
        assert not c.closed
    for bad in (1.5, None, [1], b"1"):
        with pytest.raises(TypeError, match="request.timeout.ms"):
            kc.Client({"bootstrap.servers": "127.0.0.1:9", "request.timeout.ms": bad})
    with pytest.raises(TypeError):
        kc.Client({1: "x"})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        kc.Client("bootstrap.servers=x")  # type: ignore[arg-type]


def test_close_is_idempotent_and_a_closed_client_refuses_calls() -> None:
    c = kc.Client(NOWHERE)
    c.close()
    c.close()
    assert c.closed
    with pytest.raises(kc.ClosedError) as ei:
        c.acquire("role", "member")
    assert ei.value.code == kc.ErrorCode.CLOSED and ei.value.fatal
    with pytest.raises(kc.ClosedError):
        c.describe("role")
    with pytest.raises(kc.ClosedError):
        c.try_acquire("role", "member")


def test_with_block_closes_the_client() -> None:
    with kc.Client(NOWHERE) as c:
        pass
    assert c.closed


@pytest.mark.parametrize("role, member, exc", [
    (None, "m", TypeError),
    ("r", None, TypeError),
    (42, "m", TypeError),
    ("", "m", ValueError),
    ("r", "", ValueError),
    ("r" * 250, "m", ValueError),
    ("r", "m" * 1000, ValueError),
    (b"\xc3\x28", "m", ValueError),
])
def test_bad_names_are_refused_before_the_network(client: kc.Client, role: object, member: object, exc: type) -> None:
    with pytest.raises(exc):
        client.acquire(role, member, timeout=1)  # type: ignore[arg-type]
    with pytest.raises(exc):
        client.try_acquire(role, member, timeout=1)  # type: ignore[arg-type]


def test_an_over_long_name_reports_the_rule_it_breaks(client: kc.Client) -> None:
    with pytest.raises(kc.DataError) as ei:
        client.acquire("controller", "m" * 250)
    assert ei.value.category == "member_too_long"


@pytest.mark.parametrize("timeout, exc", [(-1, ValueError), (0, ValueError), (float("nan"), ValueError), (float("inf"), ValueError), ("5", TypeError), (True, TypeError)])
def test_bad_timeouts_are_refused(client: kc.Client, timeout: object, exc: type) -> None:
    with pytest.raises(exc):
        client.acquire("role", "member", timeout=timeout)  # type: ignore[arg-type]
    with pytest.raises(exc):
        client.describe("role", timeout=timeout)  # type: ignore[arg-type]


def test_fork_child_gets_a_clear_error_instead_of_a_hang() -> None:
    """The library's own fork guard answers FORKED in a child, which the
    binding raises as ForkedProcessError (a KrabkaError and RuntimeError);
    the functions that return no error code answer from C as in the parent
    (murmur2), as the header says."""
    if not hasattr(os, "fork"):  # never under make test: the binding is Linux-only
        pytest.skip("no fork on this platform")
    parent_hash = kc.murmur2(b"x")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        out = []
        try:
            out.append(b"murmur2=%d" % kc.murmur2(b"x"))
            for call in (lambda: kc.validate_role("r"), lambda: kc.Client(NOWHERE)):
                try:
                    call()
                    out.append(b"no error")
                except kc.ForkedProcessError as e:
                    ok = isinstance(e, kc.KrabkaError) and isinstance(e, RuntimeError) and e.name == "FORKED"
                    out.append(b"ForkedProcessError(%d): %s" % (ok, str(e).encode()))
        except BaseException as e:  # pragma: no cover
            out.append(repr(e).encode())
        os.write(w, b"\n".join(out))
        os._exit(0)
    os.close(w)
    got = b""
    while True:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        got += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    lines = got.split(b"\n")
    assert lines[0] == b"murmur2=%d" % parent_hash, lines
    assert len(lines) == 3, lines
    for line in lines[1:]:
        assert line.startswith(b"ForkedProcessError(1): "), line
        assert b"fork" in line and b"spawn" in line, line
    # The parent is unaffected.
    assert kc.murmur2(b"x") == parent_hash and kc.validate_role("r") == "r"
