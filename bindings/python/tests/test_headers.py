"""Record headers (docs/PROTOCOL.md section 11) through the binding: term and
member metadata, a resign to a named successor, guarded writes with headers
(read back with kread) and the verifier. The live tests use the brokers of
KRABKA_BOOTSTRAP (tv2) and KRABKA_BOOTSTRAP_TV1, and fail, never skip,
without them; the verifier and the declaration checks need no broker."""

from __future__ import annotations

import asyncio
import ctypes
import re
import threading
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

import krabka_coord as kc
from krabka_coord import _abi
from krabka_coord._native import glib
from conftest import REPO, KafkaTools, unique

BIG = b"x" * (kc.MAX_METADATA_BYTES + 1)
LIMIT = bytes(range(256)) * (kc.MAX_METADATA_BYTES // 256)  # exactly 4096 bytes, every byte value


def conf(bootstrap: str, **extra: object) -> Dict[str, object]:
    # Leases that outlive a slow run of a test (nothing renews in the
    # background), a short stagger.
    c: Dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "krabka.poll.interval.ms": 100,
        "krabka.lease.ms": 30000,
        "krabka.renew.interval.ms": 10000,
        "krabka.challenge.stagger.ms": 500,
    }
    c.update(extra)
    return c


# Leases that outlast the test and a stagger no standby reaches during it:
# only a named successor can win at once after a resign.
SLOW = {
    "krabka.lease.ms": 60000,
    "krabka.renew.interval.ms": 20000,
    "krabka.challenge.stagger.ms": 60000,
}


@pytest.fixture
def client(bootstrap: str) -> Iterator[kc.Client]:
    with kc.Client(conf(bootstrap)) as c:
        yield c


def next_of_kind(w: kc.Watch, kind: str, within: float = 20.0) -> kc.WatchEvent:
    deadline = time.monotonic() + within
    seen = []
    while time.monotonic() < deadline:
        ev = w.next(timeout=max(0.1, deadline - time.monotonic()))
        if ev is None:
            continue
        if ev.kind == kind:
            return ev
        seen.append(ev.kind)
    raise AssertionError("no %s event within %.0f s (saw %s)" % (kind, within, seen))


def roster_of(c: kc.Client, role: str) -> Dict[str, kc.RosterEntry]:
    return {e.member: e for e in c.describe(role, timeout=30).roster}


def wait_registered(c: kc.Client, role: str, member: str) -> kc.RosterEntry:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        r = roster_of(c, role)
        if member in r:
            return r[member]
        time.sleep(0.05)
    raise AssertionError("%s never registered in %s" % (member, role))


# --------------------------------------------------------------------------
# Metadata
# --------------------------------------------------------------------------


@pytest.mark.kafka
def test_term_and_member_metadata_round_trip(bootstrap: str) -> None:
    role = unique("py-meta")
    term = b"addr=10.0.0.1:7000\x00\xff"  # opaque bytes, a NUL and a non-UTF-8 byte
    member_meta = b"zone=b\x00\x80"
    with kc.Client(conf(bootstrap)) as a, kc.Client(conf(bootstrap)) as b, kc.Client(conf(bootstrap)) as obs:
        w = obs.watch(role, timeout=30)
        lead = a.acquire(role, "a", timeout=30, metadata=term, member_metadata=member_meta)
        assert lead.metadata == term

        # describe: the term's metadata and the member's on its roster entry
        st = obs.describe(role, timeout=30)
        assert st.holder == "a" and st.current
        assert st.metadata == term
        assert [(e.member, e.metadata) for e in st.roster] == [("a", member_meta)]

        # a watch reports the term's metadata with the holder change
        ev = next_of_kind(w, "HOLDER_CHANGED")
        assert (ev.holder, ev.token, ev.metadata) == ("a", lead.token, term)

        # a standby advertises its own metadata (try_acquire registers it)
        res = b.try_acquire(role, "b", timeout=30, member_metadata=b"member-b")
        assert not res.won
        r = roster_of(obs, role)
        assert r["b"].metadata == b"member-b" and r["a"].metadata == member_meta
        assert obs.describe(role, timeout=30).metadata == term  # the term's is the holder's

        # set_metadata: a renewal carrying the new value, seen by readers and
        # by the watch (LEASE_RENEWED although renewals=False)
        before = obs.describe(role, timeout=30).lease
        time.sleep(0.01)
        lead.set_metadata(b"term-a:2", timeout=30)
        assert lead.metadata == b"term-a:2"
        st = obs.describe(role, timeout=30)
        assert st.metadata == b"term-a:2" and st.token == lead.token
        assert st.lease is not None and before is not None and st.lease.granted_at > before.granted_at
        ev = next_of_kind(w, "LEASE_RENEWED")
        assert (ev.holder, ev.metadata) == ("a", b"term-a:2")

        # exactly MAX_METADATA_BYTES passes, byte for byte
        lead.set_metadata(LIMIT, timeout=30)
        assert lead.metadata == LIMIT and obs.describe(role, timeout=30).metadata == LIMIT
        assert next_of_kind(w, "LEASE_RENEWED").metadata == LIMIT

        # None removes it
        lead.set_metadata(None, timeout=30)
        assert lead.metadata is None
        assert obs.describe(role, timeout=30).metadata is None
        assert next_of_kind(w, "LEASE_RENEWED").metadata is None
        lead.resign(timeout=30)
        w.close()

        # A later acquire of the same (role, member) without metadata has
        # none: every call carries its own options.
        b.leave(role, "b", timeout=30)
        again = a.acquire(role, "a", timeout=30)
        assert again.metadata is None
        st = obs.describe(role, timeout=30)
        assert st.holder == "a" and st.metadata is None
        assert [(e.member, e.metadata) for e in st.roster] == [("a", None)]
        again.resign(timeout=30)


@pytest.mark.kafka
def test_metadata_through_the_asyncio_forms(bootstrap: str) -> None:
    role = unique("py-meta-async")
    other = unique("py-meta-async-try")

    async def main() -> None:
        async with kc.Client(conf(bootstrap)) as a, kc.Client(conf(bootstrap)) as obs:
            w = obs.watch(role, timeout=30)
            lead = await a.acquire_async(role, "a", timeout=30, metadata=b"async-term", member_metadata=b"async-member")
            assert lead.metadata == b"async-term"
            st = await obs.describe_async(role, timeout=30)
            assert st.metadata == b"async-term" and st.roster[0].metadata == b"async-member"
            kinds = []
            async for ev in w:  # the thread-free completion path
                kinds.append(ev.kind)
                if ev.kind == "HOLDER_CHANGED":
                    assert ev.metadata == b"async-term"
                    break
            await lead.set_metadata_async(b"async-term:2", timeout=30)
            async for ev in w:
                kinds.append(ev.kind)
                if ev.kind == "LEASE_RENEWED":
                    assert ev.metadata == b"async-term:2"
                    break
            w.close()
            await lead.resign_async(timeout=30)

            res = await a.try_acquire_async(other, "t", timeout=30, metadata=b"try-term", member_metadata=b"try-member")
            assert res.won and res.leadership is not None
            assert res.leadership.metadata == b"try-term"
            st = await obs.describe_async(other, timeout=30)
            assert (st.metadata, st.roster[0].metadata) == (b"try-term", b"try-member")
            await res.leadership.resign_async(timeout=30)

    asyncio.run(main())


@pytest.mark.kafka
def test_each_acquire_carries_its_own_options_not_the_clients_metadata(bootstrap: str) -> None:
    """The binding passes metadata with each call (krabka_acquire_options_t):
    what krabka_client_set_metadata stored in the client for the pair is
    not used, and concurrent calls of one member on many roles, from many
    threads and through asyncio, each win with their own metadata."""
    role = unique("py-meta-opts")
    with kc.Client(conf(bootstrap)) as a, kc.Client(conf(bootstrap)) as obs:
        ptr = a._ptr()
        r, m = role.encode(), b"a"
        buf = ctypes.create_string_buffer(256)
        assert glib.krabka_client_set_metadata(ptr, r, len(r), m, len(m), b"map-term", 8, b"map-member", 10, buf,
                                               len(buf)) == 0, buf.value
        lead = a.acquire(role, "a", timeout=30, metadata=b"mine", member_metadata=b"me")
        st = obs.describe(role, timeout=30)
        assert (lead.metadata, st.metadata, [e.metadata for e in st.roster]) == (b"mine", b"mine", [b"me"])
        lead.resign(timeout=30)
        lead = a.acquire(role, "a", timeout=30)
        st = obs.describe(role, timeout=30)
        assert (lead.metadata, st.metadata, [e.metadata for e in st.roster]) == (None, None, [None])
        lead.resign(timeout=30)

        roles = [unique("py-meta-opts-%d" % i) for i in range(6)]
        won: Dict[str, Optional[bytes]] = {}

        def take(i: int) -> None:
            res = a.try_acquire(roles[i], "a", timeout=30, metadata=b"t-%d" % i, member_metadata=b"m-%d" % i)
            assert res.leadership is not None
            won[roles[i]] = res.leadership.metadata
            res.leadership.resign(timeout=30)

        threads = [threading.Thread(target=take, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        async def take_async(i: int) -> None:
            lead = await a.acquire_async(roles[i], "a", timeout=30, metadata=b"t-%d" % i, member_metadata=b"m-%d" % i)
            won[roles[i]] = lead.metadata
            st = await obs.describe_async(roles[i], timeout=30)
            assert [e.metadata for e in st.roster] == [b"m-%d" % i]
            await lead.resign_async(timeout=30)

        async def all_async() -> None:
            await asyncio.gather(*(take_async(i) for i in range(3, 6)))

        asyncio.run(all_async())
        assert won == {roles[i]: b"t-%d" % i for i in range(6)}, won


@pytest.mark.kafka
def test_oversized_and_wrongly_typed_metadata_are_refused_before_anything_is_written(client: kc.Client) -> None:
    role = unique("py-meta-refused")
    for kw in ({"metadata": BIG}, {"member_metadata": BIG}):
        with pytest.raises(kc.InvalidArgumentError) as ei:
            client.acquire(role, "a", timeout=30, **kw)  # type: ignore[arg-type]
        assert ei.value.code == kc.ErrorCode.INVALID_ARG and "4096" in str(ei.value)
        # the error names which metadata was refused
        assert ("member metadata" in str(ei.value)) == ("member_metadata" in kw), str(ei.value)
        with pytest.raises(kc.InvalidArgumentError):
            client.try_acquire(role, "a", timeout=30, **kw)  # type: ignore[arg-type]

        async def via_async() -> None:
            await client.acquire_async(role, "a", timeout=30, **kw)  # type: ignore[arg-type]

        with pytest.raises(kc.InvalidArgumentError):
            asyncio.run(via_async())
    for what in ("metadata", "member_metadata"):
        for wrong in ("text", 7, [1, 2]):
            with pytest.raises(TypeError, match=what):
                client.acquire(role, "a", timeout=30, **{what: wrong})  # type: ignore[arg-type]
            with pytest.raises(TypeError, match=what):
                client.try_acquire(role, "a", timeout=30, **{what: wrong})  # type: ignore[arg-type]
    # Nothing reached the coordination topic: no registration, no lease.
    st = client.describe(role, timeout=30)
    assert st.holder is None and st.lease is None and st.roster == () and st.removed == 0

    # set_metadata: refused before the renewal is written
    lead = client.acquire(role, "a", timeout=30, metadata=b"kept")
    before = client.describe(role, timeout=30)
    time.sleep(0.01)
    with pytest.raises(kc.InvalidArgumentError, match="4096"):
        lead.set_metadata(BIG, timeout=30)
    with pytest.raises(TypeError, match="data"):
        lead.set_metadata("text", timeout=30)  # type: ignore[arg-type]
    assert lead.metadata == b"kept"
    after = client.describe(role, timeout=30)
    assert after.lease == before.lease and after.metadata == b"kept"
    assert lead.active
    lead.resign(timeout=30)


# --------------------------------------------------------------------------
# Named successor
# --------------------------------------------------------------------------


class Waiter(threading.Thread):
    """client.acquire on a thread; result or error kept."""

    def __init__(self, client: kc.Client, role: str, member: str) -> None:
        super().__init__(daemon=True, name="acquire-%s" % member)
        self.client, self.role, self.member = client, role, member
        self.lead: Optional[kc.Leadership] = None
        self.error: Optional[BaseException] = None
        self.won_at: Optional[float] = None

    def run(self) -> None:
        try:
            self.lead = self.client.acquire(self.role, self.member, timeout=150)
            self.won_at = time.monotonic()
        except BaseException as e:  # handed to the test
            self.error = e


@pytest.mark.kafka
def test_resign_to_a_named_successor_while_the_first_standby_waits(bootstrap: str) -> None:
    role = unique("py-successor")
    with kc.Client(conf(bootstrap, **SLOW)) as ca, kc.Client(conf(bootstrap, **SLOW)) as cb, \
            kc.Client(conf(bootstrap, **SLOW)) as cc:
        a = ca.acquire(role, "a", timeout=30)
        wb = Waiter(cb, role, "b")
        wb.start()
        rb = wait_registered(ca, role, "b")
        wc = Waiter(cc, role, "c")
        wc.start()
        rc = wait_registered(ca, role, "c")
        # b is the first standby (rank 0 of the standbys), c the second
        assert rb.rank < rc.rank, (rb, rc)

        with pytest.raises(TypeError, match="successor"):
            a.resign(timeout=30, successor=7)  # type: ignore[arg-type]
        with pytest.raises(kc.DataError):
            a.resign(timeout=30, successor="")
        assert a.active  # the refused calls wrote nothing

        t0 = time.monotonic()
        a.resign(timeout=30, successor="c")
        assert a.state == kc.LeadershipState.RESIGNED
        wc.join(30)
        assert not wc.is_alive() and wc.error is None and wc.lead is not None, wc.error
        assert wc.won_at is not None and wc.won_at - t0 < 30
        assert wc.lead.token.supersedes(a.token)

        # b neither won nor gave up, and it was not pruned by c's win
        time.sleep(2)
        assert wb.is_alive() and wb.lead is None and wb.error is None
        st = ca.describe(role, timeout=30)
        assert st.holder == "c" and st.current and st.token == wc.lead.token
        assert sorted(e.member for e in st.roster) == ["b", "c"], st.roster
        wc.lead.close()
        a.close()
    # closing b's client ends its waiting acquire
    wb.join(60)
    assert not wb.is_alive() and isinstance(wb.error, kc.ClosedError), wb.error


# --------------------------------------------------------------------------
# Guarded writes with headers
# --------------------------------------------------------------------------


def user_headers(rec: Dict[str, Any]) -> Dict[str, str]:
    return {k: v for k, v in rec["headers"].items() if k != "krabka.token"}


@pytest.mark.kafka
@pytest.mark.parametrize("cluster", ["tv2", "tv1"])
def test_guarded_writes_carry_user_headers_and_the_token(
    cluster: str, request: pytest.FixtureRequest, kafka_tools: KafkaTools
) -> None:
    addr = request.getfixturevalue("bootstrap" if cluster == "tv2" else "bootstrap_tv1")
    topic = unique("py-headers-%s" % cluster)
    kafka_tools.create_topic(addr, topic, 2)
    role = unique("py-headers-%s" % cluster)
    with kc.Client(conf(addr)) as c:
        lead = c.acquire(role, "writer", timeout=60)
        lead.produce(topic, b"plain", key=b"k", partition=0, timeout=30)
        lead.produce(topic, b"dict", key=b"k", partition=0, timeout=30,
                     headers={"trace": b"t-1", "source": b"py", "empty": b""})
        lead.produce_many(
            [
                (topic, b"many-0", b"k", 0, [("n", b"0"), ("bin", b"a\x00b")]),
                (topic, b"many-1", b"k", 1),  # no headers
                (topic, b"many-2", b"k", 1, {"n": b"2"}),
            ],
            timeout=30,
        )

        async def via_async() -> None:
            await lead.produce_async(topic, b"async", partition=0, timeout=30, headers=[("via", bytearray(b"asyncio"))])

        asyncio.run(via_async())

        # Reserved names are the library's INVALID_ARG; wrong types TypeError.
        for reserved in ({"krabka.token": b"1:1"}, [("ok", b"1"), ("krabka.meta", b"x")]):
            with pytest.raises(kc.InvalidArgumentError, match="reserved"):
                lead.produce(topic, b"reserved", partition=0, timeout=30, headers=reserved)
        with pytest.raises(kc.InvalidArgumentError, match="reserved"):
            lead.produce_many([(topic, b"reserved", None, 0), (topic, b"reserved", None, 0, {"krabka.x": b""})], timeout=30)
        for wrong, what in (
            ({b"name": b"v"}, "name must be str"),
            ({"name": "text"}, "must be bytes"),
            ({"name": None}, "must be bytes"),
            ([("only-name",)], "pair"),
            ("name=v", "dict of str to bytes"),
            (b"name", "dict of str to bytes"),
        ):
            with pytest.raises(TypeError, match=what):
                lead.produce(topic, b"wrong", partition=0, timeout=30, headers=wrong)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="NUL"):
            lead.produce(topic, b"wrong", partition=0, timeout=30, headers={"a\x00b": b"v"})
        with pytest.raises(TypeError, match="message 0"):
            lead.produce_many([(topic, b"wrong", None, 0, {"n": 1})], timeout=30)  # type: ignore[list-item]
        token = lead.token
        assert lead.active
        lead.resign(timeout=30)

    got = kafka_tools.read(addr, topic)
    by_value = {r["value"]: r for r in got}
    assert sorted(by_value) == sorted(["plain", "dict", "many-0", "many-1", "many-2", "async"]), [r["value"] for r in got]
    assert len(got) == 6  # nothing refused reached the log
    expected = {
        "plain": {},
        "dict": {"trace": "t-1", "source": "py", "empty": ""},
        "many-0": {"n": "0", "bin": "a\x00b"},
        "many-1": {},
        "many-2": {"n": "2"},
        "async": {"via": "asyncio"},
    }
    v = kc.Verifier()
    for value, want in expected.items():
        rec = by_value[value]
        assert user_headers(rec) == want, (value, rec["headers"])
        # krabka.token on every guarded write: the leadership's token, which
        # is also the batch's producer id and epoch
        assert rec["headers"].get("krabka.token") == str(token), rec
        batch = kc.FencingToken(rec["producer_id"], rec["producer_epoch"])
        assert batch == token, (value, batch, token)
        assert v.judge(role, rec["headers"]["krabka.token"].encode(), batch) is kc.Verdict.OK
    assert v.highest(role) == token
    v.close()


# --------------------------------------------------------------------------
# Verifier (pure)
# --------------------------------------------------------------------------


def test_verifier_verdicts() -> None:
    T = kc.FencingToken
    with kc.Verifier() as v:
        assert v.highest("r") is None
        assert v.judge("r", b"7:1", T(7, 1)) is kc.Verdict.OK
        assert v.highest("r") == T(7, 1)
        assert v.judge("r", b"7:2", T(7, 2)) is kc.Verdict.OK
        assert v.highest("r") == T(7, 2)
        # an older batch, correctly stamped: STALE; the highest stays
        assert v.judge("r", b"7:1", T(7, 1)) is kc.Verdict.STALE
        assert v.judge("r", b"6:9", T(6, 9)) is kc.Verdict.STALE  # producer id first
        assert v.highest("r") == T(7, 2)
        # a header that is not the batch's token: MISMATCH, before STALE
        assert v.judge("r", b"7:2", T(7, 1)) is kc.Verdict.MISMATCH
        assert v.judge("r", b"not-a-token", T(7, 3)) is kc.Verdict.MISMATCH
        assert v.judge("r", b"", T(7, 3)) is kc.Verdict.MISMATCH  # empty is a header, not none
        assert v.judge("r", bytearray(b"7:3"), T(7, 4)) is kc.Verdict.MISMATCH
        assert v.highest("r") == T(7, 2)  # neither MISMATCH raised it
        # no header: UNSTAMPED, but an older batch is STALE first
        assert v.judge("r", None, T(7, 1)) is kc.Verdict.STALE
        assert v.judge("r", None, T(7, 5)) is kc.Verdict.UNSTAMPED
        assert v.highest("r") == T(7, 5)  # UNSTAMPED counts for staleness
        assert v.judge("r", memoryview(b"7:4"), T(7, 4)) is kc.Verdict.STALE
        # scopes are independent
        assert v.judge("other", b"7:1", T(7, 1)) is kc.Verdict.OK
        assert v.highest("other") == T(7, 1) and v.highest("r") == T(7, 5)
        assert v.judge("ünï", b"1:0", T(1, 0)) is kc.Verdict.OK and v.highest("ünï") == T(1, 0)
        assert v.highest("unseen") is None
    assert [int(x) for x in kc.Verdict] == [0, 1, 2, 3]
    assert [x.name for x in kc.Verdict] == ["OK", "STALE", "MISMATCH", "UNSTAMPED"]


def test_verifier_misuse() -> None:
    T = kc.FencingToken
    v = kc.Verifier()
    with pytest.raises(TypeError, match="scope"):
        v.judge(b"r", b"1:1", T(1, 1))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="scope"):
        v.highest(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="header"):
        v.judge("r", "1:1", T(1, 1))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="batch"):
        v.judge("r", b"1:1", (1, 1))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="batch"):
        v.judge("r", b"1:1", "1:1")  # type: ignore[arg-type]
    assert v.highest("r") is None  # the refused calls judged nothing
    assert not v.closed
    v.close()
    v.close()  # idempotent
    assert v.closed
    with pytest.raises(kc.ClosedError):
        v.judge("r", b"1:1", T(1, 1))
    with pytest.raises(kc.ClosedError):
        v.highest("r")


def test_verifiers_are_independent_and_shareable_between_threads() -> None:
    T = kc.FencingToken
    a, b = kc.Verifier(), kc.Verifier()
    assert a.judge("r", None, T(5, 5)) is kc.Verdict.UNSTAMPED
    assert b.highest("r") is None
    stale: List[kc.Verdict] = []

    def work(base: int) -> None:
        for i in range(200):
            tok = T(10, base + i)
            a.judge("t", str(tok).encode(), tok)
        stale.append(a.judge("t", b"10:0", T(10, 0)))

    ts = [threading.Thread(target=work, args=(k * 200,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert a.highest("t") == T(10, 799)
    assert stale == [kc.Verdict.STALE] * 4
    a.close()
    b.close()


# --------------------------------------------------------------------------
# The binding's declarations against include/krabka_coord.h
# --------------------------------------------------------------------------


def _header_prototypes() -> Dict[str, int]:
    """Function name -> number of parameters, from the public header."""
    text = (REPO / "include" / "krabka_coord.h").read_text()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    protos: Dict[str, int] = {}
    for m in re.finditer(r"\b(krabka_\w+)\s*\(([^;{}()]*(?:\([^()]*\)[^;{}()]*)*)\)\s*;", text):
        name, params = m.group(1), m.group(2).strip()
        protos[name] = 0 if params in ("", "void") else params.count(",") + 1
    return protos


def test_every_declared_function_matches_the_header() -> None:
    protos = _header_prototypes()
    sigs = _abi.PROTOTYPES
    for name in ("krabka_client_set_metadata", "krabka_leadership_produce_async", "krabka_verifier_judge"):
        assert name in protos, "the header parse missed %s" % name
    for name, (_restype, argtypes) in sigs.items():
        assert name in protos, "%s is declared by the binding but not in krabka_coord.h" % name
        assert len(argtypes) == protos[name], "%s: %d parameters in the binding, %d in the header" % (
            name, len(argtypes), protos[name])
    # every function of the header is declared, those of the record-header
    # section included
    assert sorted(protos) == sorted(sigs)
    section = [n for n in protos if re.search(r"metadata|resign_to|verifier", n)]
    assert sorted(section) == sorted(n for n in sigs if n in section), section


def _header_define(name: str) -> int:
    text = (REPO / "include" / "krabka_coord.h").read_text()
    m = re.search(r"#define\s+%s\s+(\d+)" % name, text)
    assert m, name
    return int(m.group(1))


def _header_enum(name: str) -> int:
    text = (REPO / "include" / "krabka_coord.h").read_text()
    m = re.search(r"\b%s\s*=\s*(\d+)" % name, text)
    assert m, name
    return int(m.group(1))


def test_constants_and_the_header_struct_match_the_header() -> None:
    assert kc.MAX_METADATA_BYTES == _abi.MAX_METADATA_BYTES == _header_define("KRABKA_MAX_METADATA_BYTES") == 4096
    for v in kc.Verdict:
        assert int(v) == _header_enum("KRABKA_VERDICT_%s" % v.name)
    # krabka_header_t { const char *key; const uint8_t *value; size_t value_len; }
    H = _abi.Header
    assert [f[0] for f in H._fields_] == ["key", "value", "value_len"]
    p = ctypes.sizeof(ctypes.c_void_p)
    assert (H.key.offset, H.value.offset, H.value_len.offset) == (0, p, 2 * p)
    assert ctypes.sizeof(H) == 3 * p
