"""Policy broadcast: a 35 MiB safetensors adapter to 32 farm workers on loopback.

The learner side is :class:`farm.learner.weights.WeightPublisher` (serialise → sha256 →
≤ 1 MB retained chunks → retained pointer); every worker is a real
:class:`~farm.learner.weights.WeightSubscriber` with its own MQTT connection, which
follows the pointer, reassembles the chunks, checks size and sha256 and parses the
safetensors into tensors. Workers run as separate aiomqtt clients, by default all in
one process (``--procs N`` spreads them over N processes); the broker is an embedded
mosquitto.

Timed: from the publish call (serialisation included) to the last worker holding
verified tensors. Bar (docs/design.md §8): ≤ 3 s.

    .venv/bin/python bench/broadcast.py [--workers 32] [--mib 35] [--procs 1] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from farm.broker import EmbeddedBroker
from farm.learner.weights import (
    MqttLink,
    WeightPublisher,
    WeightSubscriber,
    serialize_weights,
)

BAR_S = 3.0


def adapter(mib: float, rank: int = 16, width: int = 4096) -> dict[str, torch.Tensor]:
    """Random LoRA-shaped fp32 tensors (A: r×w, B: w×r per layer) totalling ``mib`` MiB."""
    g = torch.Generator().manual_seed(0)
    per_layer = 2 * rank * width * 4
    layers = max(1, round(mib * 2**20 / per_layer))
    out: dict[str, torch.Tensor] = {}
    for i in range(layers):
        pre = f"base_model.model.layers.{i}.self_attn.q_proj"
        out[f"{pre}.lora_A.weight"] = torch.randn(rank, width, generator=g)
        out[f"{pre}.lora_B.weight"] = torch.randn(width, rank, generator=g)
    return out


async def _workers(url: str, n: int, tag: str, ready: Any, go: Any, results: Any) -> None:
    """n subscribers; report (connected, accepted wall time) per worker."""
    accepted: dict[int, float] = {}
    subs: list[WeightSubscriber] = []

    def on_weights(i: int) -> Any:
        def cb(w: dict[str, torch.Tensor], p: Any) -> None:
            assert sum(t.numel() * t.element_size() for t in w.values()) > 0
            accepted[i] = time.time()
        return cb

    for i in range(n):
        subs.append(WeightSubscriber(url, on_weights(i), client_id=f"bench-{tag}-{i}",
                                     fetch_timeout_s=120))
    for s in subs:
        await s.start()
    async with asyncio.timeout(60):
        for s in subs:
            await s.connected.wait()
    await asyncio.sleep(0.2)  # subscriptions (sent right after connect) have settled
    ready()
    async with asyncio.timeout(180):
        await asyncio.gather(*(s.wait_version(1) for s in subs))
    refused = sum(sum(s.refused.values()) for s in subs)
    for s in subs:
        await s.stop()
    results(sorted(accepted.values()), refused)


def _child(url: str, n: int, tag: str, q: Any, ev: Any) -> None:
    asyncio.run(_workers(url, n, tag, lambda: q.put(("ready", tag)), ev,
                         lambda acc, ref: q.put(("done", acc, ref))))


async def run(workers: int, mib: float, procs: int) -> dict[str, Any]:
    weights = adapter(mib)
    nbytes = len(serialize_weights(weights))
    async with EmbeddedBroker(backend="mosquitto", message_size_limit=2 * 1024 * 1024) as b:
        accepted: list[float] = []
        refused = 0
        ctx = mp.get_context("spawn")
        q: Any = ctx.Queue()
        children: list[Any] = []
        local_task: asyncio.Task[None] | None = None
        local_ready = asyncio.Event()
        if procs <= 1:
            def done(acc: list[float], ref: int) -> None:
                nonlocal refused
                accepted.extend(acc)
                refused += ref
            local_task = asyncio.create_task(
                _workers(b.url, workers, "p0", local_ready.set, None, done))
            await local_ready.wait()
        else:
            per = [workers // procs + (1 if i < workers % procs else 0) for i in range(procs)]
            for i, n in enumerate(per):
                p = ctx.Process(target=_child, args=(b.url, n, f"p{i}", q, None), daemon=True)
                p.start()
                children.append(p)
            for _ in children:
                await asyncio.to_thread(q.get, True, 120)
        broker_pid = b._proc.pid if b._proc is not None else None  # mosquitto's CPU too
        cpu0 = (_own_cpu(), _pid_cpu(broker_pid))
        async with MqttLink(b.url) as link:
            await link.connected.wait()
            pub = WeightPublisher(link)
            t0 = time.time()
            await pub.publish(weights, 1, kind="vlm", config={"bench": True})
            t_pub = time.time()
            if local_task is not None:
                await local_task
            else:
                for _ in children:
                    msg = await asyncio.to_thread(q.get, True, 180)
                    accepted.extend(msg[1])
                    refused += msg[2]
                for p in children:
                    p.join(10)
            cpu1 = (_own_cpu(), _pid_cpu(broker_pid))
    accepted.sort()
    load = os.getloadavg()[0]
    return {
        "workers": workers, "procs": max(1, procs), "adapter_bytes": nbytes,
        "chunks": pub.published[-1].chunks, "publish_s": round(t_pub - t0, 3),
        "first_worker_s": round(accepted[0] - t0, 3),
        "last_worker_s": round(accepted[-1] - t0, 3),
        "verified_workers": len(accepted), "refused": refused,
        "delivered_MiB_per_s": round(workers * nbytes / 2**20 / (accepted[-1] - t0), 1),
        "bar_s": BAR_S, "meets_bar": accepted[-1] - t0 <= BAR_S and len(accepted) == workers,
        "cpus": os.cpu_count(), "load_avg_1min": round(load, 1),
        # CPU seconds spent from publish to the last worker: what an idle machine needs
        "python_cpu_s": round(cpu1[0] - cpu0[0], 2),
        "mosquitto_cpu_s": round(cpu1[1] - cpu0[1], 2),
    }


def _own_cpu() -> float:
    """CPU seconds of this process (all threads) and of its finished children."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _pid_cpu(pid: int | None) -> float:
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=32)
    ap.add_argument("--mib", type=float, default=35.0)
    ap.add_argument("--procs", type=int, default=1,
                    help="spread the workers over this many processes (default: one)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    r = asyncio.run(run(a.workers, a.mib, a.procs))
    if a.json:
        print(json.dumps(r, indent=2))
        return
    print(f"broadcast {r['adapter_bytes'] / 2**20:.1f} MiB ({r['chunks']} chunks) to "
          f"{r['workers']} workers in {r['procs']} process(es), {r['cpus']} CPUs")
    print(f"  publish (serialise + sha256 + chunks acked by broker): {r['publish_s']:.2f} s")
    print(f"  first worker verified: {r['first_worker_s']:.2f} s")
    print(f"  last worker verified:  {r['last_worker_s']:.2f} s   (bar ≤ {BAR_S:.0f} s: "
          f"{'met' if r['meets_bar'] else 'MISSED'}; {r['delivered_MiB_per_s']} MiB/s delivered,"
          f" {r['refused']} refused)")
    print(f"  CPU spent meanwhile: workers+publisher {r['python_cpu_s']:.2f} s, mosquitto "
          f"{r['mosquitto_cpu_s']:.2f} s; machine load average {r['load_avg_1min']} on "
          f"{r['cpus']} CPUs (wall time on a shared machine includes waiting for a core)")


if __name__ == "__main__":
    main()
