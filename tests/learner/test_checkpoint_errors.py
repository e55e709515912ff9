"""Checkpoint write errors (disk full, a path that cannot be written) are logged with why,
counted in metrics and summary, and survived; the next checkpoint retries and nothing is
lost. Real learner service, real mosquitto, real farm publisher."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from farm.broker import EmbeddedBroker, find_mosquitto
from farm.learner.service import LearnerService
from tests.learner.test_service import config, farm, make_traj, replay_ids, start, until

pytestmark = pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")


@pytest.fixture
async def broker() -> AsyncIterator[EmbeddedBroker]:
    async with EmbeddedBroker(backend="mosquitto") as b:
        yield b


async def test_unwritable_checkpoint_dir_is_survived_and_retried(
        broker: EmbeddedBroker, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    run = tmp_path / "run"
    run.mkdir()
    blocker = run / "checkpoints"
    blocker.write_text("a regular file where the checkpoint dir must be\n")  # root-proof
    svc = LearnerService(config(broker, run, checkpoint_every_s=0.2))
    caplog.set_level(logging.ERROR, logger="farm.learner.service")
    task = await start(svc)
    async with farm(broker, tmp_path / "spool") as pub:
        for i in range(6):
            await pub.publish(make_traj(i))
        assert await pub.wait_acked(30)  # the learner keeps acking through failures
        await until(lambda: svc.checkpoint_errors >= 2 and svc.episodes == 6)
        assert not task.done()
        assert svc.metrics()["checkpoint_errors"] >= 2
        assert svc.checkpoints == 0
        blocker.unlink()  # space again: the next periodic checkpoint succeeds
        await until(lambda: svc.checkpoints >= 1)
        svc.stop()
        summary = await asyncio.wait_for(task, 60)
    assert summary["checkpoint_errors"] >= 2 and summary["checkpoints"] >= 2
    assert "FileExistsError" in summary["last_checkpoint_error"] or \
        "NotADirectoryError" in summary["last_checkpoint_error"]
    msgs = [r.getMessage() for r in caplog.records if "checkpoint failed" in r.getMessage()]
    assert msgs and "carries on" in msgs[0] and "checkpoints" in msgs[0]
    # nothing lost: a restart from the checkpoint has all six
    b = LearnerService(config(broker, run))
    task = await start(b)
    assert b.restored_from is not None and sorted(replay_ids(b)) == \
        [f"t{i:04d}" for i in range(6)]
    b.stop()
    await asyncio.wait_for(task, 60)


async def test_failed_final_checkpoint_still_exits_cleanly(broker: EmbeddedBroker,
                                                           tmp_path: Path) -> None:
    """The shutdown checkpoint fails too: run() returns its summary instead of raising,
    and a restart replays the journal, so no accepted episode is lost."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoints").write_text("x")
    svc = LearnerService(config(broker, run))
    task = await start(svc)
    async with farm(broker, tmp_path / "spool") as pub:
        for i in range(4):
            await pub.publish(make_traj(i))
        assert await pub.wait_acked(30)
        await until(lambda: svc.episodes == 4)
    svc.stop()
    summary = await asyncio.wait_for(task, 60)
    assert summary["checkpoints"] == 0 and summary["checkpoint_errors"] == 1
    (run / "checkpoints").unlink()
    b = LearnerService(config(broker, run))
    task = await start(b)
    assert b.replayed_from_journal == 4 and sorted(replay_ids(b)) == \
        [f"t{i:04d}" for i in range(4)]
    b.stop()
    await asyncio.wait_for(task, 60)


@contextlib.contextmanager
def _tiny_fs(size_kib: int) -> Iterator[Path]:
    """A real full disk: a tmpfs of ``size_kib`` (needs mount rights; skipped otherwise)."""
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("needs root and mount for a real ENOSPC")
    d = Path(tempfile.mkdtemp(prefix="distrl-tinyfs-"))
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(d)],
                       capture_output=True, check=False)
    if r.returncode != 0:
        d.rmdir()
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.decode().strip()}")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], check=False)
        with contextlib.suppress(OSError):
            d.rmdir()


async def test_disk_full_is_survived(broker: EmbeddedBroker, tmp_path: Path) -> None:
    with _tiny_fs(16) as full:
        run = tmp_path / "run"
        run.mkdir()
        (run / "checkpoints").symlink_to(full)  # checkpoints land on a 16 KiB disk
        svc = LearnerService(config(broker, run, checkpoint_every_s=0.2))
        task = await start(svc)
        async with farm(broker, tmp_path / "spool") as pub:
            for i in range(4):
                await pub.publish(make_traj(i))
            assert await pub.wait_acked(30)
            await until(lambda: svc.checkpoint_errors >= 2)
            assert not task.done()
            svc.stop()
            summary = await asyncio.wait_for(task, 60)
        assert summary["checkpoints"] == 0 and summary["episodes"] == 4
        err = summary["last_checkpoint_error"]
        assert "No space left" in err or "ENOSPC" in err or "write" in err.lower(), err
        assert not any(full.glob(".tmp-*"))  # a partial checkpoint is removed
