"""Run a :class:`SimFarm` on its own event loop in a background thread.

Blocking clients (the ``adb`` CLI, adbutils) must not run on the loop that serves
the phones, or each call would wait on itself. Tests, notebooks and the pytest
fixtures therefore use this synchronous wrapper.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, TypeVar

from farm.sim.farm import SimFarm

T = TypeVar("T")


class BackgroundFarm:
    """``with BackgroundFarm(count=2) as farm: farm.phones[0].serial``."""

    def __init__(self, count: int = 1, **farm_kwargs: Any) -> None:
        self._count = count
        self._kwargs = farm_kwargs
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="sim-farm",
                                        daemon=True)
        self.farm: SimFarm | None = None

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = 60.0) -> T:
        """Run a coroutine on the phones' loop and wait for its result."""
        return self.submit(coro).result(timeout)

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule a coroutine on the phones' loop; an event loop elsewhere awaits it
        with ``asyncio.wrap_future`` instead of blocking on :meth:`call`."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def start(self) -> SimFarm:
        self._thread.start()

        async def make() -> SimFarm:
            farm = SimFarm(self._count, **self._kwargs)
            await farm.start()
            return farm

        self.farm = self.call(make())
        return self.farm

    def fault(self, phone: str, kind: str, seconds: float | None = None,
              value: float | None = None) -> str:
        """Inject a fault on the phones' own loop (sockets belong to that thread)."""
        assert self.farm is not None, "farm not started"
        target = self.farm.phone(phone)

        async def apply() -> str:
            return target.fault(kind, seconds=seconds, value=value)

        return self.call(apply())

    def stop(self) -> None:
        if self.farm is not None:
            self.call(self.farm.stop())
            self.farm = None
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> SimFarm:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
