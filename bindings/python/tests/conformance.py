#!/usr/bin/env python3
"""Conformance runner for the Python binding.

    python3 bindings/python/tests/conformance.py [--json] [-v] [files...]

Without file arguments it runs tests/conformance/vectors/*.json of the
repository. It prints one "FAIL <id>: ..." line per failed vector, the
"not run" list, and finally "N passed, N failed"; with --json it prints
instead one JSON object of per-group counts,
{"group": {"passed": n, "failed": m, "not_run": k}}. Exit status: 1 when a
vector failed, 2 when the files could not be read.

The runner holds no expected values: everything is read from the vectors.
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
if "krabka_coord" not in sys.modules:
    src = HERE.parent / "src"
    if src.is_dir() and str(src) not in sys.path:
        sys.path.insert(0, str(src))

import krabka_coord as kc  # noqa: E402

# Operations the binding cannot express: the C API has no fold, no rules and
# no lease-clock functions, and no encoder for a tombstone (a tombstone is
# written as a null value). Written down here, never computed from failures.
NOT_RUN_OPS = [
    "encode_tombstone",
    "fold",
    "fold_raw",
    "rank",
    "evaluate",
    "lease_defaults",
    "lease_config",
    "lease_grant",
    "lease_live_at",
    "lease_remaining_at",
    "lease_renew_at",
    "lease_renew_due_at",
    "lease_challenge_delay",
    "lease_challenge_at",
    "lease_expires_at",
]

Vector = Dict[str, Any]


class Mismatch(Exception):
    pass


# --------------------------------------------------------------------------
# Input helpers
# --------------------------------------------------------------------------


def hexbytes(h: Optional[str]) -> Optional[bytes]:
    return None if h is None else bytes.fromhex(h)


def text_bytes(obj: Dict[str, Any], field: str) -> bytes:
    """The bytes of a text field, preferring its _hex companion."""
    hx = obj.get(field + "_hex")
    if hx is not None:
        return bytes.fromhex(hx)
    val = obj[field]
    if val is None:
        raise Mismatch("no bytes for %s" % field)
    return val.encode("utf-8")


def i64(v: Any) -> int:
    return int(v)


def token(obj: Dict[str, Any]) -> kc.FencingToken:
    return kc.FencingToken(i64(obj["producer_id"]), int(obj["producer_epoch"]))


def token_json(t: kc.FencingToken) -> Dict[str, Any]:
    return {"producer_id": str(t.producer_id), "producer_epoch": t.producer_epoch}


def build_part(part: str, f: Dict[str, Any]) -> Any:
    if part == "key":
        member = text_bytes(f, "member") if "member" in f else b""
        return kc.Key(kc.Kind(int(f["kind"])) if int(f["kind"]) in (0, 1) else int(f["kind"]), text_bytes(f, "role"), member)  # type: ignore[arg-type]
    if part == "registration_value":
        return kc.Registration(text_bytes(f, "member"), i64(f["registered_at"]))  # type: ignore[arg-type]
    if part == "lease_value":
        return kc.Lease(
            text_bytes(f, "member"),  # type: ignore[arg-type]
            kc.FencingToken(i64(f["producer_id"]), int(f["producer_epoch"])),
            i64(f["granted_at"]),
            i64(f["deadline"]),
        )
    raise Mismatch("unknown part %r" % part)


ENCODERS: Dict[str, Callable[[Any], bytes]] = {
    "key": kc.encode_key,
    "registration_value": kc.encode_registration,
    "lease_value": kc.encode_lease,
}
DECODERS: Dict[str, Callable[[bytes], Any]] = {
    "key": kc.decode_key,
    "registration_value": kc.decode_registration,
    "lease_value": kc.decode_lease,
}


def fields_of(part: str, value: Any) -> Dict[str, Any]:
    """Decoded value -> the vector's field form (text fields as UTF-8 bytes)."""
    if part == "key":
        return {"kind": int(value.kind), "role": value.role.encode(), "member": value.member.encode()}
    if part == "registration_value":
        return {"member": value.member.encode(), "registered_at": value.registered_at}
    return {
        "member": value.member.encode(),
        "producer_id": value.token.producer_id,
        "producer_epoch": value.token.producer_epoch,
        "granted_at": value.granted_at,
        "deadline": value.deadline,
    }


def expected_fields(part: str, f: Dict[str, Any]) -> Dict[str, Any]:
    if part == "key":
        return {"kind": int(f["kind"]), "role": text_bytes(f, "role"), "member": text_bytes(f, "member") if "member" in f else b""}
    if part == "registration_value":
        return {"member": text_bytes(f, "member"), "registered_at": i64(f["registered_at"])}
    return {
        "member": text_bytes(f, "member"),
        "producer_id": i64(f["producer_id"]),
        "producer_epoch": int(f["producer_epoch"]),
        "granted_at": i64(f["granted_at"]),
        "deadline": i64(f["deadline"]),
    }


# --------------------------------------------------------------------------
# Expectation checking
# --------------------------------------------------------------------------


def check_failure(v: Vector, fn: Callable[[], Any]) -> Optional[str]:
    """Run fn; when expect.ok is false it must raise a DataError of an
    allowed category. Returns a problem or None. When ok is true, returns
    fn's result wrapped for the caller via an exception-free path."""
    exp = v["expect"]
    allowed = [exp["category"]] if exp.get("category") else list(exp.get("categories_allowed") or [])
    try:
        got = fn()
    except kc.DataError as e:
        if e.category in allowed:
            return None
        return "failed with %s (%s), expected %s" % (e.category, e.reason, "/".join(allowed))
    return "succeeded with %r, expected failure %s" % (got, "/".join(allowed))


def eq(what: str, got: Any, want: Any) -> Optional[str]:
    if got != want:
        return "%s: got %r, expected %r" % (what, got, want)
    return None


def run_codec(v: Vector) -> Optional[str]:
    part, direction, exp = v["part"], v["direction"], v["expect"]
    if not exp["ok"]:
        if direction == "encode":
            return check_failure(v, lambda: ENCODERS[part](build_part(part, v["fields"])))
        return check_failure(v, lambda: DECODERS[part](bytes.fromhex(v["hex"])))
    if direction in ("both", "encode"):
        got = ENCODERS[part](build_part(part, v["fields"])).hex()
        if got != exp["hex"]:
            return "encode gave %s, expected %s" % (got, exp["hex"])
    if direction in ("both", "decode"):
        raw = bytes.fromhex(v["hex"])
        dec = DECODERS[part](raw)
        want = expected_fields(part, exp["fields"])
        got_f = fields_of(part, dec)
        if got_f != want:
            return "decode gave %r, expected %r" % (got_f, want)
        again = ENCODERS[part](dec)
        if again != raw:
            return "re-encode gave %s, expected %s" % (again.hex(), raw.hex())
    return None


def run_decode_failure(v: Vector) -> Optional[str]:
    return check_failure(v, lambda: DECODERS[v["part"]](bytes.fromhex(v["hex"])))


def run_is_tombstone(v: Vector) -> Optional[str]:
    return eq("tombstone", kc.is_tombstone(hexbytes(v["value_hex"])), v["expect"]["tombstone"])


def run_read_value(v: Vector) -> Optional[str]:
    part, exp = v["part"], v["expect"]
    raw = hexbytes(v["value_hex"])

    def read() -> Any:
        if kc.is_tombstone(raw):
            return None
        return DECODERS[part](raw)  # type: ignore[arg-type]

    if not exp["ok"]:
        return check_failure(v, read)
    got = read()
    if got is None:
        return eq("tombstone", True, exp["tombstone"])
    if exp["tombstone"]:
        return "decoded %r, expected a tombstone" % (got,)
    return eq("fields", fields_of(part, got), expected_fields(part, exp["fields"]))


def run_validate(v: Vector, fn: Callable[[bytes], str]) -> Optional[str]:
    raw = text_bytes(v, "name")
    if not v["expect"]["ok"]:
        return check_failure(v, lambda: fn(raw))
    got = fn(raw)
    return eq("name", got.encode("utf-8", "surrogateescape"), raw)


def run_murmur2(v: Vector) -> Optional[str]:
    return eq("murmur2", kc.murmur2(text_bytes(v, "key")), v["expect"]["murmur2"])


def run_partition(v: Vector) -> Optional[str]:
    raw = text_bytes(v, "role")
    n = int(v["partitions"])
    if not v["expect"]["ok"]:
        return check_failure(v, lambda: kc.role_partition(raw, n))
    return eq("partition", kc.role_partition(raw, n), v["expect"]["partition"])


def run_token_compare(v: Vector) -> Optional[str]:
    a, b = token(v["left"]), token(v["right"])
    exp = v["expect"]
    return (
        eq("compare", a.compare(b), exp["compare"])
        or eq("supersedes", a.supersedes(b), exp["supersedes"])
        or eq("operators", (a < b, a == b, a > b), (exp["compare"] < 0, exp["compare"] == 0, exp["compare"] > 0))
    )


def run_token_validate(v: Vector) -> Optional[str]:
    t = v["token"]
    build = lambda: kc.FencingToken.of(i64(t["producer_id"]), int(t["producer_epoch"]))  # noqa: E731
    if not v["expect"]["ok"]:
        return check_failure(v, build)
    return eq("token", token_json(build()), {"producer_id": str(i64(t["producer_id"])), "producer_epoch": int(t["producer_epoch"])})


def run_token_format(v: Vector) -> Optional[str]:
    t = token(v["token"])
    return eq("text", str(t), v["expect"]["text"]) or eq("format_token", kc.format_token(t), v["expect"]["text"])


def run_token_parse(v: Vector) -> Optional[str]:
    raw = text_bytes(v, "text")
    if not v["expect"]["ok"]:
        return check_failure(v, lambda: kc.FencingToken.parse(raw))
    got = kc.FencingToken.parse(raw)
    return eq("token", got, token(v["expect"]["token"]))


OPS: Dict[str, Callable[[Vector], Optional[str]]] = {
    "codec": run_codec,
    "decode_failure": run_decode_failure,
    "is_tombstone": run_is_tombstone,
    "read_value": run_read_value,
    "validate_role": lambda v: run_validate(v, kc.validate_role),
    "validate_member": lambda v: run_validate(v, kc.validate_member),
    "murmur2": run_murmur2,
    "partition": run_partition,
    "token_compare": run_token_compare,
    "token_validate": run_token_validate,
    "token_format": run_token_format,
    "token_parse": run_token_parse,
}


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


def run_files(files: List[str], verbose: bool = False) -> Tuple[Dict[str, Dict[str, int]], List[str], Dict[str, int]]:
    groups: Dict[str, Dict[str, int]] = {}
    failures: List[str] = []
    not_run: Dict[str, int] = {}
    for path in files:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        g = groups.setdefault(doc["group"], {"passed": 0, "failed": 0, "not_run": 0})
        for v in doc["vectors"]:
            op = v["op"]
            if op in NOT_RUN_OPS:
                g["not_run"] += 1
                not_run[op] = not_run.get(op, 0) + 1
                continue
            try:
                fn = OPS[op]
            except KeyError:
                problem: Optional[str] = "unknown op %r" % op
            else:
                try:
                    problem = fn(v)
                except Exception as e:  # a crash is a failure of the vector
                    problem = "raised %s: %s" % (type(e).__name__, e)
            if problem is None:
                g["passed"] += 1
                if verbose:
                    print("ok %s" % v["id"], file=sys.stderr)
            else:
                g["failed"] += 1
                failures.append("FAIL %s: %s" % (v["id"], problem))
    return groups, failures, not_run


def default_files() -> List[str]:
    return sorted(glob.glob(str(REPO / "tests" / "conformance" / "vectors" / "*.json")))


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="print per-group counts as JSON instead of the text report")
    ap.add_argument("-v", "--verbose", action="store_true", help="also name passing vectors (on stderr)")
    ap.add_argument("files", nargs="*", help="vector files (default: tests/conformance/vectors/*.json)")
    args = ap.parse_args(argv)
    files = args.files or default_files()
    if not files:
        print("conformance.py: no vector files found", file=sys.stderr)
        return 2
    try:
        groups, failures, not_run = run_files(files, args.verbose)
    except (OSError, ValueError, KeyError) as e:
        print("conformance.py: cannot read vectors: %s" % e, file=sys.stderr)
        return 2
    passed = sum(g["passed"] for g in groups.values())
    failed = sum(g["failed"] for g in groups.values())
    if args.json:
        for line in failures:
            print(line, file=sys.stderr)
        print(json.dumps(groups, sort_keys=True))
    else:
        for line in failures:
            print(line)
        if not_run:
            print("not run: " + ", ".join("%s (%d)" % (op, not_run[op]) for op in NOT_RUN_OPS if op in not_run))
        print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
