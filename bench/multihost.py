"""Farms on several hosts: each farm controller in its own Linux network namespace.

A namespace is a host as far as the network goes: its own interfaces, loopback, routes
and ports. Each farm host gets one, joined to the broker's host (this one) by a veth
pair on a subnet of its own, and runs what a real farm host runs, as a user starts it:
``distrl farm up --sim N`` (sim phones and a private adb server on that host's
loopback) with its own farm id, signing key and broker account, connecting to the
broker's address on that link. One ``distrl broker --host 0.0.0.0`` (mosquitto,
accounts and ACL) and one ``distrl learner`` (trusting each farm's key for its farm id
only) run here.

Mid-run one host's link goes down (``ip link set … down``) for ``--outage`` seconds:
its episodes wait in its spool and arrive once the link is back; the others must keep
delivering. Afterwards every farm's ledger (each id it durably spooled) is reconciled
with what the learner learned:

    lost = ledgered − learned       duplicated = replay entries seen twice
    stall = the longest time a connected farm went without a delivery during the outage

    sudo python bench/multihost.py                      # 3 hosts, 60 s outage
    sudo python bench/multihost.py --hosts 4 --outage 30 --json

Needs root (namespaces, veth) and iproute2. Exit status 0 when nothing was lost or
duplicated, the cut host delivered nothing while cut and everything after, and no
connected farm stalled longer than ``--max-stall`` seconds; 1 otherwise; 2 when this
machine cannot make namespaces.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiomqtt  # noqa: E402

from bench.chaos import Part, _read_ids, _wait_port  # noqa: E402
from distrl_sdk.wire import DeviceStatus, Metrics, parse_message, topics  # noqa: E402
from distrl_sdk.wire.signing import SigningKey  # noqa: E402
from farm.sim.adbhost import free_port  # noqa: E402
from tui.model import FleetModel  # noqa: E402


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclass
class Host:
    """One farm host: a namespace, its link to the broker's host, its addresses."""

    index: int
    netns: str
    link: str  # the broker side of the veth pair (taken down to cut the host off)
    broker_ip: str  # the broker's address as this host reaches it
    ip: str  # this host's own address

    def argv(self, *cmd: str) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *cmd]


def can_make_hosts() -> str | None:
    """None when namespaces and veth pairs can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if shutil.which("ip") is None:
        return "needs iproute2 (`ip`)"
    probe = f"dmhprobe{os.getpid() % 100000}"
    try:
        _ip("netns", "add", probe)
    except (subprocess.CalledProcessError, OSError) as exc:
        return f"cannot create a network namespace: {getattr(exc, 'stderr', exc)}"
    with contextlib.suppress(subprocess.CalledProcessError):
        _ip("netns", "del", probe)
    return None


@contextlib.contextmanager
def hosts(n: int) -> Iterator[list[Host]]:
    """``n`` namespaces, each linked to this one by veth on 10.X.i.0/24 (X from the pid,
    so concurrent runs do not collide); everything is removed afterwards."""
    tag = os.getpid() % 100000
    net = 100 + tag % 100
    made: list[Host] = []
    try:
        for i in range(n):
            h = Host(i, f"distrl-mh{tag}-{i}", f"dmh{tag}r{i}"[:15], f"10.{net}.{i}.1",
                     f"10.{net}.{i}.2")
            peer = f"dmh{tag}n{i}"[:15]
            _ip("netns", "add", h.netns)
            made.append(h)
            _ip("link", "add", h.link, "type", "veth", "peer", "name", peer)
            _ip("link", "set", peer, "netns", h.netns)
            _ip("addr", "add", f"{h.broker_ip}/24", "dev", h.link)
            _ip("link", "set", h.link, "up")
            _ip("-n", h.netns, "addr", "add", f"{h.ip}/24", "dev", peer)
            _ip("-n", h.netns, "link", "set", peer, "up")
            _ip("-n", h.netns, "link", "set", "lo", "up")
        yield made
    finally:
        for h in made:
            with contextlib.suppress(subprocess.CalledProcessError):
                _ip("link", "del", h.link)  # takes its peer with it
            with contextlib.suppress(subprocess.CalledProcessError):
                _ip("netns", "del", h.netns)


@dataclass
class Deliveries:
    """received/<farm> from the learner's metrics, sampled as they are published."""

    samples: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    devices: dict[str, set[str]] = field(default_factory=dict)  # farm → devices seen
    # the TUI's own fleet model, fed what `distrl tui --farm +` subscribes to
    fleet: FleetModel = field(default_factory=FleetModel)

    def received(self, farm: str) -> float:
        return self.samples[-1][1].get(f"received/{farm}", 0.0) if self.samples else 0.0

    def longest_gap(self, farm: str, start: float, end: float) -> float:
        """The longest stretch of [start, end] without a new delivery from ``farm``."""
        last, worst, prev = start, 0.0, None
        for t, s in self.samples:
            v = s.get(f"received/{farm}", 0.0)
            if start <= t <= end and prev is not None and v > prev:
                worst, last = max(worst, t - last), t
            prev = v
        return max(worst, end - last)


async def watch(port: int, password: str, got: Deliveries, t0: float,
                stop: asyncio.Event) -> None:
    """The viewer account (what `distrl tui --farm +` connects as): the learner's metrics
    and every farm's device statuses."""
    while not stop.is_set():
        try:
            async with aiomqtt.Client("127.0.0.1", port, username="viewer",
                                      password=password, identifier="multihost-watch",
                                      timeout=3) as c:
                await c.subscribe(topics.learner_metrics(), qos=0)
                await c.subscribe(f"{topics.PREFIX}/+/status/+", qos=0)
                async for m in c.messages:
                    payload = m.payload if isinstance(m.payload, bytes) else b""
                    got.fleet.ingest(str(m.topic), payload)
                    parsed = parse_message(str(m.topic), m.payload)
                    body = getattr(parsed, "body", None)
                    if isinstance(body, Metrics):
                        got.samples.append((time.monotonic() - t0, dict(body.scalars)))
                    elif isinstance(body, DeviceStatus) and body.device_id.startswith(
                            "127.0.0.1:"):  # a phone's (not the farm's own) status
                        farm = str(m.topic).split("/")[2]  # distrl/v1/<farm>/status/<dev>
                        got.devices.setdefault(farm, set()).add(body.device_id)
        except (aiomqtt.MqttError, OSError):
            await asyncio.sleep(0.3)


async def reachable(h: Host, port: int) -> bool:
    """Whether a TCP connect from host ``h`` to the broker succeeds (within 2 s)."""
    code = (f"import socket; socket.create_connection(({h.broker_ip!r}, {port}), "
            "timeout=2).close()")
    proc = await asyncio.create_subprocess_exec(
        *h.argv(sys.executable, "-c", code), stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL)
    return await proc.wait() == 0


async def run(n_hosts: int, phones: int, warmup_s: float, outage_s: float, after_s: float,
              work: Path, progress: Callable[[str], None]) -> dict[str, Any]:
    from farm.learner.service import LearnerConfig, LearnerService

    keys, accounts, logs = work / "keys", work / "accounts", work / "logs"
    for d in (keys, accounts, logs):
        d.mkdir(parents=True, exist_ok=True)
    farms = [f"host{i}" for i in range(n_hosts)]
    for name in ["learner", "operator", *farms]:  # each farm host signs with its own key
        if not (keys / f"{name}.key").exists():
            SigningKey.generate(name).save(keys / f"{name}.key")
    env = {**os.environ, "DISTRL_KEYS": str(keys), "PYTHONUNBUFFERED": "1"}
    port = free_port()
    run_dir, learner_cfg = work / "learner", work / "learner.toml"
    learner_cfg.write_text('checkpoint_every_s = 20\nmetrics_every_s = 1\n'
                           'torch_threads = 1\nclient_id = "multihost-learner"\n'
                           '[algo_config]\nmin_episodes = 4\nbatch_episodes = 8\n')
    cli = [sys.executable, "-m", "farm.cli"]
    got = Deliveries()
    with hosts(n_hosts) as hs:
        parts = {"broker": Part("broker", [
            *cli, "broker", "--host", "0.0.0.0", "--port", str(port), "--accounts",
            str(accounts), *[a for f in farms for a in ("--farm", f)],
            "--backend", "mosquitto"], env, logs)}
        parts["learner"] = Part("learner", [
            *cli, "learner", "--config", str(learner_cfg),
            "--broker", f"mqtt://learner@127.0.0.1:{port}",
            "--password-file", str(accounts / "learner.password"), "--run-dir", str(run_dir),
            *[a for f in farms for a in ("--farm-key-for", f, str(keys / f"{f}.pub"))]],
            env, logs)
        for h, farm in zip(hs, farms, strict=True):
            parts[farm] = Part(farm, h.argv(
                *cli, "farm", "up", "--broker", f"mqtt://farm-{farm}@{h.broker_ip}:{port}",
                "--password-file", str(accounts / f"farm-{farm}.password"),
                "--farm-id", farm, "--sim", str(phones), "--policy", "learned",
                "--signing-key", str(keys / f"{farm}.key"),
                "--spool", str(work / "spool" / farm), "--ledger", str(work / f"{farm}.ledger"),
                "--seed", str(h.index), "--frames-hz", "0", "--episode-timeout", "20",
                "--flush-timeout", "120", "--task", "settings.*"), env, logs)
        await parts["broker"].start()
        await _wait_port(port)
        for _ in range(100):
            if all((accounts / f"farm-{f}.password").exists() for f in farms):
                break
            await asyncio.sleep(0.1)
        viewer_pw = (accounts / "viewer.password").read_text().splitlines()[0]
        t0 = time.monotonic()
        stop = asyncio.Event()
        watcher = asyncio.create_task(watch(port, viewer_pw, got, t0, stop))
        for p in parts.values():
            await p.start()
        try:
            progress(f"{n_hosts} farm hosts × {phones} sim phones, learner and broker "
                     "started; waiting for every farm to deliver")
            async with asyncio.timeout(max(120.0, warmup_s)):
                while not all(got.received(f) > 0 for f in farms):
                    await asyncio.sleep(0.5)
                    for name, p in parts.items():
                        if not p.alive:
                            raise RuntimeError(f"{name} exited early: see {p.log_path}")
            await asyncio.sleep(max(0.0, warmup_s - (time.monotonic() - t0)))
            cut = hs[1 % n_hosts]
            cut_farm = farms[cut.index]
            before = {f: got.received(f) for f in farms}
            _ip("link", "set", cut.link, "down")
            cut_at = time.monotonic() - t0
            progress(f"[{cut_at:5.1f} s] link of {cut_farm} down for {outage_s:.0f} s; "
                     f"received so far {before}")
            await asyncio.sleep(min(2.0, outage_s / 2))
            cut_reachable = await reachable(cut, port)  # the cut must be real
            await asyncio.sleep(max(0.0, outage_s - (time.monotonic() - t0 - cut_at)))
            during = {f: got.received(f) - before[f] for f in farms}
            cut_ledger = len(_read_ids(work / f"{cut_farm}.ledger"))
            _ip("link", "set", cut.link, "up")
            back_at = time.monotonic() - t0
            progress(f"[{back_at:5.1f} s] link back; delivered during the outage {during}, "
                     f"{cut_farm} ledgered {cut_ledger} so far")
            # recovery: until the learner holds all the cut host spooled by the link's
            # return (it also waits behind the learner's own ingest backlog, if any)
            recovery_s: float | None = None
            back = time.monotonic()
            while time.monotonic() - back < max(after_s, 180.0):
                if recovery_s is None and got.received(cut_farm) >= cut_ledger:
                    recovery_s = round(time.monotonic() - back, 1)
                    progress(f"[{time.monotonic() - t0:5.1f} s] {cut_farm} caught up "
                             f"({cut_ledger} episodes) {recovery_s} s after its link came "
                             "back")
                if recovery_s is not None and time.monotonic() - back >= after_s:
                    break
                await asyncio.sleep(0.25)
            caught_up = got.received(cut_farm) - before[cut_farm]
            # what the TUI's fleet shows now (stopped farms clear their rows)
            tui_rows = {f: sum(1 for k in got.fleet.devices
                               if k[0] == f and k[1].startswith("127.0.0.1:")) for f in farms}
            progress("stopping: each farm flushes its spool, then the learner checkpoints")
            farm_rc = {f: await parts[f].stop(timeout=150) for f in farms}
            learner_rc = await parts["learner"].stop(timeout=90)
        finally:
            stop.set()
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            for p in parts.values():
                await p.stop(timeout=30)

    cfg = LearnerConfig.model_validate(
        {**__import__("tomllib").loads(learner_cfg.read_text()),
         "broker_url": f"mqtt://learner@127.0.0.1:{port}", "run_dir": run_dir})
    audit = LearnerService(cfg).audit()
    learned = set(audit["seen_ids"])
    replay = Counter(e.id for e in audit["episodes"])
    per_farm: dict[str, Any] = {}
    for f in farms:
        ledgered = _read_ids(work / f"{f}.ledger")
        per_farm[f] = {
            "ledgered": len(ledgered), "learned": len(set(ledgered) & learned),
            "lost": sorted(set(ledgered) - learned),
            "delivered_during_outage": during[f],
            "longest_gap_during_outage_s": round(got.longest_gap(f, cut_at, back_at), 1),
            "devices_seen": len(got.devices.get(f, ())),
            "tui_fleet_rows": tui_rows[f],
            "exit_status": farm_rc[f]}
    return {
        "hosts": n_hosts, "phones_per_host": phones, "outage_s": outage_s, "cut": cut_farm,
        "cut_host_reached_broker_during_outage": cut_reachable,
        "cut_farm_ledgered_by_end_of_outage": cut_ledger,
        "cut_farm_delivered_after": caught_up, "recovery_s": recovery_s, "farms": per_farm,
        "duplicated": sorted(t for t, k in replay.items() if k > 1),
        "learned_total": len(learned), "learner_exit_status": learner_rc,
        "policy_version": audit["version"], "work_dir": str(work)}


def verdict(r: dict[str, Any], max_stall_s: float) -> list[str]:
    """What failed (empty: PASS)."""
    bad = []
    cut = r["cut"]
    for f, s in r["farms"].items():
        if s["lost"]:
            bad.append(f"{f}: {len(s['lost'])} lost")
        if s["devices_seen"] == 0 or s["tui_fleet_rows"] != s["devices_seen"]:
            bad.append(f"{f}: {s['tui_fleet_rows']} rows in the TUI's fleet for "
                       f"{s['devices_seen']} devices seen")
        if f != cut and s["longest_gap_during_outage_s"] > max_stall_s:
            bad.append(f"{f} stalled {s['longest_gap_during_outage_s']} s during the outage")
    if r["cut_host_reached_broker_during_outage"]:
        bad.append(f"{cut} could still reach the broker while its link was down")
    if r["duplicated"]:
        bad.append(f"{len(r['duplicated'])} duplicated")
    if r["cut_farm_delivered_after"] <= 0 or r["recovery_s"] is None:
        bad.append(f"{cut} did not catch up after its link came back")
    return bad


def report(r: dict[str, Any], bad: list[str]) -> str:
    lines = [f"multihost: {r['hosts']} farm hosts (network namespaces) × "
             f"{r['phones_per_host']} sim phones; {r['cut']}'s link down {r['outage_s']:.0f} s"]
    for f, s in r["farms"].items():
        lines.append(f"  {f}: ledgered {s['ledgered']} · learned {s['learned']} · lost "
                     f"{len(s['lost'])} · delivered during the outage "
                     f"{s['delivered_during_outage']:.0f} · longest gap then "
                     f"{s['longest_gap_during_outage_s']} s · devices seen {s['devices_seen']} "
                     f"(TUI fleet rows {s['tui_fleet_rows']})"
                     + (" (cut off: what the broker already held)" if f == r["cut"] else ""))
    lines.append(f"  {r['cut']} reached the broker during the outage: "
                 f"{r['cut_host_reached_broker_during_outage']}")
    lines.append(f"  {r['cut']} after the link came back: {r['cut_farm_delivered_after']:.0f} "
                 f"delivered, caught up in {r['recovery_s']} s; duplicated "
                 f"{len(r['duplicated'])}; learner final v{r['policy_version']}")
    lines.append("PASS" if not bad else "FAIL: " + "; ".join(bad))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=3, help="farm hosts (≥ 2)")
    ap.add_argument("--phones", type=int, default=2, help="sim phones per host")
    ap.add_argument("--warmup", type=float, default=20.0,
                    help="seconds of normal running before the cut")
    ap.add_argument("--outage", type=float, default=60.0, help="seconds the link is down")
    ap.add_argument("--after", type=float, default=20.0,
                    help="seconds of running after the link is back")
    ap.add_argument("--max-stall", type=float, default=15.0,
                    help="longest a connected farm may go without a delivery while "
                         "another is cut off")
    ap.add_argument("--work-dir", type=Path, default=None)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.hosts < 2:
        ap.error("--hosts must be ≥ 2")
    why = can_make_hosts()
    if why is not None:
        print(f"multihost: {why}", file=sys.stderr)
        return 2
    work = a.work_dir or Path(tempfile.mkdtemp(prefix="distrl-multihost-"))
    res = asyncio.run(run(a.hosts, a.phones, a.warmup, a.outage, a.after, work,
                          lambda s: print(s, file=sys.stderr, flush=True)))
    bad = verdict(res, a.max_stall)
    print(json.dumps({**res, "failures": bad}, indent=2) if a.json else report(res, bad))
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
