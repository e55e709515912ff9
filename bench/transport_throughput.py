"""Trajectory transport: DistRL's publish path vs raw aiomqtt → Mosquitto, side by side.

Both sides move the same encoded trajectory payloads through one embedded broker to one
subscriber at QoS 1:

* raw:  ``await client.publish(topic, payload, qos=1)`` per payload (one MQTT message
  each, no chunking, no spool); done when a plain aiomqtt subscriber has them all and
  says so (one small message back);
* ours: ``Publisher.publish_payload`` → disk spool (fsync) → ≤ 1 MB chunks at QoS 1 →
  ``TrajectorySubscriber`` reassembles, verifies sha256, decodes, dedupes and acks →
  spool entry deleted; done when every trajectory is acked (a full round trip).

Also measured: the codec (frames → JPEG + JSON header) alone, and ours end to end with
the codec included. The learner side runs in a child process in both cases, as in a real
deployment. Bar (DESIGN.md §6): ours ≥ 50 % of raw for the same payloads.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import aiomqtt
from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from distrl_sdk.wire import (
    FrameOptions,
    StepMsg,
    TrajectoryMsg,
    encode_trajectory,
)
from farm.broker import EmbeddedBroker
from farm.transport import Backoff, Publisher, TrajectorySubscriber


def screen(seed: int, w: int = 1080, h: int = 2400) -> Image.Image:
    """A UI-like RGBA screenshot: flat panels, some noisy 'photo' areas."""
    img = Image.new("RGBA", (w, h), (245, 245, 245, 255))
    d = ImageDraw.Draw(img)
    for i in range(12):
        y = 120 + i * 180
        d.rectangle([40, y, w - 40, y + 150], fill=((seed * 37 + i * 20) % 255, 120, 200, 255))
        d.text((60, y + 60), f"item {i} seed {seed}", fill=(0, 0, 0, 255))
    noise = Image.frombytes("RGBA", (w // 3, h // 6), os.urandom((w // 3) * (h // 6) * 4))
    img.paste(noise, (w // 3, h // 2))
    return img


def make_msgs(n: int, steps: int) -> list[TrajectoryMsg]:
    return [TrajectoryMsg(farm_id="bench", device_id=f"d{i % 8}", task="bench",
                          instruction="x", status="success", reward=1.0,
                          steps=[StepMsg(index=j, action={"type": "tap", "x": 0.5, "y": 0.5},
                                         log_prob=-1.0, policy_version=1)
                                 for j in range(steps)])
            for i in range(n)]


async def learner_child(role: str, port: int, count: int) -> None:
    """The learner side, in its own process (as in a real deployment)."""
    url = f"mqtt://127.0.0.1:{port}"
    if role == "raw":
        async with aiomqtt.Client("127.0.0.1", port, identifier="raw-sub",
                                  max_queued_incoming_messages=0) as sub:
            await sub.subscribe("rawbench/traj/#", qos=1)
            print("ready", flush=True)
            got = 0
            async for _m in sub.messages:
                got += 1
                if got == count:
                    await sub.publish("rawbench/done", b"1", qos=1)
                    break
            await asyncio.sleep(0.2)
    else:
        sub = TrajectorySubscriber(url, farm_id="bench", client_id="bench-learner",
                                   clean_session=True, handler=lambda d: None)
        async with sub:
            await sub.connected.wait()
            print("ready", flush=True)
            while sub.acks_sent < count:  # noqa: ASYNC110 - a benchmark child polls
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)


async def _spawn_learner(role: str, port: int, count: int) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--learner", role, "--port", str(port),
        "--trajectories", str(count), stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    assert line.strip() == b"ready", line
    return proc


async def run_raw(port: int, payloads: list[tuple[str, bytes]]) -> float:
    child = await _spawn_learner("raw", port, len(payloads))
    async with aiomqtt.Client("127.0.0.1", port, identifier="raw-pub") as pub:
        await pub.subscribe("rawbench/done", qos=1)
        t0 = time.perf_counter()
        for tid, p in payloads:
            await pub.publish(f"rawbench/traj/{tid}", p, qos=1)
        async for _m in pub.messages:
            break
        dt = time.perf_counter() - t0
    await child.wait()
    return dt


async def run_ours(port: int, payloads: list[tuple[str, bytes]], spool: Path, fsync: bool,
                   msgs: list[TrajectoryMsg] | None = None,
                   frames: dict[int, Image.Image] | None = None,
                   opts: FrameOptions | None = None) -> float:
    n = len(msgs) if msgs is not None else len(payloads)
    child = await _spawn_learner("ours", port, n)
    pub = Publisher(f"mqtt://127.0.0.1:{port}", "bench", spool, frame_opts=opts,
                    backoff=Backoff(0.05, 0.5))
    pub.spool.fsync = fsync
    async with pub:
        await pub.connected.wait()
        t0 = time.perf_counter()
        if msgs is not None:
            # the farm encodes episodes concurrently (one worker per device)
            await asyncio.gather(*(pub.publish(m, frames) for m in msgs))
        else:
            # several episode workers hand over trajectories concurrently
            await asyncio.gather(*(pub.publish_payload(tid, p) for tid, p in payloads))
        ok = await pub.wait_acked(300)
        dt = time.perf_counter() - t0
    await child.wait()
    assert ok and pub.stats.acked == n, (ok, pub.stats, n)
    return dt


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trajectories", type=int, default=100)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--scale", type=float, default=0.5)
    ap.add_argument("--quality", type=int, default=75)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--backend", choices=["mosquitto", "amqtt", "auto"], default="auto")
    ap.add_argument("--learner", choices=["raw", "ours"], help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.learner:
        await learner_child(a.learner, a.port, a.trajectories)
        return

    opts = FrameOptions(scale=a.scale, quality=a.quality)
    frames = {j: screen(j) for j in range(a.steps)}
    msgs = make_msgs(a.trajectories, a.steps)
    t0 = time.perf_counter()
    payloads = [(m.id, encode_trajectory(m, frames, frame_opts=opts)) for m in msgs]
    codec_s = time.perf_counter() - t0
    nbytes = sum(len(p) for _, p in payloads)
    mb = nbytes / 1e6
    print(f"{a.trajectories} trajectories × {a.steps} steps, frames 1080×2400 RGBA → JPEG "
          f"scale {a.scale} q{a.quality}: {mb / a.trajectories:.2f} MB each, {mb:.1f} MB total")
    print(f"codec alone (1 thread): {a.trajectories * a.steps / codec_s:.0f} frames/s, "
          f"{mb / codec_s:.0f} MB/s of output")

    async with EmbeddedBroker(backend=a.backend) as broker:  # type: ignore[arg-type]
        print(f"broker: {broker.backend} on {broker.url}")
        rows: dict[str, list[float]] = {"raw": [], "ours": [], "ours_nofsync": [],
                                        "ours_codec": []}
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(a.rounds):  # interleaved, so drift hits all sides alike
                rows["raw"].append(await run_raw(broker.port, payloads))
                rows["ours"].append(await run_ours(broker.port, payloads,
                                                   Path(tmp) / f"s{r}", True))
                rows["ours_nofsync"].append(await run_ours(broker.port, payloads,
                                                           Path(tmp) / f"n{r}", False))
                fresh = make_msgs(a.trajectories, a.steps)
                rows["ours_codec"].append(await run_ours(broker.port, [], Path(tmp) / f"c{r}",
                                                         True, fresh, frames, opts))
    best = {k: min(v) for k, v in rows.items()}
    raw_mbs = mb / best["raw"]
    print(f"\n{'path':<40}{'best s':>8}{'MB/s':>9}{'traj/s':>9}{'vs raw':>9}")
    labels = {
        "raw": "raw aiomqtt publish, QoS 1",
        "ours": "ours: spool(fsync)+chunks+QoS1+ack",
        "ours_nofsync": "ours, spool without fsync",
        "ours_codec": "ours incl. codec (JPEG) + spool",
    }
    for k, label in labels.items():
        s = best[k]
        print(f"{label:<40}{s:>8.3f}{mb / s:>9.0f}{a.trajectories / s:>9.1f}"
              f"{(mb / s) / raw_mbs:>8.0%}")
    ratio = best["raw"] / best["ours"]
    print(f"\nratio ours/raw (same payloads, acked round trip): {ratio:.0%} "
          f"— bar ≥ 50 %: {'PASS' if ratio >= 0.5 else 'FAIL'}")


if __name__ == "__main__":
    asyncio.run(main())
