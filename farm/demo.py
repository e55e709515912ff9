"""``distrl demo``: the whole system on one machine, in one command.

    embedded MQTT broker ─┬─ learner process   (`distrl learner`: A-RIDE, UI-tree policy)
                          ├─ farm process      (`distrl farm up --sim N --policy learned`)
                          └─ TUI               (`python -m tui`, foreground) or --headless

Each part is the same program a user runs on its own, started as a child process in
its own process group with its output in ``<run-dir>/logs``; the demo only wires them
together. Shutdown (Ctrl-C, ``q`` in the TUI, ``--duration``) stops the farm first (its
in-flight episodes are published, the spool flushed), then the learner (which writes
its checkpoint), then the broker; a child that does not stop in time is killed with
its whole group, so nothing is left running.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distrl_sdk.wire import FARM_STATUS_ID, DeviceStatus, Message, Metrics, parse_message, topics
from distrl_sdk.wire.signing import SigningKey

__all__ = ["DemoConfig", "DemoSummary", "run_demo"]

Say = Callable[[str], None]
DEMO_FARM_ID = "demo"
#: the farm publishes its own retained status under this device id (Publisher's default
#: ``controller_id``): the farm's broker link, not a device


@dataclass
class DemoConfig:
    phones: int = 8
    """Simulated phones the farm drives."""
    duration_s: float | None = None
    """Stop on its own after this many seconds (default: until Ctrl-C / q)."""
    headless: bool = False
    """Print progress lines and a summary instead of starting the TUI."""
    run_dir: Path = Path("runs/demo")
    """Each run gets a timestamped directory here: logs, checkpoints, the farm's spool."""
    tasks: tuple[str, ...] = ()
    """Task names; default: the sample suite's easy tier (tag ``easy``)."""
    tag: str | None = "easy"
    """Collect the tasks with this tag when ``tasks`` is empty (None: every task)."""
    algo: str = "aride"
    """Learner algorithm: aride (DistRL) or digirl (the baseline)."""
    seed: int = 0
    progress_every_s: float = 5.0
    stop_timeout_s: float = 30.0
    """How long each child gets to stop cleanly before its process group is killed."""
    tui_argv: tuple[str, ...] | None = None
    """The TUI's command line (default: ``python -m tui`` on the demo's broker); tests
    put a program that crashes here."""
    pretrain: bool = True
    """Start as the paper does: record oracle demonstrations, behaviour-clone a policy
    on them (SFT), then train it online. False: A-RIDE from a fresh policy."""
    demos_per_task: int = 2
    """Oracle demonstrations per task for the SFT phase (small: leave room for RL)."""
    sft_epochs: int = 60  # a few dozen steps of data: many passes, each one cheap
    eval_every_s: float | None = 20.0
    """Held-out evaluation rounds (test split, greedy, never trained on) every S seconds;
    their success is the headline number. None: no evaluation."""


@dataclass
class DemoSummary:
    started_at: float = field(default_factory=time.time)
    wall_s: float = 0.0
    first_episode_s: float | None = None  # demo start → first finished episode seen
    episodes: int = 0
    success_rate: float | None = None  # the learner's sliding window
    success_rate_first: float | None = None  # the first window the learner reported
    heldout: float | None = None  # the newest held-out evaluation round's success
    heldout_first: float | None = None  # … and the first one (the start of online RL)
    heldout_version: int | None = None
    pretrain_s: float | None = None  # demonstrations + SFT
    policy_version: int | None = None
    replay_size: int | None = None
    devices: dict[str, str] = field(default_factory=dict)  # device → last state
    exit_codes: dict[str, int | None] = field(default_factory=dict)
    crashed: list[str] = field(default_factory=list)  # parts that ended on their own, badly
    broker: str = ""
    run_dir: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    # two cores are shared by phones, farm and learner: keep torch from oversubscribing
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


class _Child:
    """A child process in its own process group (so one signal reaches all it started)."""

    def __init__(self, name: str, argv: list[str], log_path: Path | None) -> None:
        self.name, self.argv, self.log_path = name, argv, log_path
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        if self.log_path is None:  # the TUI: it owns the terminal
            self.proc = await asyncio.create_subprocess_exec(*self.argv, env=_child_env())
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:  # the child keeps its own copy of the descriptor
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv, stdin=subprocess.DEVNULL, stdout=fd, stderr=subprocess.STDOUT,
                env=_child_env(), start_new_session=True)
        finally:
            os.close(fd)

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.returncode

    async def stop(self, timeout: float, sig: int = signal.SIGINT) -> int | None:
        """``sig`` (SIGINT: a clean stop that flushes and checkpoints), then SIGKILL."""
        p = self.proc
        if p is None:
            return None
        group = self.log_path is not None
        if p.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, sig) if group else p.send_signal(sig)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(p.wait(), timeout)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGKILL) if group else p.kill()  # stragglers too
        return await p.wait()


def _write_pids(path: Path, children: list[_Child]) -> None:
    """Who runs this demo (for scripts and tests checking that nothing outlives it)."""
    pids: dict[str, int | None] = {"demo": os.getpid()}
    pids.update({c.name: c.pid for c in children})
    with contextlib.suppress(OSError):
        path.write_text(json.dumps(pids))


def learner_toml() -> str:
    """The demo's learner settings: a small machine shared with the phones. The trainer's
    settings are `distrl learner`'s own for the UI-tree policy
    (``farm.learner.service.KIND_ALGO_DEFAULTS``), so a learner started by hand learns as
    the demo's does."""
    return (
        "[learner]\n"
        "max_updates_per_episode = 0.5  # replay-ratio cap: leave the cores to the phones\n"
        "metrics_every_s = 2.0\n"
        "success_window = 64\n"
        "torch_threads = 1\n")


def _distrl(*args: str) -> list[str]:
    return [sys.executable, "-m", "farm.cli", *args]


class _Watcher:
    """Follows the learner's metrics and the devices' statuses over MQTT."""

    def __init__(self, summary: DemoSummary, t0: float) -> None:
        self.s, self.t0 = summary, t0
        self.episodes_by_device: dict[str, int] = {}
        self.garbage = 0

    def feed(self, msg: Message) -> None:
        s = self.s
        if isinstance(msg.body, DeviceStatus):
            st = msg.body
            if st.device_id == FARM_STATUS_ID:
                return  # the farm's own link status, not a phone
            s.devices[st.device_id] = st.state
            self.episodes_by_device[st.device_id] = st.episodes
            self._episodes(sum(self.episodes_by_device.values()))
        elif isinstance(msg.body, Metrics) and msg.topic.kind == "learner_metrics":
            sc = msg.body.scalars
            if "episodes" in sc:
                self._episodes(int(sc["episodes"]))
            if "success_rate" in sc:
                s.success_rate = sc["success_rate"]
                if s.success_rate_first is None:
                    s.success_rate_first = sc["success_rate"]
            if "eval/success_rate" in sc:
                s.heldout = sc["eval/success_rate"]
                if s.heldout_first is None:
                    s.heldout_first = s.heldout
                if "eval/policy_version" in sc:
                    s.heldout_version = int(sc["eval/policy_version"])
            if "version" in sc:
                s.policy_version = int(sc["version"])
            if "replay_size" in sc:
                s.replay_size = int(sc["replay_size"])

    def _episodes(self, n: int) -> None:
        s = self.s
        if n > s.episodes:
            s.episodes = n
        if n > 0 and s.first_episode_s is None:
            s.first_episode_s = round(time.monotonic() - self.t0, 2)

    async def run(self, url: str) -> None:
        import aiomqtt

        from farm.transport import parse_broker_url

        addr = parse_broker_url(url)
        while True:
            try:
                async with aiomqtt.Client(**addr.client_kwargs(), clean_session=True,
                                          timeout=5) as client:
                    await client.subscribe(f"{topics.PREFIX}/+/status/+", qos=0)
                    await client.subscribe(topics.learner_metrics(), qos=0)
                    async for m in client.messages:
                        if not m.payload:  # a stopped farm clearing its retained statuses
                            continue
                        parsed = parse_message(str(m.topic), m.payload)
                        if isinstance(parsed, Message):
                            self.feed(parsed)
                        else:
                            self.garbage += 1
            except aiomqtt.MqttError:
                await asyncio.sleep(1.0)


def _progress_line(s: DemoSummary, elapsed: float) -> str:
    states: dict[str, int] = {}
    for st in s.devices.values():
        states[st] = states.get(st, 0) + 1
    devs = " ".join(f"{k} {v}" for k, v in sorted(states.items())) or "starting"
    sr = "-" if s.success_rate is None else f"{100 * s.success_rate:.0f} %"
    ver = "-" if s.policy_version is None else f"v{s.policy_version}"
    held = "-" if s.heldout is None else f"{100 * s.heldout:.0f} % (v{s.heldout_version})"
    return (f"[{elapsed:6.0f} s] held-out {held} · devices: {devs} · episodes {s.episodes} "
            f"· training success {sr} · policy {ver} · replay {s.replay_size or 0}")


async def _pretrain(cfg: DemoConfig, run_dir: Path, task_args: list[str], say: Say,
                    stop: asyncio.Event) -> Path | None:
    """Demonstrations → SFT, each the same command a user runs; the SFT checkpoint, or
    None when stopped. A failure raises DemoError with the log to read."""
    demos, sft = run_dir / "demos", run_dir / "sft"
    no_prior = json.dumps({"overlap_prior": 0.0, "overlap_feature": False, "seed": cfg.seed})
    steps = [
        ("demos", f"recording {cfg.demos_per_task} oracle demonstration(s) per task (train split)",
         _distrl("demos", "record", *task_args, "--split", "train",
                 "-k", str(cfg.demos_per_task), "--sim", str(max(1, min(cfg.phones, 4))),
                 "--seed", str(cfg.seed), "--out", str(demos), "--no-frames"), (0, 1)),
        ("sft", f"behaviour cloning on them ({cfg.sft_epochs} epochs, no hand-made prior)",
         _distrl("sft", "--demos", str(demos), "--policy", "uitree", "--policy-config",
                 no_prior, "--epochs", str(cfg.sft_epochs), "--lr", "3e-3",
                 "--seed", str(cfg.seed),
                 "--threads", "1", "--out", str(sft)), (0,)),
    ]
    for name, what, argv, ok in steps:
        say(f"{name}: {what} …")
        child = _Child(name, argv, run_dir / "logs" / f"{name}.log")
        await child.start()
        assert child.proc is not None
        waiting = asyncio.create_task(child.proc.wait())
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not waiting.done():
            await child.stop(5.0)
            return None
        if child.returncode not in ok:
            raise DemoError(f"`distrl {name}` failed (exit {child.returncode}); see "
                            f"{child.log_path}")
    return sft


class DemoError(RuntimeError):
    """A part of the demo could not start (its log says why)."""


async def run_demo(cfg: DemoConfig, say: Say, *, stop: asyncio.Event | None = None
                   ) -> DemoSummary:
    """Run until ``cfg.duration_s``, ``stop`` is set, the TUI exits, or a child dies."""
    from farm.broker import EmbeddedBroker
    from farm.broker_acl import BrokerAccounts, farm_user

    t0 = time.monotonic()
    stop = stop or asyncio.Event()
    # a fresh directory per run: the learner resumes from whatever its run dir holds
    run_dir = (cfg.run_dir / time.strftime("%Y%m%d-%H%M%S")).resolve()
    logs = run_dir / "logs"
    summary = DemoSummary(run_dir=str(run_dir))
    # an account per part and a topic ACL: nobody else on this machine can ack, command or
    # publish a policy; children read their passwords from files, never from argv
    accounts = BrokerAccounts.generate([DEMO_FARM_ID])
    accounts.save(run_dir / "broker")
    # the learner signs pointers and acks, the TUI its commands, the farm its
    # trajectories; each takes only what the others' keys signed
    keys = run_dir / "keys"
    learner_key, operator_key, farm_key = (keys / f"{role}.key"
                                           for role in ("learner", "operator", "farm"))
    for key in (learner_key, operator_key, farm_key):
        SigningKey.generate(key.stem).save(key)
    broker = EmbeddedBroker(accounts=accounts)
    await broker.start()
    summary.broker = broker.url
    say(f"broker ({broker.backend}) on {broker.url}, accounts in {run_dir / 'broker'}; "
        f"logs in {logs}")

    def connect_as(user: str) -> list[str]:
        return ["--broker", accounts.user_url(broker.url, user),
                "--password-file", str(accounts.password_file(user))]

    task_args: list[str] = []
    for name in cfg.tasks:
        task_args += ["--task", name]
    if not cfg.tasks and cfg.tag:
        task_args += ["--tag", cfg.tag]
    run_dir.mkdir(parents=True, exist_ok=True)
    init: list[str] = []
    if cfg.pretrain:
        t_pre = time.monotonic()
        try:
            sft = await _pretrain(cfg, run_dir, task_args, say, stop)
        except BaseException:
            await broker.stop()
            raise
        if sft is None:  # stopped while pretraining
            await broker.stop()
            summary.wall_s = round(time.monotonic() - t0, 2)
            return summary
        summary.pretrain_s = round(time.monotonic() - t_pre, 2)
        say(f"pretraining done in {summary.pretrain_s:.0f} s; online A-RIDE starts from it, "
            "its demonstrations kept in play")
        init = ["--init", str(sft), "--demos", str(run_dir / "demos")]
    (run_dir / "learner.toml").write_text(learner_toml())
    learner = _Child("learner", _distrl(
        "learner", "--config", str(run_dir / "learner.toml"), *connect_as("learner"),
        "--run-dir", str(run_dir / "learner"), "--signing-key", str(learner_key),
        "--farm-key", str(farm_key.with_suffix(".pub")),
        "--algo", cfg.algo, "--policy", "uitree", *init),
        logs / "learner.log")
    evaluation = ["--eval-every", f"{cfg.eval_every_s:g}", "--eval-episodes-per-task", "2"] \
        if cfg.eval_every_s else []
    farm = _Child("farm", _distrl(
        "farm", "up", *connect_as(farm_user(DEMO_FARM_ID)), "--sim", str(cfg.phones),
        "--policy", "learned", "--farm-id", DEMO_FARM_ID, "--spool", str(run_dir / "spool"),
        "--learner-key", str(learner_key.with_suffix(".pub")),
        "--operator-key", str(operator_key.with_suffix(".pub")), "--signing-key", str(farm_key),
        "--seed", str(cfg.seed),
        # unacked trajectories stay in the spool on disk; the demo does not wait long
        "--flush-timeout", "5",
        *evaluation, *task_args), logs / "farm.log")
    children = [learner, farm]
    watcher = _Watcher(summary, t0)
    watch = asyncio.create_task(watcher.run(accounts.url_for(broker.url, "viewer")))
    tui: _Child | None = None
    try:
        await learner.start()
        await farm.start()
        say(f"learner (pid {learner.pid}) and farm with {cfg.phones} sim phones "
            f"(pid {farm.pid}) started")
        headless = cfg.headless
        crash_log = logs / "tui-crash.log"
        if not headless:
            argv = list(cfg.tui_argv) if cfg.tui_argv is not None else [
                sys.executable, "-m", "tui", *connect_as("operator"), "--farm", "+",
                "--signing-key", str(operator_key),
                "--farm-key", str(farm_key.with_suffix(".pub")), "--crash-log", str(crash_log),
                "--quit-hint",
                "Quit the demo: stops the farm, the learner and the broker"]
            tui = _Child("tui", argv, None)
            await tui.start()
        _write_pids(logs / "pids.json", [learner, farm, *([tui] if tui else [])])
        next_line = 0.0
        while not stop.is_set():
            elapsed = time.monotonic() - t0
            if cfg.duration_s is not None and elapsed >= cfg.duration_s:
                break
            dead = [c for c in children if c.returncode is not None]
            if dead:
                names = ", ".join(f"{c.name} (exit {c.returncode}; see {c.log_path})"
                                  for c in dead)
                summary.crashed += [c.name for c in dead]
                say(f"stopping: {names} ended")
                break
            if tui is not None and tui.returncode is not None:
                if tui.returncode == 0:
                    break  # q: the user leaves the demo
                # a TUI crash must not take the training down: keep farm and learner
                # running and carry on with the headless progress lines
                summary.exit_codes["tui"] = tui.returncode
                summary.crashed.append("tui")
                where = crash_log if crash_log.exists() else "the terminal above"
                say(f"the TUI crashed (exit {tui.returncode}; traceback in {where}); "
                    f"farm and learner keep running, progress follows; Ctrl-C stops")
                tui, headless, next_line = None, True, 0.0
                continue
            if headless and elapsed >= next_line:
                say(_progress_line(summary, elapsed))
                next_line = elapsed + cfg.progress_every_s
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.2)
    finally:
        say("shutting down: farm, learner, broker …")
        if tui is not None:
            await tui.stop(5.0, signal.SIGTERM)
        summary.exit_codes["farm"] = await farm.stop(cfg.stop_timeout_s)
        summary.exit_codes["learner"] = await learner.stop(cfg.stop_timeout_s)
        watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watch
        await broker.stop()
        summary.wall_s = round(time.monotonic() - t0, 2)
    return summary


def format_summary(s: DemoSummary) -> str:
    sr = "-" if s.success_rate is None else f"{100 * s.success_rate:.0f} %"
    first = "-" if s.success_rate_first is None else f"{100 * s.success_rate_first:.0f} %"
    fe = "-" if s.first_episode_s is None else f"{s.first_episode_s:.1f} s"
    held = "-" if s.heldout is None else (
        f"{100 * (s.heldout_first or 0.0):.0f} % → {100 * s.heldout:.0f} % "
        f"(v{s.heldout_version})")
    pre = "" if s.pretrain_s is None else f" after {s.pretrain_s:.0f} s of demonstrations + SFT"
    return "\n".join([
        f"ran {s.wall_s:.0f} s on {len(s.devices)} device(s){pre}; first episode after {fe}",
        f"held-out success {held} · training episodes {s.episodes}, success {first} → {sr}"
        f" · policy v{s.policy_version or 0} · replay {s.replay_size or 0}",
        f"exit codes: {json.dumps(s.exit_codes)} · run dir {s.run_dir}",
    ])
