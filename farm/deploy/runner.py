"""One guarded episode of an agent on one device: the loop behind ``distrl deploy``.

    [setup of --task]
    repeat:  limits? → observe (frame + UI tree + foreground, concurrently)
             → policy.act → guard.check → (--confirm) → guard.check again on a fresh
             UI tree + foreground → record + show → execute unless refused / declined /
             --dry-run
    → last frame → [--task evaluator] → GIF + MP4 + deploy.json + trajectory.json

Unlike :func:`distrl_sdk.runner.run_episode` (the farm's loop) nothing reaches the
device without the guard's verdict, the instruction needs no task, the task's
``teardown`` is **not** run (a deploy leaves the phone as the agent left it), and every
decision is recorded whether it ran or not. A dry run skips the task's setup too: it
changes nothing on the device.

On a refusal the episode stops (``on_deny="stop"``, the default: a policy that chose a
dangerous action once is likely to choose it again, and nothing half-done follows it);
``on_deny="skip"`` records the refusal and asks the policy again on the same screen.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from distrl_sdk.actions import (
    Action,
    Answer,
    Complete,
    Impossible,
    InvalidAction,
    Key,
    Wait,
    execute,
    to_json,
)
from distrl_sdk.errors import DeviceError, DeviceOffline, DistRLError, TaskError
from distrl_sdk.policy import Decision, Observation, Policy
from distrl_sdk.runner import SUCCESS_THRESHOLD
from distrl_sdk.task import Task
from distrl_sdk.trajectory import EpisodeStatus, Step, Trajectory
from distrl_sdk.uitree import UIElement
from distrl_sdk.wire import DeviceStatus, trajectory_to_msg
from farm.deploy.guard import Guard, GuardContext, Verdict
from farm.deploy.record import LiveFeed, Recorder, device_id_for
from farm.device import AdbDevice
from farm.device.lifecycle import Transport, classify_serial
from farm.device.observe import FOCUS_COMMAND, observe, parse_focus

__all__ = ["DeployOptions", "DeployResult", "StepReport", "connect_device", "run_deploy"]

OnDeny = Literal["stop", "skip"]
#: how a step ended: executed, refused by the guard, declined at --confirm, shown only
#: (--dry-run), or nothing to run (an InvalidAction from the policy)
Outcome = Literal["allowed", "refused", "declined", "dry-run", "invalid"]
StopReason = Literal["completed", "impossible", "answered", "refused", "declined",
                     "step-limit", "time-limit", "device-error", "policy-error", "task-error",
                     "interrupted"]


async def connect_device(serial: str, *, host: str = "127.0.0.1", port: int = 5037,
                         timeout: float = 10.0) -> AdbDevice:
    """The device ``serial`` on the adb server at ``host:port``, ready to use.

    A ``host:port`` serial the server does not know yet is ``adb connect``-ed first.
    Raises :class:`DeviceOffline` with what to do when it is absent or not usable."""
    from farm.adb.client import AdbServerClient, AdbServerError

    client = AdbServerClient(host, port, timeout=timeout)

    async def listing() -> dict[str, str]:
        try:
            return dict(await client.devices())
        except (AdbServerError, OSError) as exc:
            raise DeviceOffline(f"no adb server answers on {host}:{port} ({exc}); start one "
                                "with `adb start-server` or pass --adb-port") from None

    devices = await listing()
    if serial not in devices and classify_serial(serial) is Transport.TCP:
        try:
            await client.connect(serial)
        except (AdbServerError, OSError) as exc:
            raise DeviceOffline(f"cannot `adb connect {serial}`: {exc}", serial=serial) from None
        for _ in range(50):  # the server lists a fresh connection as offline for a moment
            devices = await listing()
            if devices.get(serial) == "device":
                break
            await asyncio.sleep(0.1)
    state = devices.get(serial)
    if state is None:
        known = ", ".join(f"{s} ({st})" for s, st in devices.items()) or "none"
        raise DeviceOffline(
            f"device {serial!r} is not on the adb server at {host}:{port} (devices: {known}). "
            "Plug it in, `adb connect HOST:PORT`, or start the emulator / `distrl sim up`")
    if state != "device":
        hint = " — accept the USB debugging prompt on the phone" if state == "unauthorized" \
            else ""
        raise DeviceOffline(f"device is {state}, not ready{hint}", serial=serial)
    return AdbDevice(serial, host=host, port=port)


@dataclass
class DeployOptions:
    """How one deploy runs (the CLI fills it from its flags)."""

    instruction: str
    out_dir: Path
    guard: Guard = field(default_factory=Guard)
    on_deny: OnDeny = "stop"
    dry_run: bool = False
    #: asked before each action that would run (--confirm); False declines it
    confirm: Callable[[StepReport], bool] | None = None
    task: Task | None = None  # set up before and scored after (no teardown)
    settle_s: float = 0.5  # after each executed action, before the next observation
    live: LiveFeed | None = None
    record: bool = True
    policy_name: str = "policy"


@dataclass
class StepReport:
    """One decision as printed, recorded and returned."""

    index: int
    action: dict[str, Any] | None  # distrl_sdk.actions JSON; None for an invalid action
    described: str  # "tap (0.52, 0.33)"
    outcome: Outcome
    executed: bool
    message: str  # the guard's verdict in words
    rule: str = ""  # the rule that refused it
    package: str | None = None
    activity: str | None = None
    log_prob: float | None = None
    seconds: dict[str, float] = field(default_factory=dict)  # observe / policy / execute


@dataclass
class DeployResult:
    """What happened: JSON-able with :meth:`to_dict` (``distrl deploy --json``)."""

    device: str
    instruction: str
    policy: str
    stop_reason: StopReason
    steps: list[StepReport]
    out_dir: Path
    dry_run: bool
    task: str | None = None
    success: bool | None = None  # the task's evaluator; None without --task
    reward: float | None = None
    answer: str | None = None
    error: str | None = None  # the refusal or failure, in words
    files: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def refusals(self) -> list[StepReport]:
        return [s for s in self.steps if s.outcome in ("refused", "declined")]

    @property
    def executed(self) -> int:
        return sum(s.executed for s in self.steps)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["out_dir"] = str(self.out_dir)
        d["executed"] = self.executed
        d["refused"] = len(self.refusals)
        return d


def _json(action: Any) -> dict[str, Any] | None:
    if isinstance(action, InvalidAction):
        return None
    try:
        out: dict[str, Any] = json.loads(to_json(action))
    except Exception:  # a policy returned something that is no action
        return None
    return out


def _terminal_reason(action: Any) -> StopReason | None:
    if isinstance(action, Complete):
        return "completed"
    if isinstance(action, Impossible):
        return "impossible"
    if isinstance(action, Answer):
        return "answered"
    return None


async def run_deploy(device: AdbDevice, policy: Policy, opts: DeployOptions, *,
                     on_step: Callable[[StepReport], Awaitable[None] | None] | None = None
                     ) -> DeployResult:
    """Run one guarded episode and write its recording into ``opts.out_dir``."""
    t_start = time.monotonic()
    guard = opts.guard
    recorder = Recorder(opts.out_dir) if opts.record else None
    task = opts.task
    traj = Trajectory(task=task.name if task else "deploy", instruction=opts.instruction,
                      params=dict(task.params) if task else {})
    result = DeployResult(device=device.serial, instruction=opts.instruction,
                          policy=opts.policy_name, stop_reason="completed", steps=[],
                          out_dir=opts.out_dir, dry_run=opts.dry_run,
                          task=task.name if task else None)
    live = opts.live
    size = (1, 1)
    kind = classify_serial(device.serial).value

    async def status(state: Literal["busy", "ready", "offline"], step: int | None,
                     action: Any = None, detail: str | None = None) -> None:
        if live is not None:
            await live.status(DeviceStatus(
                device_id=live.device_id, state=state, detail=detail, task=traj.task,
                instruction=opts.instruction[:1024], step=step,
                last_action=_json(action) if action is not None else None, kind=kind))

    async def loop() -> None:
        nonlocal size
        if task is not None and not opts.dry_run:  # a dry run changes nothing, setup included
            try:
                await task.setup(device)
            except DeviceError:
                raise
            except Exception as exc:
                raise TaskError(f"task {task.name}: setup failed: {exc}") from exc
        size = await device.screen_size()
        await status("busy", 0, detail="deploying")
        i = 0
        previous: list[UIElement] | None = None
        while True:
            limit = guard.check_limits(i, time.monotonic() - t_start)
            if limit is not None:
                result.stop_reason = "step-limit" if limit.rule == "step-limit" else "time-limit"
                result.error = f"stopped: {limit.reason}"
                return
            t0 = time.perf_counter()
            seen = await observe(device)
            shot = seen.frame.to_png() if _wants_pixels(policy) else None
            pobs = Observation(opts.instruction, list(seen.elements), size, i, traj.actions,
                               shot, previous)
            t1 = time.perf_counter()
            try:
                chosen: Any = await policy.act(pobs)
            except DistRLError:
                raise
            except Exception as exc:
                result.stop_reason = "policy-error"
                result.error = f"the policy failed: {type(exc).__name__}: {exc}"
                return
            t2 = time.perf_counter()
            info: dict[str, Any] = {}
            if isinstance(chosen, Decision):
                if chosen.log_prob is not None:
                    info["log_prob"] = float(chosen.log_prob)
                if chosen.policy_version is not None:
                    info["policy_version"] = int(chosen.policy_version)
                chosen = chosen.action
            action = chosen
            if not isinstance(action, Action | InvalidAction):  # a policy bug: nothing runs
                action = InvalidAction(f"the policy returned {type(action).__name__}, not an "
                                       "action", repr(action)[:200])
            ctx = GuardContext(seen.package, seen.activity, seen.elements, size)
            verdict: Verdict = guard.check(action, ctx)
            secret = verdict.rule == "card-number"  # keep the number out of every record
            report = StepReport(
                index=i, action=None if secret else _json(action), described=verdict.action,
                outcome="allowed", executed=False, message=verdict.message, rule=verdict.rule,
                package=seen.package, activity=seen.activity, log_prob=info.get("log_prob"),
                seconds={"observe": t1 - t0, "policy": t2 - t1})
            runnable = not isinstance(action, InvalidAction)
            if not verdict.allowed:
                report.outcome = "refused"
            elif not runnable:
                report.outcome = "invalid"
            elif opts.dry_run:
                report.outcome, report.message = "dry-run", f"dry run: would {verdict.action}"
            elif (opts.confirm is not None and _touches_device(action)
                  and not await asyncio.to_thread(opts.confirm, report)):
                report.outcome, report.rule = "declined", "confirm"
                report.message = f"declined {verdict.action} at the confirmation prompt"
            if report.outcome == "allowed" and _screen_bound(action):
                # the screen may have moved on since the action was chosen (an animation,
                # a dialog, the --confirm prompt): judge it again on what is there now
                t_check = time.perf_counter()
                again = guard.check(action, await _screen_now(device, size))
                report.seconds["recheck"] = time.perf_counter() - t_check
                if not again.allowed:
                    verdict = again
                    secret = secret or again.rule == "card-number"
                    report.outcome, report.rule = "refused", again.rule
                    report.described = again.action
                    report.message = f"{again.message} (on the screen just before executing)"
                    if secret:
                        report.action = None
            if recorder is not None or live is not None:
                image = seen.frame.image()
                why = f": {report.rule}" if report.rule else ""
                caption = f"{i + 1}. {report.described}  [{report.outcome}{why}]"
                shown = None if secret else action
                if recorder is not None:
                    recorder.add(image, shown, outcome=report.outcome, caption=caption)
                if live is not None:
                    await live.frame(image, i, shown, size)
            step = Step(index=i, action=InvalidAction(verdict.message, "") if secret else action,
                        activity=f"{seen.package}/{seen.activity}" if seen.package else None,
                        info={**info, "timings": dict(report.seconds)})
            traj.steps.append(step)
            previous = list(seen.elements)
            result.steps.append(report)  # before executing: an interrupted step is recorded
            if report.outcome == "allowed":
                t3 = time.perf_counter()
                if isinstance(action, Answer):
                    traj.answer = result.answer = action.text
                try:
                    await execute(device, action)
                except ValueError as exc:  # untypeable text, unknown app: nothing ran
                    report.message = f"not executed: {exc}"
                except BaseException as exc:  # device error, time limit, Ctrl-C
                    report.message = f"stopped while executing (it may have partly run): " \
                        f"{type(exc).__name__} {exc}".rstrip()
                    raise
                else:
                    report.executed = True
                report.seconds["execute"] = time.perf_counter() - t3
                step.info["timings"] = dict(report.seconds)
            await status("busy", i + 1, None if secret else action)
            if on_step is not None:
                maybe = on_step(report)
                if maybe is not None:
                    await maybe
            i += 1
            if report.outcome in ("refused", "declined"):
                if opts.on_deny == "stop":
                    result.stop_reason = "refused" if report.outcome == "refused" else "declined"
                    result.error = report.message
                    return
                continue
            end = _terminal_reason(action)
            if end is not None:
                result.stop_reason = end
                return
            if report.executed and opts.settle_s:
                await asyncio.sleep(opts.settle_s)

    remaining = guard.config.max_seconds
    try:
        async with asyncio.timeout(remaining):
            await loop()
    except TimeoutError:
        result.stop_reason = "time-limit"
        result.error = f"stopped: the time limit of {remaining:g} s is reached"
    except DeviceError as exc:
        result.stop_reason, result.error = "device-error", str(exc)
    except TaskError as exc:
        result.stop_reason, result.error = "task-error", str(exc)
    except asyncio.CancelledError:
        result.stop_reason, result.error = "interrupted", "interrupted"
        await _finish(device, opts, result, traj, recorder, size, t_start, score=False)
        raise
    await _finish(device, opts, result, traj, recorder, size, t_start,
                  score=result.stop_reason not in ("device-error", "task-error"))
    return result


def _wants_pixels(policy: Policy) -> bool:
    """Only image policies get the PNG (encoding a full frame costs tens of ms)."""
    inner = getattr(policy, "policy", None)
    return getattr(inner, "kind", None) == "vlm" or getattr(policy, "wants_screenshot", False)


def _screen_bound(action: Any) -> bool:
    """Whether the guard's verdict on ``action`` depends on the screen (not a wait, a
    back/home key or an episode end)."""
    if isinstance(action, Key):
        return action.key == "enter"
    return _touches_device(action) and not isinstance(action, Wait)


async def _screen_now(device: AdbDevice, size: tuple[int, int], tries: int = 3) -> GuardContext:
    """The UI tree and foreground right now (no frame: the guard needs none). A window
    transition leaves the focus null or the tree empty for a moment, so an unknown
    screen is looked at again a few times before it is judged as unknown."""
    for attempt in range(tries):
        tree, focus = await asyncio.gather(device.ui_elements(), device.shell(FOCUS_COMMAND))
        pkg, act, _ = parse_focus(focus.stdout)
        ctx = GuardContext(pkg, act, tree, size)
        if Guard.screen_known(ctx) or attempt == tries - 1:
            return ctx
        await asyncio.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


def _touches_device(action: Any) -> bool:
    return not isinstance(action, InvalidAction) and _terminal_reason(action) is None


async def _finish(device: AdbDevice, opts: DeployOptions, result: DeployResult,
                  traj: Trajectory, recorder: Recorder | None, size: tuple[int, int],
                  t_start: float, *, score: bool) -> None:
    """Last frame, the task's score, the files, the final live status. Never raises for
    a device that went away: the recording of what happened matters most then."""
    live = opts.live
    if recorder is not None or live is not None:
        try:
            seen = await observe(device)
        except DeviceError:
            seen = None
        if seen is not None:
            caption = f"end: {result.stop_reason}"
            if recorder is not None:
                recorder.add(seen.frame.image(), None, outcome="end", caption=caption)
            if live is not None:
                await live.frame(seen.frame.image(), len(result.steps), None, size)
    task = opts.task
    if task is not None and score:
        try:
            s = float(await task.is_successful(device, traj))
        except Exception as exc:  # a broken evaluator is reported, not raised
            result.error = result.error or f"task {task.name}: evaluator failed: {exc}"
        else:
            result.reward, result.success = s, s >= SUCCESS_THRESHOLD
    traj.reward = result.reward or 0.0
    traj.error = result.error
    if result.stop_reason in ("device-error", "interrupted", "refused", "declined",
                              "step-limit", "time-limit"):
        traj.status = EpisodeStatus.ABORTED
    elif result.stop_reason in ("policy-error", "task-error"):
        traj.status = EpisodeStatus.ERRORED
    else:
        traj.status = EpisodeStatus.SUCCESS if result.success else EpisodeStatus.FAILURE
        if result.success is None:
            traj.error = traj.error or "not scored: no --task"
    result.seconds = time.monotonic() - t_start
    opts.out_dir.mkdir(parents=True, exist_ok=True)
    if recorder is not None:
        files = await asyncio.to_thread(recorder.save)
        result.files.update({k: str(v) for k, v in files.items()})
    msg = trajectory_to_msg(traj, farm_id="deploy", device_id=device_id_for(device.serial))
    tpath = opts.out_dir / "trajectory.json"
    tpath.write_text(msg.model_dump_json(indent=2))
    result.files["trajectory"] = str(tpath)
    dpath = opts.out_dir / "deploy.json"
    result.files["summary"] = str(dpath)
    dpath.write_text(json.dumps(result.to_dict(), indent=2, default=str))
    if live is not None:
        await live.stop(DeviceStatus(device_id=live.device_id, state="ready",
                                     detail=f"deploy ended: {result.stop_reason}",
                                     task=traj.task, step=len(result.steps),
                                     episode_return=result.reward, episodes=1,
                                     kind=classify_serial(device.serial).value))
