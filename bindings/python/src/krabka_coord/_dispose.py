"""The one place that disposes of what a call won after its caller gave up
(KeyboardInterrupt during a synchronous wait, a cancelled asyncio task, an
exception while the value was being made).

- A leadership is resigned (so the first standby takes over at once rather
  than at the lease deadline) and destroyed when the resign completes; if
  the resign cannot even be sent it is destroyed at once (standbys take over
  at its lease deadline).
- A watch, a describe result or a watch event an event carries is destroyed
  with the event (krabka_event_destroy releases what was not taken).

The resign runs on the process-wide completion queue (_calls), so it needs
no thread of its own and works whatever loop or thread gave up.
"""

from __future__ import annotations

import ctypes

from . import _abi, _calls
from ._errors import KrabkaError
from ._native import lib

__all__ = ["event", "leadership"]

_WINS_LEADERSHIP = (int(_abi.EventType.ACQUIRE), int(_abi.EventType.TRY_ACQUIRE))


def event(ev: int) -> None:
    """Disposes of a queue event nobody will read, and of what it carries."""
    try:
        typ = ctypes.c_int()
        if lib.krabka_event_type(ev, ctypes.byref(typ)) == 0 and typ.value in _WINS_LEADERSHIP:
            out = ctypes.c_void_p()
            if lib.krabka_event_take_leadership(ev, ctypes.byref(out), None, 0) == 0 and out.value:
                leadership(out.value)
    finally:
        lib.krabka_event_destroy(ev)


def leadership(ptr: int) -> None:
    """Resigns and then destroys a leadership nobody will use."""

    def resigned(ev: int) -> None:  # on the completions thread
        lib.krabka_event_destroy(ev)
        lib.krabka_leadership_destroy(ptr)

    def start(q: int, tag: int, buf: "ctypes.Array[ctypes.c_char]") -> int:
        return lib.krabka_leadership_resign_async(ptr, None, 0, 0, q, tag, buf, len(buf))  # type: ignore[no-any-return]

    try:
        _calls.process_queue().submit(start, resigned)
    except (KrabkaError, RuntimeError):  # not ACTIVE any more, or no queue: just release it
        lib.krabka_leadership_destroy(ptr)
