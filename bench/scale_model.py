"""A scale model of a farm: hundreds of sim phones, several farm controllers, one broker
and one learner, all real processes on this machine; per-device costs measured, then
extrapolated (docs/scaling.md).

    python bench/scale_model.py                          # 256 phones, 4 × 64, 60 s
    python bench/scale_model.py --phones 64 --groups 2 --duration 30 --json

Each group is a sim host in miniature: ``distrl sim serve`` with ``phones/groups``
small-screen phones (360×800; ``--profile pixel`` by default: a real phone's latencies),
a private adb server and ``distrl farm up --policy learned`` driving them, with its own
farm id and broker account. One ``distrl broker`` (mosquitto, accounts + ACL) and one
``distrl learner`` serve all groups. After a warm-
up, for ``--duration`` seconds it records:

* broker traffic, as a ``viewer`` subscribed to the whole ``distrl/v1/#`` tree sees it:
  messages and bytes per second by kind (trajectory chunks, statuses, frames, acks,
  policy blobs and pointers, metrics) — the broker's inbound publish rate;
* the learner's ingest (trajectories received per second, from its metrics);
* CPU seconds per second of every process kind (farm controllers, sim processes, adb
  servers, mosquitto, learner), and per device;
* a trajectory's size on the wire (what a spool holds per trajectory, roughly).

On 2 cores everything shares the CPU with everything else: the figures are what this
machine sustains, and the per-device costs are upper bounds for a dedicated host.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiomqtt  # noqa: E402
import psutil  # noqa: E402

from bench._common import cpu_seconds, phones_in_child  # noqa: E402
from bench.chaos import Part, _wait_port  # noqa: E402
from distrl_sdk.wire import Metrics, parse_message  # noqa: E402
from distrl_sdk.wire.signing import SigningKey  # noqa: E402
from farm.sim.adbhost import PrivateAdbServer, free_port  # noqa: E402

KINDS = ("traj", "status", "frame", "ack", "policy", "metrics", "cmd", "cmd_result")
LEARNER_KINDS = ("policy", "metrics")  # published by the learner, not per device


def kind_of(topic: str) -> str:
    parts = topic.split("/")  # distrl/v1/<farm>/<kind>/… or distrl/v1/policy/…
    if len(parts) > 2 and parts[2] in ("policy", "learner"):
        return "policy" if parts[2] == "policy" else "metrics"
    return parts[3] if len(parts) > 3 and parts[3] in KINDS else "other"


class Traffic:
    def __init__(self) -> None:
        self.msgs: Counter[str] = Counter()
        self.bytes: Counter[str] = Counter()
        self.received: float | None = None  # the learner's `received`, newest
        self.counting = False

    def add(self, topic: str, payload: bytes) -> None:
        if kind_of(topic) == "metrics":
            parsed = parse_message(topic, payload)
            body = getattr(parsed, "body", None)
            if isinstance(body, Metrics) and "received" in body.scalars:
                self.received = body.scalars["received"]
        if self.counting:
            k = kind_of(topic)
            self.msgs[k] += 1
            self.bytes[k] += len(payload)


async def watch(port: int, password: str, got: Traffic, stop: asyncio.Event) -> None:
    while not stop.is_set():
        try:
            async with aiomqtt.Client("127.0.0.1", port, username="viewer", password=password,
                                      identifier="scale-watch", timeout=5,
                                      max_queued_incoming_messages=0) as c:
                await c.subscribe("distrl/v1/#", qos=0)
                async for m in c.messages:
                    payload = m.payload if isinstance(m.payload, bytes) else bytes(
                        str(m.payload), "utf-8")
                    got.add(str(m.topic), payload)
        except (aiomqtt.MqttError, OSError):
            await asyncio.sleep(0.3)


def _tree_cpu(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(psutil.Error, FileNotFoundError, ProcessLookupError):
            total += cpu_seconds(pid)
            for child in psutil.Process(pid).children(recursive=True):
                with contextlib.suppress(psutil.Error, FileNotFoundError,
                                         ProcessLookupError):
                    total += cpu_seconds(child.pid)
    return total


def _adb_server_pids(ports: list[int]) -> list[int]:
    """The adb servers listening on ``ports`` (`adb -L tcp:PORT fork-server server`)."""
    want = {f"tcp:{p}" for p in ports}
    out = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info.get("cmdline") or []
        if "fork-server" in cmd and want & set(cmd):
            out.append(proc.pid)
    return out


async def run(phones: int, groups: int, warmup_s: float, duration_s: float, work: Path,
              progress: Callable[[str], None], profile: str = "pixel") -> dict[str, Any]:
    per = phones // groups
    keys, accounts, logs = work / "keys", work / "accounts", work / "logs"
    for d in (keys, accounts, logs):
        d.mkdir(parents=True, exist_ok=True)
    for role in ("learner", "farm", "operator"):
        if not (keys / f"{role}.key").exists():
            SigningKey.generate(role).save(keys / f"{role}.key")
    env = {**os.environ, "DISTRL_KEYS": str(keys), "PYTHONUNBUFFERED": "1"}
    port = free_port()
    farms = [f"scale{g}" for g in range(groups)]
    cli = [sys.executable, "-m", "farm.cli"]
    learner_cfg = work / "learner.toml"
    learner_cfg.write_text('metrics_every_s = 2\ntorch_threads = 1\n'
                           'max_updates_per_episode = 0.2\ncheckpoint_every_s = 600\n')
    with contextlib.ExitStack() as stack:
        sims = [stack.enter_context(phones_in_child(per, screen="small", seed=g,
                                                    profile=profile))
                for g in range(groups)]
        adbs = [stack.enter_context(PrivateAdbServer()) for _ in range(groups)]
        broker = Part("broker", [*cli, "broker", "--port", str(port), "--accounts",
                                 str(accounts), *[a for f in farms for a in ("--farm", f)],
                                 "--backend", "mosquitto"], env, logs)
        await broker.start()
        await _wait_port(port)
        for _ in range(100):
            if all((accounts / f"farm-{f}.password").exists() for f in farms):
                break
            await asyncio.sleep(0.1)
        learner = Part("learner", [
            *cli, "learner", "--config", str(learner_cfg),
            "--broker", f"mqtt://learner@127.0.0.1:{port}",
            "--password-file", str(accounts / "learner.password"),
            "--run-dir", str(work / "learner")], env, logs)
        farm_parts = []
        for g, f in enumerate(farms):
            serials = [p["serial"] for p in sims[g]["phones"]]
            farm_parts.append(Part(f, [
                *cli, "farm", "up", "--broker", f"mqtt://farm-{f}@127.0.0.1:{port}",
                "--password-file", str(accounts / f"farm-{f}.password"), "--farm-id", f,
                "--policy", "learned", "--adb-port", str(adbs[g].port),
                "--spool", str(work / "spool" / f), "--seed", str(g), "--task", "settings.*",
                "--episode-timeout", "60", *[a for s in serials for a in ("--connect", s)]],
                {**env, "ANDROID_ADB_SERVER_PORT": str(adbs[g].port)}, logs))
        got, stop = Traffic(), asyncio.Event()
        viewer_pw = (accounts / "viewer.password").read_text().splitlines()[0]
        watcher = asyncio.create_task(watch(port, viewer_pw, got, stop))
        await learner.start()
        for p in farm_parts:
            await p.start()
        try:
            progress(f"{phones} sim phones in {groups} groups, {groups} farms, broker, "
                     f"learner up; warming up {warmup_s:.0f} s")
            await asyncio.sleep(warmup_s)
            for name, p in [("learner", learner), *[(p.name, p) for p in farm_parts]]:
                if not p.alive:
                    raise RuntimeError(f"{name} exited: see {p.log_path}")
            pids = {
                "farm controllers": [p.proc.pid for p in farm_parts if p.proc],
                "sim processes": [int(s["pid"]) for s in sims],
                "adb servers": _adb_server_pids([a.port for a in adbs]),
                "broker (mosquitto)": [broker.proc.pid] if broker.proc else [],
                "learner": [learner.proc.pid] if learner.proc else [],
            }
            cpu0 = {k: _tree_cpu(v) for k, v in pids.items()}
            rec0 = got.received or 0.0
            got.counting = True
            t0 = time.monotonic()
            await asyncio.sleep(duration_s)
            got.counting = False
            wall = time.monotonic() - t0
            cpu = {k: round((_tree_cpu(v) - cpu0[k]) / wall, 3) for k, v in pids.items()}
            received = (got.received or 0.0) - rec0
            progress("stopping")
        finally:
            stop.set()
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            for p in farm_parts:
                await p.stop(timeout=60)
            await learner.stop(timeout=60)
            await broker.stop(timeout=30)
    msgs = {k: round(v / wall, 1) for k, v in got.msgs.items()}
    mbs = {k: round(v / wall / 1e6, 3) for k, v in got.bytes.items()}
    traj_per_s = received / wall
    # what grows with devices (policy blobs and metrics come from the one learner: they
    # grow with publishes, and their fan-out with farm hosts, not with devices)
    dev_msgs = sum(v for k, v in msgs.items() if k not in LEARNER_KINDS)
    dev_mbs = sum(v for k, v in mbs.items() if k not in LEARNER_KINDS)
    return {
        "phones": phones, "groups": groups, "profile": profile,
        "duration_s": round(wall, 1),
        "broker_in_msgs_per_s": msgs, "broker_in_msgs_per_s_total": round(sum(msgs.values()), 1),
        "broker_in_MB_per_s": mbs, "broker_in_MB_per_s_total": round(sum(mbs.values()), 3),
        "learner_trajectories_per_s": round(traj_per_s, 2),
        "cpu_cores": cpu, "cpu_cores_total": round(sum(cpu.values()), 2),
        "per_device": {
            "farm_cpu_ms_per_s": round(1000 * cpu["farm controllers"] / phones, 3),
            "sim_cpu_ms_per_s": round(1000 * cpu["sim processes"] / phones, 3),
            "broker_msgs_per_s": round(dev_msgs / phones, 3),
            "broker_kB_per_s": round(1000 * dev_mbs / phones, 3),
            "trajectories_per_min": round(60 * traj_per_s / phones, 3),
        },
        "trajectory_kB_on_the_wire": round(1000 * mbs.get("traj", 0.0) / traj_per_s, 1)
        if traj_per_s else None,
        "work_dir": str(work),
    }


def extrapolate(r: dict[str, Any], devices: int = 10_000) -> dict[str, float]:
    """The measured per-device rates × ``devices`` (what docs/scaling.md reasons from)."""
    d = r["per_device"]
    learner_mbs = sum(v for k, v in r["broker_in_MB_per_s"].items() if k in LEARNER_KINDS)
    return {"devices": devices,
            "broker_in_msgs_per_s": round(d["broker_msgs_per_s"] * devices),
            "broker_in_MB_per_s": round(d["broker_kB_per_s"] * devices / 1000, 1),
            "policy_and_metrics_MB_per_s_per_learner": round(learner_mbs, 2),
            "learner_trajectories_per_s": round(d["trajectories_per_min"] * devices / 60, 1),
            "farm_controller_cores": round(d["farm_cpu_ms_per_s"] * devices / 1000, 1)}


def report(r: dict[str, Any]) -> str:
    x = extrapolate(r)
    return "\n".join([
        f"scale model: {r['phones']} {r['profile']} phones in {r['groups']} groups, "
        f"{r['duration_s']} s",
        f"  broker in: {r['broker_in_msgs_per_s_total']} msg/s, "
        f"{r['broker_in_MB_per_s_total']} MB/s  by kind {r['broker_in_msgs_per_s']}",
        f"  learner ingest: {r['learner_trajectories_per_s']} trajectories/s "
        f"({r['trajectory_kB_on_the_wire']} kB each on the wire)",
        f"  CPU (cores): {r['cpu_cores']} total {r['cpu_cores_total']}",
        f"  per device (trajectories, statuses, frames, acks): {r['per_device']}",
        f"  × 10 000 devices: {x}",
    ])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phones", type=int, default=256)
    ap.add_argument("--groups", type=int, default=4,
                    help="sim processes, each with its adb server and farm controller")
    ap.add_argument("--warmup", type=float, default=45.0)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--profile", default="pixel",
                    help="sim latency profile: pixel paces episodes as a real phone does; "
                         "instant makes every part CPU-bound (the worst case per device)")
    ap.add_argument("--work-dir", type=Path, default=None)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.groups < 1 or a.phones < a.groups:
        ap.error("need --phones ≥ --groups ≥ 1")
    work = a.work_dir or Path(tempfile.mkdtemp(prefix="distrl-scale-"))
    r = asyncio.run(run(a.phones, a.groups, a.warmup, a.duration, work,
                        lambda s: print(s, file=sys.stderr, flush=True), a.profile))
    print(json.dumps({**r, "extrapolated": extrapolate(r)}, indent=2) if a.json
          else report(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
