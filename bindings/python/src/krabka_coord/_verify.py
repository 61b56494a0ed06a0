"""The verifier of consumed guarded writes (docs/PROTOCOL.md 11.5): does a
record carry the token its batch was written with, and is that token not
older than one already seen?"""

from __future__ import annotations

import ctypes
from typing import Any, Optional

from . import _abi
from ._args import Bytes
from ._errors import ClosedError, ErrorCode, raise_for
from ._native import Handle, lib
from ._values import FencingToken

__all__ = ["Verdict", "Verifier"]

#: krabka_verdict_t, the judgement of one consumed record: OK (krabka.token
#: names the record batch's producer id and epoch, not older than the
#: highest seen for the scope), STALE (the batch's token is older than the
#: highest seen: a deposed holder's write landed after a newer one's),
#: MISMATCH (krabka.token is not a token, or not the batch's: a copied
#: header), UNSTAMPED (no krabka.token: written outside the library, or with
#: krabka.produce.token.header=false; its batch still counts for staleness).
Verdict = _abi.Verdict


def _scope_bytes(scope: object) -> bytes:
    if not isinstance(scope, str):
        raise TypeError("scope must be str, not %s" % type(scope).__name__)
    return scope.encode("utf-8")


class Verifier:
    """Judges consumed guarded writes and keeps the highest token seen per
    scope (a role, or however the consumer groups its writers). Needs no
    client and no broker; safe to share between threads::

        with krabka_coord.Verifier() as v:
            for rec in records:        # from any Kafka consumer
                verdict = v.judge("controller", rec.headers.get("krabka.token"),
                                  krabka_coord.FencingToken(rec.producer_id, rec.producer_epoch))
                if verdict is not krabka_coord.Verdict.OK: ...

    judge() checks, in this order: MISMATCH (the header is not the batch's
    token), STALE (the batch's token is older than the scope's highest),
    UNSTAMPED (no header), else OK. A record neither MISMATCH nor STALE
    raises the scope's highest token.
    """

    def __init__(self) -> None:
        out = ctypes.c_void_p()
        raise_for(lib.krabka_verifier_new(ctypes.byref(out)))
        self._h = Handle(out.value, lib.krabka_verifier_destroy)  # type: ignore[arg-type]

    def _ptr(self) -> int:
        p = self._h.get()
        if p is None:
            raise ClosedError(ErrorCode.CLOSED, "this Verifier was closed")
        return p

    def judge(self, scope: str, header: Optional[Bytes], batch: FencingToken) -> Verdict:
        """The verdict on one record of `scope`: `header` is the value of its
        krabka.token header (bytes; None when it has none), `batch` the
        producer id and epoch of its record batch. Never blocks."""
        s = _scope_bytes(scope)
        if header is not None and not isinstance(header, (bytes, bytearray, memoryview)):
            raise TypeError("header must be bytes or None, not %s" % type(header).__name__)
        if not isinstance(batch, FencingToken):
            raise TypeError("batch must be a FencingToken, not %s" % type(batch).__name__)
        h = None if header is None else bytes(header)
        out = ctypes.c_int()
        raise_for(
            lib.krabka_verifier_judge(
                self._ptr(), s, len(s), h, 0 if h is None else len(h), batch._c(), ctypes.byref(out)
            )
        )
        return Verdict(out.value)

    def highest(self, scope: str) -> Optional[FencingToken]:
        """The highest token seen for `scope`, or None before any record of
        it was judged OK or UNSTAMPED. Never blocks."""
        s = _scope_bytes(scope)
        has = ctypes.c_int()
        tok = _abi.Token()
        raise_for(lib.krabka_verifier_highest(self._ptr(), s, len(s), ctypes.byref(has), ctypes.byref(tok)))
        return FencingToken._from_c(tok) if has.value else None

    @property
    def closed(self) -> bool:
        return self._h.get() is None

    def close(self) -> None:
        """Release the verifier (idempotent); later calls raise ClosedError."""
        self._h.release()

    def __enter__(self) -> "Verifier":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._h.release()
        except Exception:
            pass

    def __repr__(self) -> str:
        return "<krabka_coord.Verifier %s>" % ("closed" if self.closed else "open")
