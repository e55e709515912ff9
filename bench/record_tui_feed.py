"""Record what the TUI sees from the real farm and learner, as a test fixture.

Runs the demo's parts for real (embedded broker, ``distrl learner`` training a UI-tree
policy, ``distrl farm up --sim N --policy learned``), subscribes to exactly the topics
the TUI subscribes to (``tui.mqtt_source.subscriptions``) and writes every message
``(topic, payload)`` in arrival order to a gzipped JSON-lines file. Frames dominate the
size, so at most ``--frames-per-device`` of them are kept per device (spread over the
run: every k-th); everything else is kept whole. The TUI tests replay this file
(tests/tui/test_recorded_feed.py), so they see the producers' real metric names, states
and details, not what a fake feed thinks they are.

Usage (about a minute on two cores):
    .venv/bin/python bench/record_tui_feed.py [--seconds 45] [--phones 3]
        [--out tests/fixtures/tui_feed.jsonl.gz]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "tui_feed.jsonl.gz"


async def record(seconds: float, phones: int, out: Path, frames_per_device: int) -> int:
    import aiomqtt

    from farm.broker import EmbeddedBroker
    from farm.demo import _Child, _distrl, learner_toml
    from farm.transport import parse_broker_url
    from tui.mqtt_source import subscriptions

    rows: list[tuple[str, bytes]] = []
    frames: dict[str, list[int]] = {}  # topic → indices into rows
    with tempfile.TemporaryDirectory(prefix="distrl-record-") as tmp:
        run = Path(tmp)
        (run / "learner.toml").write_text(learner_toml())
        async with EmbeddedBroker() as broker:
            learner = _Child("learner", _distrl(
                "learner", "--config", str(run / "learner.toml"), "--broker", broker.url,
                "--run-dir", str(run / "learner"), "--algo", "aride", "--policy", "uitree"),
                run / "learner.log")
            farm = _Child("farm", _distrl(
                "farm", "up", "--broker", broker.url, "--sim", str(phones), "--policy",
                "learned", "--farm-id", "rec", "--spool", str(run / "spool"), "--seed", "0",
                "--flush-timeout", "5", "--tag", "easy"), run / "farm.log")
            addr = parse_broker_url(broker.url)
            async with aiomqtt.Client(**addr.client_kwargs(), clean_session=True) as client:
                for flt, qos in subscriptions("+"):
                    await client.subscribe(flt, qos=qos)
                await learner.start()
                await farm.start()
                print(f"recording {seconds:.0f} s from {broker.url} "
                      f"({phones} sim phones) …", file=sys.stderr)

                async def take() -> None:
                    async for m in client.messages:
                        p = m.payload
                        data = p if isinstance(p, bytes) else str(p or "").encode()
                        topic = str(m.topic)
                        if "/frame/" in topic:
                            frames.setdefault(topic, []).append(len(rows))
                        rows.append((topic, data))

                reader = asyncio.create_task(take())
                t0 = time.monotonic()
                try:
                    while time.monotonic() - t0 < seconds:
                        await asyncio.sleep(1.0)
                        if farm.returncode is not None or learner.returncode is not None:
                            raise RuntimeError(f"a child ended early; logs in {run}")
                    # the farm's stop publishes its last statuses (what a TUI sees at the end)
                    await farm.stop(30.0)
                    await learner.stop(30.0)
                    await asyncio.sleep(1.0)
                finally:
                    reader.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await reader
                    await farm.stop(5.0)
                    await learner.stop(5.0)
    return _write(out, rows, frames, frames_per_device)


def _write(out: Path, rows: list[tuple[str, bytes]], frames: dict[str, list[int]],
           frames_per_device: int) -> int:
    """Keep every non-frame message and ``frames_per_device`` frames per device."""
    drop: set[int] = set()
    for idx in frames.values():
        if len(idx) > frames_per_device:
            k = len(idx) / frames_per_device
            keep = {idx[int(i * k)] for i in range(frames_per_device)} | {idx[-1]}
            drop.update(i for i in idx if i not in keep)
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt", encoding="utf-8") as f:
        for i, (topic, data) in enumerate(rows):
            if i not in drop:
                f.write(json.dumps({"topic": topic,
                                    "payload": base64.b64encode(data).decode()}) + "\n")
    kept = len(rows) - len(drop)
    print(f"{kept} messages ({len(drop)} frames subsampled away) → {out} "
          f"({out.stat().st_size / 1024:.0f} KiB)", file=sys.stderr)
    return kept


def load(path: Path = DEFAULT_OUT) -> list[tuple[str, bytes]]:
    """The recorded ``(topic, payload)`` pairs, in arrival order."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [(r["topic"], base64.b64decode(r["payload"])) for r in map(json.loads, f)]


def while_running(feed: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """The part of a recording before the farm's clean stop: its first cleared retained
    status (an empty payload on a status topic) ends it. A screen that should show the
    farm's phones replays this; the whole feed ends with them gone."""
    for i, (topic, payload) in enumerate(feed):
        if not payload and "/status/" in topic:
            return feed[:i]
    return feed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=45.0)
    ap.add_argument("--phones", type=int, default=3)
    ap.add_argument("--frames-per-device", type=int, default=12)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args()
    n = asyncio.run(record(a.seconds, a.phones, a.out, a.frames_per_device))
    sys.exit(0 if n else 1)


if __name__ == "__main__":
    main()
