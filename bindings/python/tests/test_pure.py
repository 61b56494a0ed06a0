"""The pure API read as a specification: tokens, names, partitions and the
record format, and how their errors look from Python."""

from __future__ import annotations

import dataclasses

import pytest

import krabka_coord as kc
from krabka_coord import FencingToken


# -- fencing tokens ---------------------------------------------------------


def test_tokens_order_by_producer_id_first_then_epoch() -> None:
    old = FencingToken(4, 32767)
    new = FencingToken(5, 0)
    assert new > old and old < new and new >= old and old <= new
    assert new.supersedes(old) and not old.supersedes(new)
    assert new.compare(old) == 1 and old.compare(new) == -1 and new.compare(FencingToken(5, 0)) == 0
    assert sorted([FencingToken(5, 1), FencingToken(4, 9), FencingToken(5, 0)]) == [
        FencingToken(4, 9),
        FencingToken(5, 0),
        FencingToken(5, 1),
    ]


def test_no_epoch_ranks_below_every_minted_token_and_equals_only_itself() -> None:
    assert kc.NO_EPOCH == FencingToken(-1, -1)
    assert kc.NO_EPOCH.is_no_epoch
    assert kc.NO_EPOCH < FencingToken(0, 0)
    assert not kc.NO_EPOCH.supersedes(kc.NO_EPOCH)
    assert str(kc.NO_EPOCH) == "-1:-1"


def test_token_text_form_round_trips() -> None:
    t = FencingToken.parse("4242:7")
    assert t == FencingToken(4242, 7)
    assert str(t) == "4242:7" == kc.format_token(t)
    assert kc.parse_token(b"9223372036854775807:32767") == FencingToken(2**63 - 1, 32767)


@pytest.mark.parametrize("text, category", [("4242", "token_form"), ("1:2:3", "token_form"), ("1:40000", "token_form"), ("-1:3", "negative_token"), ("", "token_form")])
def test_bad_token_text_raises_a_data_error_with_its_category(text: str, category: str) -> None:
    with pytest.raises(kc.DataError) as ei:
        FencingToken.parse(text)
    assert ei.value.category == category
    assert isinstance(ei.value, ValueError)
    assert ei.value.code in (kc.ErrorCode.TOKEN_FORM, kc.ErrorCode.NEGATIVE_TOKEN)
    assert ei.value.reason


def test_tokens_are_frozen_hashable_values() -> None:
    t = FencingToken(1, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.producer_id = 3  # type: ignore[misc]
    assert {t: "x"}[FencingToken(1, 2)] == "x"
    assert repr(t) == "FencingToken(producer_id=1, producer_epoch=2)"


def test_building_a_token_from_values_requires_non_negative_halves() -> None:
    assert FencingToken.of(0, 0) == FencingToken(0, 0)
    with pytest.raises(kc.DataError) as ei:
        FencingToken.of(-1, -1)
    assert ei.value.category == "negative_token"


def test_token_halves_must_fit_their_widths_and_be_ints() -> None:
    with pytest.raises(ValueError):
        FencingToken(0, 32768)
    with pytest.raises(ValueError):
        FencingToken(2**63, 0)
    with pytest.raises(TypeError):
        FencingToken("1", 2)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        FencingToken(True, 2)
    with pytest.raises(TypeError):
        FencingToken(1, 2) < (1, 3)  # type: ignore[operator]
    with pytest.raises(TypeError):
        FencingToken(1, 2).supersedes("1:1")  # type: ignore[arg-type]


# -- names, murmur2, partitions ---------------------------------------------


def test_names_are_1_to_249_bytes_of_utf8() -> None:
    assert kc.validate_role("controller") == "controller"
    assert kc.validate_member("é" * 124) == "é" * 124  # 248 bytes
    assert kc.validate_role(b"a\x00b") == "a\x00b"
    for bad, cat in [("", "empty_role"), ("x" * 250, "role_too_long"), ("é" * 125, "role_too_long"), (b"\xff", "invalid_utf8"), ("\ud800", "invalid_utf8")]:
        with pytest.raises(kc.DataError) as ei:
            kc.validate_role(bad)
        assert ei.value.category == cat, bad
    with pytest.raises(kc.DataError) as ei:
        kc.validate_member("")
    assert ei.value.category == "empty_member"


def test_murmur2_and_role_partition_follow_kafka() -> None:
    # Kafka's Utils.murmur2 of "controller" and the partition among 16.
    h = kc.murmur2(b"controller")
    assert h == kc.murmur2("controller")
    assert kc.role_partition("controller", 16) == (h & 0x7FFFFFFF) % 16
    assert kc.murmur2(b"") == kc.murmur2(bytearray())
    with pytest.raises(kc.DataError) as ei:
        kc.role_partition("controller", 0)
    assert ei.value.category == "invalid_partition_count"
    with pytest.raises(TypeError):
        kc.role_partition("controller", 16.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        kc.role_partition("controller", 2**31)


# -- record format -----------------------------------------------------------



def test_golden_records_encode_and_decode() -> None:
    key = kc.Key.registration("controller", "node-1")
    raw = kc.encode_key(key)
    assert raw.hex() == "00000000000a636f6e74726f6c6c657200066e6f64652d31"
    assert kc.decode_key(raw) == key
    lk = kc.encode_key(kc.Key(kc.Kind.LEASE, "controller", "ignored"))
    assert kc.decode_key(lk) == kc.Key.lease("controller")
    reg = kc.Registration("node-1", 1700000000000)
    assert kc.decode_registration(kc.encode_registration(reg)) == reg
    lease = kc.Lease("node-1", FencingToken(4242, 7), 1700000000000, 1700000030000)
    enc = kc.encode_lease(lease)
    assert kc.decode_lease(enc) == lease


def test_decoders_report_the_category_of_bad_bytes() -> None:
    cases = [
        (kc.decode_key, b"", "truncated"),
        (kc.decode_key, bytes.fromhex("00010000000a636f6e74726f6c6c65720000"), "unsupported_version"),
        (kc.decode_key, bytes.fromhex("00000002000a636f6e74726f6c6c65720000"), "unknown_kind"),
        (kc.decode_key, bytes.fromhex("00000001000a636f6e74726f6c6c657200066e6f64652d31"), "lease_key_has_member"),
        (kc.decode_registration, bytes.fromhex("000000066e6f64652d31000000000000000000"), "trailing_bytes"),
    ]
    for fn, data, cat in cases:
        with pytest.raises(kc.DataError) as ei:
            fn(data)
        assert ei.value.category == cat, (fn.__name__, data.hex())
        assert ei.value.name == cat.upper()
        assert not ei.value.retriable and not ei.value.fatal


def test_tombstones_are_null_or_empty_values() -> None:
    assert kc.is_tombstone(None) and kc.is_tombstone(b"")
    assert not kc.is_tombstone(b"\x00")


def test_encoders_refuse_bad_names_with_the_rule_they_break() -> None:
    with pytest.raises(kc.DataError) as ei:
        kc.encode_key(kc.Key.registration("x" * 300, "m"))
    assert ei.value.category == "role_too_long"
    with pytest.raises(kc.DataError) as ei:
        kc.encode_registration(kc.Registration("", 0))
    assert ei.value.category == "empty_member"
    with pytest.raises(TypeError):
        kc.encode_key("controller")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        kc.decode_key(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        kc.encode_registration(kc.Registration("m", 2**63))


def test_token_form_message_names_its_category_once() -> None:
    with pytest.raises(kc.DataError) as info:
        kc.parse_token("12:x")
    assert str(info.value).lower().count("token_form") == 1, str(info.value)


def test_errors_carry_code_name_flags_and_reason() -> None:
    try:
        kc.role_partition("", 16)
    except kc.KrabkaError as e:
        assert (e.code, e.name, e.category) == (17, "EMPTY_ROLE", "empty_role")  # type: ignore[attr-defined]
        # The library's reason names the category once (issue 16); the
        # binding does not add it again.
        assert str(e).startswith("krabka: ") and str(e).lower().count("empty_role") == 1, str(e)
    else:
        pytest.fail("no error")
    assert issubclass(kc.KrabkaTimeoutError, TimeoutError) and issubclass(kc.KrabkaTimeoutError, kc.KrabkaError)
    assert issubclass(kc.FencedError, kc.KrabkaError) and issubclass(kc.LeaseExpiredError, kc.KrabkaError)
    fenced = kc.FencedError(30)
    assert (fenced.name, fenced.fatal, fenced.retriable) == ("FENCED", True, False)
    assert kc.KrabkaTimeoutError(33).retriable


def test_the_loaded_library_speaks_abi_2() -> None:
    assert kc.ABI_VERSION == 2
    assert kc._native.lib.krabka_abi_version() == 2
    assert kc.library_version() == "2.0.0"
