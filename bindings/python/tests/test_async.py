"""The asyncio forms run blocking calls on worker threads, and a cancelled
await never leaks what the call returns afterwards."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import krabka_coord as kc
from krabka_coord._client import _in_thread


def test_blocking_calls_run_off_the_event_loop_thread() -> None:
    loop_thread: list = []

    async def main() -> str:
        loop_thread.append(threading.get_ident())
        return await _in_thread(lambda: str(threading.get_ident()))

    got = asyncio.run(main())
    assert got != str(loop_thread[0])


def test_a_result_that_arrives_after_cancellation_is_released() -> None:
    released: list = []

    async def main() -> None:
        task = asyncio.ensure_future(_in_thread(lambda: (time.sleep(0.3), "leadership")[1], released.append))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.6)

    asyncio.run(main())
    assert released == ["leadership"]


def test_async_forms_check_arguments_before_starting_a_thread() -> None:
    async def main() -> None:
        with kc.Client({"bootstrap.servers": "127.0.0.1:9"}) as c:
            with pytest.raises(TypeError):
                await c.acquire_async(None, "m")  # type: ignore[arg-type]
            with pytest.raises(ValueError):
                await c.try_acquire_async("r", "m", timeout=-1)
        with pytest.raises(kc.ClosedError):
            await c.describe_async("r")

    asyncio.run(main())
