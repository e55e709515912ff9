"""Same seed, same phone: identity, content and latency jitter repeat exactly."""

from __future__ import annotations

from unittest import mock

from farm.sim.farm import SimFarm


async def test_same_seed_same_phones_other_seed_other_phones() -> None:
    a, b, c = SimFarm(2, seed=1), SimFarm(2, seed=1), SimFarm(2, seed=2)
    ids = [[(await p.run_shell("settings get secure android_id")).stdout_bytes
            for p in farm.phones] for farm in (a, b, c)]
    assert ids[0] == ids[1]
    assert ids[0] != ids[2] and ids[0][0] != ids[0][1]
    # the screens are the same too (same wall clock for the status bar)
    for pa, pb in zip(a.phones, b.phones, strict=True):
        assert pa.world.ui_xml() == pb.world.ui_xml()


async def test_latency_jitter_repeats_under_the_same_seed() -> None:
    async def delays(seed: int) -> list[float]:
        phone = SimFarm(1, seed=seed, profile="emulator").phones[0]
        asked: list[float] = []

        async def record(seconds: float) -> None:
            asked.append(seconds)

        with mock.patch("asyncio.sleep", record):
            for cmd in ("input keyevent HOME", "getprop ro.product.model", "screencap -p"):
                await phone.run_shell(cmd)
        return asked

    first, second, other = await delays(7), await delays(7), await delays(8)
    assert len(first) == 3 and all(d > 0 for d in first)
    assert first == second
    assert first != other
