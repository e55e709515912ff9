"""asyncio helpers the farm's background loops share."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

__all__ = ["cancel_and_wait"]


async def cancel_and_wait(task: asyncio.Task[Any], *, retry_s: float = 1.0) -> None:
    """Cancel ``task`` and wait until it has ended, cancelling again every ``retry_s``
    while it still runs; then raise what it raised, unless that was the cancellation.

    Once is not enough on Python 3.11: a cancel that lands while an inner
    ``asyncio.wait_for`` is completing is swallowed (CPython gh-86296, fixed in 3.12),
    and aiomqtt waits for every SUBACK, UNSUBACK and PUBACK that way. A connection loop
    that lost its cancel goes on reading messages, and ``task.cancel(); await task``
    then waits forever (a learner test's teardown hung so, 1 run in ~20 under load)."""
    task.cancel()
    while not task.done():
        await asyncio.wait([task], timeout=retry_s)
        if not task.done():
            task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
