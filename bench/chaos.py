"""Chaos as a benchmark: a seeded fault schedule against the real parts, then a ledger.

Runs, each as its own process exactly as a user starts it: sim phones (`distrl sim
serve`), a private adb server, `distrl broker` (accounts and ACL), `distrl learner` and
`distrl farm up --policy learned --ledger` (every trajectory id the farm durably spooled).
While they run, a seeded schedule

* SIGKILLs the learner, the farm, the broker, alone and together, and restarts them;
* injects sim faults (dropped adb connections, hung phones, slow frames);
* sends forgeries from a client holding every account's broker password but none of
  the parts' signing keys: acks for the farm's spooled ids, quarantine commands for
  every phone, trajectories (new ids, and real ids with forged content), and the
  learner's pointer re-announced as version 10⁹ — unsigned and signed by a rogue key.

Then everything is stopped cleanly (the farm flushes its spool, the learner writes its
final checkpoint) and the farm's ledger is reconciled with what the learner holds:

    lost = ledgered − learned          duplicated = replay entries seen twice
    forged accepted = forged ids the learner took, forged content in replay,
                      steps played by a forged version, devices a forger commanded

    python bench/chaos.py                           # 180 s, seed 0, 4 phones
    python bench/chaos.py --duration 60 --seed 3    # what CI runs (tests/test_chaos.py)

Exit status 0 when nothing was lost, duplicated or forged in, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import socket
import sys
import tempfile
import time
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiomqtt  # noqa: E402

from distrl_sdk.wire import (  # noqa: E402
    Command,
    PolicyPointer,
    StepMsg,
    TrajectoryAck,
    TrajectoryMsg,
    encode_envelope,
    encode_trajectory,
    parse_message,
    split_chunks,
    topics,
)
from distrl_sdk.wire.signing import SigningKey  # noqa: E402
from farm.sim.adbhost import PrivateAdbServer, free_port  # noqa: E402
from farm.transport import Spool  # noqa: E402

FARM = "chaos"
FORGED = "forged"  # id prefix and instruction marker of everything the forger makes
KINDS = ("learner", "farm", "broker", "learner+farm", "all", "sim-disconnect", "sim-hang",
         "sim-slow")


@dataclass
class Fault:
    at_s: float
    kind: str
    down_s: float  # how long the killed parts stay down / the sim fault lasts
    phone: int = 0


def schedule(seed: int, duration_s: float, *, every_s: tuple[float, float] = (3.0, 7.0),
             ) -> list[Fault]:
    """The seeded fault plan: a fault every 3–7 s, kinds and down times drawn; the last
    leaves 5 s before the end so the final stop starts from a running system."""
    rng = random.Random(seed)
    out: list[Fault] = []
    t = rng.uniform(*every_s)
    while t < duration_s - 5:
        out.append(Fault(round(t, 2), rng.choice(KINDS), round(rng.uniform(0.3, 3.0), 2),
                         rng.randrange(64)))
        t += rng.uniform(*every_s)
    return out


class Part:
    """One child process: started, SIGKILLed, restarted, stopped with SIGINT."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], logs: Path) -> None:
        self.name, self.argv, self.env = name, argv, env
        self.log_path = logs / f"{name}.log"
        self.proc: asyncio.subprocess.Process | None = None
        self.starts = 0
        self.kills = 0
        self.want_up = True  # False while a fault holds it down
        self.self_exits = 0  # exits nobody caused (e.g. the broker was down at its start)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def start(self) -> None:
        if self.alive:
            return
        with self.log_path.open("ab") as log:
            log.write(f"\n--- start {self.starts} at {time.time():.3f}\n".encode())
            log.flush()
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv, env=self.env, cwd=ROOT, stdin=asyncio.subprocess.DEVNULL,
                stdout=log, stderr=log)
        self.starts += 1

    async def kill(self) -> None:
        if self.alive:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGKILL)
            await self.proc.wait()
            self.kills += 1

    async def stop(self, timeout: float) -> int | None:
        """SIGINT, wait up to ``timeout``; SIGKILL after that. Returns the exit status."""
        if not self.alive:
            return self.proc.returncode if self.proc else None
        assert self.proc is not None
        self.proc.send_signal(signal.SIGINT)
        try:
            return await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            await self.kill()
            return None


@dataclass
class Forgeries:
    acks: int = 0  # forged ack messages (each naming many spooled ids)
    commands: int = 0
    trajectories: list[str] = field(default_factory=list)  # forged new ids
    hijacked: int = 0  # real ids re-sent with forged content
    pointers: int = 0
    anonymous_refused: int = 0
    anonymous_accepted: int = 0
    errors: int = 0  # broker gone mid-attack (it is being killed too)


@dataclass
class Watch:
    """What a watch-only client saw: device states and the learner's real pointers."""

    quarantined: set[str] = field(default_factory=set)
    devices: set[str] = field(default_factory=set)
    pointer: PolicyPointer | None = None  # the newest real one (signed by the learner)
    max_real_version: int = -1


def _creds(accounts: Path, user: str, port: int) -> dict[str, Any]:
    pw = (accounts / f"{user}.password").read_text().splitlines()[0]
    return {"hostname": "127.0.0.1", "port": port, "username": user, "password": pw}


def _read_ids(ledger: Path) -> list[str]:
    return ledger.read_text().split() if ledger.exists() else []


def _forged_traj(tid: str, device: str) -> TrajectoryMsg:
    steps = [StepMsg(index=i, action={"action_type": "click", "x": 0.5, "y": 0.5},
                     reward=0.0, log_prob=-0.1, policy_version=0) for i in range(2)]
    return TrajectoryMsg(id=tid, farm_id=FARM, device_id=device, task="settings.wifi_off",
                         instruction=f"{FORGED}: turn off Wi-Fi", status="success",
                         reward=1.0, steps=steps)


async def forger(port: int, accounts: Path, ledger: Path, watch: Watch, stop: asyncio.Event,
                 got: Forgeries, rng: random.Random) -> None:
    """Every ~0.7 s, every forgery, unsigned and signed by a rogue key, each with the
    broker account that may publish it (stolen passwords: the case signatures are for)."""
    rogue = SigningKey.generate("rogue")
    n = 0
    while not stop.is_set():
        try:
            try:  # anonymous: must be refused at CONNECT
                async with aiomqtt.Client("127.0.0.1", port, identifier=f"anon-{n}",
                                          timeout=3):
                    got.anonymous_accepted += 1
            except aiomqtt.MqttError:
                got.anonymous_refused += 1
            spooled = await asyncio.to_thread(_read_ids, ledger)
            async with aiomqtt.Client(**_creds(accounts, "learner", port),
                                      identifier=f"forge-l-{n}", timeout=3) as c:
                for signer in (None, rogue):
                    if spooled:
                        await c.publish(topics.ack(FARM), encode_envelope(
                            TrajectoryAck(ids=spooled[-200:], learner_id="learner"),
                            farm_id=FARM, signer=signer), qos=1)
                        got.acks += 1
                    if watch.pointer is not None:
                        fake = watch.pointer.model_copy(update={"version": 10**9})
                        await c.publish(topics.policy_pointer(),
                                        encode_envelope(fake, signer=signer), qos=1,
                                        retain=True)
                        got.pointers += 1
            async with aiomqtt.Client(**_creds(accounts, "operator", port),
                                      identifier=f"forge-o-{n}", timeout=3) as c:
                for signer in (None, rogue):
                    for dev in sorted(watch.devices):
                        await c.publish(topics.cmd(FARM, dev), encode_envelope(
                            Command(device_id=dev, op="quarantine"), farm_id=FARM,
                            signer=signer), qos=1)
                        got.commands += 1
            async with aiomqtt.Client(**_creds(accounts, f"farm-{FARM}", port),
                                      identifier=f"forge-f-{n}", timeout=3) as c:
                for signer in (None, rogue):
                    tid = f"{FORGED}-{n:05d}-{signer is not None:d}"
                    real = [rng.choice(spooled)] if spooled else []
                    for i in [tid, *real]:
                        payload = encode_trajectory(_forged_traj(i, "sim-0"), signer=signer)
                        for chunk in split_chunks(i, payload):
                            await c.publish(topics.traj(FARM, i), chunk, qos=1)
                    got.trajectories.append(tid)
                    got.hijacked += len(real)
        except (aiomqtt.MqttError, OSError):
            got.errors += 1
        n += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.7)


async def watcher(port: int, accounts: Path, keys: Path, watch: Watch,
                  stop: asyncio.Event) -> None:
    """The viewer account: device statuses and the policy pointer, across broker restarts.
    A pointer counts as the learner's only if the learner's own key signed it."""
    from distrl_sdk.wire.signing import TrustedKeys, Verdict, check_envelope

    learner = TrustedKeys.load([keys / "learner.pub"])
    while not stop.is_set():
        try:
            async with aiomqtt.Client(**_creds(accounts, "viewer", port),
                                      identifier="chaos-watch", timeout=3) as c:
                await c.subscribe(f"{topics.PREFIX}/{FARM}/status/+", qos=1)
                await c.subscribe(topics.policy_pointer(), qos=1)
                async for m in c.messages:
                    parsed = parse_message(str(m.topic), m.payload)
                    body = getattr(parsed, "body", None)
                    if isinstance(body, PolicyPointer):
                        ok, _ = check_envelope(m.payload, learner)
                        if ok is Verdict.OK and body.version > watch.max_real_version:
                            watch.pointer, watch.max_real_version = body, body.version
                    elif body is not None and getattr(body, "device_id", "").startswith(
                            "127.0.0.1:"):
                        watch.devices.add(body.device_id)
                        if body.state == "quarantined":
                            watch.quarantined.add(body.device_id)
        except (aiomqtt.MqttError, OSError):
            await asyncio.sleep(0.3)


def _sim_fault(state: dict[str, Any], phone: int, kind: str, seconds: float) -> None:
    with socket.create_connection(("127.0.0.1", state["control_port"]), timeout=5) as s:
        s.sendall(json.dumps({"token": state["token"], "op": "fault",
                              "phone": state["phones"][phone % len(state["phones"])]["serial"],
                              "kind": kind, "seconds": seconds,
                              "value": 800 if kind == "slow-frames" else None}).encode() + b"\n")
        s.makefile("rb").readline()


async def _wait_port(port: int, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while True:
            try:
                _r, w = await asyncio.open_connection("127.0.0.1", port)
                w.close()
                return
            except OSError:
                await asyncio.sleep(0.1)


async def run(duration_s: float, seed: int, phones: int, profile: str, work: Path,
              progress: Callable[[str], None], *, open_parts: bool = False) -> dict[str, Any]:
    """``open_parts``: the control run, farm and learner with ``accept_unsigned`` (no
    signature checks): what the same forgeries do when nothing refuses them."""
    from bench._common import phones_in_child
    from farm.learner.service import LearnerConfig, LearnerService

    keys, accounts, logs = work / "keys", work / "accounts", work / "logs"
    for d in (keys, accounts, logs):
        d.mkdir(parents=True, exist_ok=True)
    for role in ("learner", "farm", "operator"):  # the parts' own keys (as `distrl keys`)
        if not (keys / f"{role}.key").exists():
            SigningKey.generate(role).save(keys / f"{role}.key")
    env = {**os.environ, "DISTRL_KEYS": str(keys), "PYTHONUNBUFFERED": "1"}
    port = free_port()
    ledger, spool, run_dir = work / "farm.ledger", work / "spool", work / "learner"
    learner_cfg = work / "learner.toml"
    learner_cfg.write_text(
        'checkpoint_every_s = 20\nmetrics_every_s = 2\ntorch_threads = 1\n'
        f'client_id = "chaos-learner"\nfarm_id = "{FARM}"\n'
        f'accept_unsigned = {str(open_parts).lower()}\n'
        '[algo_config]\nmin_episodes = 4\nbatch_episodes = 8\n')
    farm_cfg = work / "farm.toml"
    farm_cfg.write_text(f"[trust]\naccept_unsigned = {str(open_parts).lower()}\n")

    def url(user: str) -> str:
        return f"mqtt://{user}@127.0.0.1:{port}"

    cli = [sys.executable, "-m", "farm.cli"]
    plan = schedule(seed, duration_s)
    with phones_in_child(phones, profile=profile, seed=seed) as sims, \
            PrivateAdbServer() as adb:
        serials = [p["serial"] for p in sims["phones"]]
        parts = {
            "broker": Part("broker", [*cli, "broker", "--port", str(port), "--accounts",
                                      str(accounts), "--farm", FARM,
                                      "--backend", "mosquitto"], env, logs),
            "learner": Part("learner", [*cli, "learner", "--config", str(learner_cfg),
                                        "--broker", url("learner"), "--password-file",
                                        str(accounts / "learner.password"),
                                        "--run-dir", str(run_dir)], env, logs),
            "farm": Part("farm", [*cli, "farm", "up", "--config", str(farm_cfg),
                                  "--broker", url(f"farm-{FARM}"),
                                  "--password-file", str(accounts / f"farm-{FARM}.password"),
                                  "--farm-id", FARM, "--policy", "learned",
                                  "--adb-port", str(adb.port), "--spool", str(spool),
                                  "--ledger", str(ledger), "--seed", str(seed),
                                  "--frames-hz", "0", "--episode-timeout", "20",
                                  "--flush-timeout", "90", "--task", "settings.*",
                                  *[a for s in serials for a in ("--connect", s)]],
                         {**env, "ANDROID_ADB_SERVER_PORT": str(adb.port)}, logs),
        }
        await parts["broker"].start()
        await _wait_port(port)
        for _ in range(100):  # the accounts' password files
            if (accounts / f"farm-{FARM}.password").exists():
                break
            await asyncio.sleep(0.1)
        await parts["learner"].start()
        await parts["farm"].start()
        watch, forged, stop = Watch(), Forgeries(), asyncio.Event()
        helpers = [asyncio.create_task(watcher(port, accounts, keys, watch, stop)),
                   asyncio.create_task(forger(port, accounts, ledger, watch, stop, forged,
                                              random.Random(seed)))]
        began = time.monotonic()
        applied: list[dict[str, Any]] = []
        restarts: list[asyncio.Task[None]] = []

        async def supervise() -> None:
            """Restart=always, as systemd would: a learner or farm started while the
            broker was still coming up exits (cannot reach the broker), and so does a
            broker whose port the killed one's mosquitto has not yet let go of."""
            while not stop.is_set():
                for p in parts.values():  # the broker first
                    if p.want_up and not p.alive:
                        p.self_exits += 1
                        await p.start()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.5)

        async def down_then_up(names: list[str], down_s: float) -> None:
            for n in names:
                parts[n].want_up = False
                await parts[n].kill()
            await asyncio.sleep(down_s)
            for n in ("broker", "learner", "farm"):  # the broker first, as on a real host
                if n in names:
                    await parts[n].start()
                    parts[n].want_up = True

        helpers.append(asyncio.create_task(supervise()))

        for f in plan:
            await asyncio.sleep(max(0.0, began + f.at_s - time.monotonic()))
            names = {"learner": ["learner"], "farm": ["farm"], "broker": ["broker"],
                     "learner+farm": ["learner", "farm"],
                     "all": ["broker", "learner", "farm"]}.get(f.kind)
            if names is not None:
                # each kill hits a running part: wait out the last fault's down time
                # and any restart the supervisor is making
                async with asyncio.timeout(60):
                    while not all(parts[n].alive and parts[n].want_up  # noqa: ASYNC110
                                  for n in names):
                        await asyncio.sleep(0.1)
                restarts.append(asyncio.create_task(down_then_up(names, f.down_s)))
            else:
                kind = {"sim-disconnect": "disconnect", "sim-hang": "hang",
                        "sim-slow": "slow-frames"}[f.kind]
                await asyncio.to_thread(_sim_fault, sims, f.phone, kind, f.down_s)
            applied.append(asdict(f))
            progress(f"[{time.monotonic() - began:6.1f} s] fault {len(applied)}/{len(plan)}:"
                     f" {f.kind} ({f.down_s:.1f} s)")
        await asyncio.sleep(max(0.0, began + duration_s - time.monotonic()))
        await asyncio.gather(*restarts)
        stop.set()
        for t in helpers:
            t.cancel()
        for res in await asyncio.gather(*helpers, return_exceptions=True):
            if isinstance(res, Exception):  # a broken watcher or forger proves nothing
                raise res

        progress("stopping: the farm flushes its spool, then the learner checkpoints")
        for p in parts.values():
            await p.start()  # anything a last fault left down
        farm_rc = await parts["farm"].stop(timeout=150)
        left = Spool(spool)
        still_spooled = len(left)
        left.close()
        learner_rc = await parts["learner"].stop(timeout=90)
        broker_rc = await parts["broker"].stop(timeout=30)

    cfg = LearnerConfig.model_validate(
        {**tomllib.loads(learner_cfg.read_text()), "broker_url": url("learner"),
         "run_dir": run_dir})
    audit = LearnerService(cfg).audit()
    published = _read_ids(ledger)
    ledgered = Counter(published)
    learned = set(audit["seen_ids"])
    replay = Counter(e.id for e in audit["episodes"])
    # the learner's own versions end at its final one: a step above it was played by a
    # version only a forged pointer announced
    forged_content = sum(e.instruction.startswith(FORGED) for e in audit["episodes"])
    steps_above = sum(s.policy_version > audit["version"]
                      for e in audit["episodes"] for s in e.steps)
    forged_ids = set(forged.trajectories)
    result = {
        "seed": seed, "duration_s": duration_s, "phones": phones, "profile": profile,
        "signature_checks": not open_parts,
        "faults": len(applied), "fault_kinds": dict(Counter(f["kind"] for f in applied)),
        "kills": {n: p.kills for n, p in parts.items()},
        "self_exits": {n: p.self_exits for n, p in parts.items()},
        "published": len(ledgered), "learned": len(learned & set(ledgered)),
        "in_replay": sum(replay.values()),
        "lost": sorted(set(ledgered) - learned),
        "duplicated": sorted(t for t, n in replay.items() if n > 1),
        "ledgered_twice": sorted(t for t, n in ledgered.items() if n > 1),
        "unledgered": sorted(learned - set(ledgered) - forged_ids),
        "still_spooled": still_spooled,
        "forged_sent": {"acks": forged.acks, "commands": forged.commands,
                        "trajectories": len(forged_ids), "real_ids_with_forged_content":
                        forged.hijacked, "pointers": forged.pointers,
                        "anonymous_connects": forged.anonymous_refused,
                        "dropped_by_broker_kills": forged.errors},
        "forged_accepted": {
            "trajectories": sorted(forged_ids & learned),
            "forged_content_in_replay": forged_content,
            "steps_of_forged_versions": steps_above,
            "devices_commanded": sorted(watch.quarantined),
            "anonymous_connects": forged.anonymous_accepted},
        "learner_refused": audit["refused"],
        "policy_versions": audit["version"],
        "exit_status": {"farm": farm_rc, "learner": learner_rc, "broker": broker_rc},
        "work_dir": str(work),
    }
    return result


def passed(r: dict[str, Any]) -> bool:
    return (not r["lost"] and not r["duplicated"] and not r["still_spooled"]
            and not any(r["forged_accepted"].values()))


def report(r: dict[str, Any]) -> str:
    fa = r["forged_accepted"]
    fs = r["forged_sent"]
    return "\n".join([
        f"chaos: seed {r['seed']}, {r['duration_s']:.0f} s, {r['phones']} {r['profile']} "
        f"phones; {r['faults']} faults {r['fault_kinds']}; SIGKILLs {r['kills']}; "
        f"restarted after exiting on their own {r['self_exits']}"
        + ("" if r["signature_checks"] else " — CONTROL RUN: signature checks off"),
        f"trajectories: published (ledger) {r['published']} · learned {r['learned']} · "
        f"lost {len(r['lost'])} · duplicated {len(r['duplicated'])} · still spooled "
        f"{r['still_spooled']} · unledgered {len(r['unledgered'])}",
        f"forged sent: {fs['acks']} ack msgs, {fs['commands']} commands, "
        f"{fs['trajectories']} trajectories + {fs['real_ids_with_forged_content']} real ids "
        f"with forged content, {fs['pointers']} pointers (v10⁹), "
        f"{fs['anonymous_connects']} anonymous connects",
        f"forged accepted: trajectories {len(fa['trajectories'])} · forged content in "
        f"replay {fa['forged_content_in_replay']} · steps played by a forged version "
        f"{fa['steps_of_forged_versions']} · devices commanded {len(fa['devices_commanded'])}",
        f"learner refused {r['learner_refused']}; final policy v{r['policy_versions']}",
        "PASS" if passed(r) else "FAIL",
    ])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=180.0, help="seconds of faults")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--phones", type=int, default=4)
    ap.add_argument("--profile", default="instant")
    ap.add_argument("--work-dir", type=Path, default=None,
                    help="keep logs, spool, ledger and learner run here (default: a temp dir)")
    ap.add_argument("--open", action="store_true",
                    help="control run: farm and learner accept unsigned messages, to show "
                         "what the forgeries do when nothing refuses them")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    a = ap.parse_args(argv)
    work = a.work_dir or Path(tempfile.mkdtemp(prefix="distrl-chaos-"))
    res = asyncio.run(run(a.duration, a.seed, a.phones, a.profile, work,
                          lambda s: print(s, file=sys.stderr, flush=True), open_parts=a.open))
    print(json.dumps(res, indent=2) if a.json else report(res))
    return 0 if passed(res) else 1


if __name__ == "__main__":
    sys.exit(main())
