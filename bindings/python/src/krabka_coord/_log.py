"""The library's log lines go to logging.getLogger("krabka_coord").

Every Client sets the C log callback, which the library calls from its own
delivery thread, one line at a time (never inside another call of the
library), so the library never writes to stderr itself. The logger carries
a NullHandler, so an application that configured no logging gets nothing on
stderr either (Python's last-resort handler would print warnings there);
what is emitted, and where, is the application's logging configuration.
"""

from __future__ import annotations

import atexit
import logging
import weakref
from typing import Any, Optional

from . import _abi

__all__ = ["logger", "LOG_CALLBACK", "library_log_level", "open_clients"]

logger = logging.getLogger("krabka_coord")
logger.addHandler(logging.NullHandler())

# krabka_log_level_t -> logging level
_LEVELS = {
    int(_abi.LogLevel.ERROR): logging.ERROR,
    int(_abi.LogLevel.WARNING): logging.WARNING,
    int(_abi.LogLevel.INFO): logging.INFO,
    int(_abi.LogLevel.DEBUG): logging.DEBUG,
}


def _on_log(_opaque: Any, level: int, line: Optional[bytes]) -> None:
    try:
        logger.log(_LEVELS.get(level, logging.INFO), "%s", (line or b"").decode("utf-8", "replace"))
    except Exception:  # never raise into C
        pass


LOG_CALLBACK = _abi.LogCb(_on_log)


def library_log_level() -> str:
    """krabka.log.level matching the krabka_coord logger's effective level
    (used when the configuration does not set it)."""
    lvl = logger.getEffectiveLevel()
    if lvl <= logging.DEBUG:
        return "debug"
    if lvl <= logging.INFO:
        return "info"
    if lvl <= logging.WARNING:
        return "warn"
    return "error"


# Clients still open at interpreter exit are closed first, so that no
# library thread calls back into a finalising interpreter.
open_clients: "weakref.WeakSet[Any]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for c in list(open_clients):
        try:
            c.close()
        except Exception:
            pass
