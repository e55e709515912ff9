"""cancel_and_wait ends a loop whose first cancel Python 3.11's wait_for swallowed."""

from __future__ import annotations

import asyncio
import sys

import pytest

from farm.aio import cancel_and_wait


async def _loop_that_lost_its_cancel() -> tuple[asyncio.Task[None], asyncio.Future[None]]:
    """A connection loop awaiting a SUBACK the aiomqtt way (``wait_for``), cancelled in
    the same loop iteration as the SUBACK arrives — then reading messages forever."""
    ack: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def loop() -> None:
        await asyncio.wait_for(ack, timeout=30)
        await asyncio.sleep(3600)

    task = asyncio.create_task(loop())
    await asyncio.sleep(0)
    ack.set_result(None)
    return task, ack


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="wait_for keeps the cancel on 3.12+")
async def test_one_cancel_is_lost_on_3_11() -> None:
    task, _ = await _loop_that_lost_its_cancel()
    task.cancel()
    done, _ = await asyncio.wait([task], timeout=0.5)
    assert not done  # what made `task.cancel(); await task` hang in stop()
    task.cancel()
    await asyncio.wait([task])


async def test_cancel_and_wait_ends_it_anyway() -> None:
    task, _ = await _loop_that_lost_its_cancel()
    async with asyncio.timeout(5):
        await cancel_and_wait(task, retry_s=0.05)
    assert task.cancelled()


async def test_cancel_and_wait_raises_what_the_task_raised() -> None:
    async def broken() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            raise RuntimeError("cleanup failed")

    task = asyncio.create_task(broken())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="cleanup failed"):
        await cancel_and_wait(task)
