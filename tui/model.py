"""The TUI's state, without Textual: every wire message is parsed here
(``parse_message`` never raises; garbage is counted and logged) and folded into
per-device views, learner series and log lines. The UI reads it on its tick and uses
the ``dirty`` sets to touch only what changed."""

from __future__ import annotations

import re
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from distrl_sdk.wire import (
    FARM_STATUS_ID,
    Chunk,
    Command,
    CommandResult,
    DeviceFrame,
    DeviceStatus,
    Message,
    Metrics,
    PolicyPointer,
    Rejected,
    parse_message,
)
from distrl_sdk.wire.signing import TrustedKeys, Verdict, check_envelope
from distrl_sdk.wire.topics import parse_topic
from tui.decoder import DeviceKey, FrameJob, Rendered
from tui.imaging import HalfBlock

__all__ = [
    "FARM_STATUS_ID",
    "LEARNER_SERIES",
    "SORT_KEYS",
    "DeviceView",
    "FleetModel",
    "LogLine",
    "StateChange",
    "Totals",
    "describe_action",
    "human_detail",
]

#: learner scalars with a fixed place on the Learner screen (others are added after)
LEARNER_SERIES: tuple[tuple[str, str], ...] = (
    # the names farm.learner.service.LearnerService.metrics() publishes (the recorded
    # feed's contract test keeps them honest)
    ("eval/success_rate", "held-out success rate (eval)"),
    ("success_rate", "success rate (training window)"), ("return_mean", "episode return"),
    ("train/actor_loss", "actor loss"), ("train/critic_loss", "critic loss"),
    ("train/entropy", "entropy"),
    ("policy_lag_avg", "policy lag (avg)"), ("policy_lag_max", "policy lag (max)"),
    ("replay_size", "replay size"), ("trajectories_per_min", "trajectories / min"),
    ("version", "policy version"),
)
SORT_KEYS = ("device", "state", "task", "step", "return", "episodes", "battery", "temp",
             "policy")
#: the device id under which a farm publishes its own retained status (ready while its
#: broker connection is up, ``offline`` as its last will): farm.transport.Publisher's
#: default ``controller_id``. It is the farm's link, not a device.
#: transitions worth a pop-up; busy ↔ ready churn only goes to the log
_NOTIFY_STATES = {"offline", "quarantined", "paused"}
#: details a farm sends with every live update: not worth a log line each
_ROUTINE_DETAILS = {"episode running", "episode over"}
_STATE_ORDER = {s: i for i, s in enumerate(
    ("busy", "ready", "preparing", "paused", "quarantined", "offline", "unknown"))}


_WORKER_SUFFIX = re.compile(r":\s*[\w.-]+/w\d+$")


def human_detail(detail: str) -> str:
    """A status detail for people: the farm's internal worker id (``released:
    demo/w5``) says nothing to them. (A detail is only shown next to a real state
    change; "episode running/over" ride along with every update and are left out.)"""
    return _WORKER_SUFFIX.sub("", detail)


def _natural(key: DeviceKey) -> tuple[tuple[int | str, ...], ...]:
    """``sim-2`` before ``sim-10``: digit runs compare as numbers."""
    return tuple(tuple(int(p) if p.isdecimal() else p for p in re.split(r"(\d+)", part))
                 for part in key)


@dataclass(frozen=True)
class LogLine:
    at: float
    level: str  # info | warning | error
    text: str
    device: DeviceKey | None = None


@dataclass(frozen=True)
class StateChange:
    key: DeviceKey
    old: str
    new: str
    detail: str | None


@dataclass(frozen=True)
class Totals:
    total: int = 0
    online: int = 0
    busy: int = 0
    paused: int = 0
    quarantined: int = 0
    error: int = 0  # offline (lost or last will) or reporting an error
    ended: int = 0  # offline because their farm stopped (its own status is offline)
    episodes: int = 0  # finished episodes, summed over the devices' statuses


def describe_action(a: dict[str, Any] | None) -> str:
    """A short human line for a distrl_sdk.actions JSON dict."""
    if not a:
        return "-"
    kind = str(a.get("action_type") or a.get("kind") or "?")
    args = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v!r}"
                     for k, v in a.items() if k not in ("action_type", "kind"))
    return f"{kind}({args})" if args else kind


@dataclass
class DeviceView:
    key: DeviceKey
    status: DeviceStatus | None = None
    frame: DeviceFrame | None = None
    thumb: HalfBlock | None = None
    big: HalfBlock | None = None
    tile: HalfBlock | None = None  # the wall's thumbnail
    picture: Image.Image | None = None  # the device screen's, for terminal graphics
    tile_picture: Image.Image | None = None  # the wall tile's, for terminal graphics
    frame_error: str | None = None
    last_seen: float = 0.0
    rev: int = 0  # bumped on every change; screens compare it with what they show
    status_actions: bool = False  # its statuses carry last_action (the history's source)
    # the action history, one line per step, episodes between separators
    actions: deque[str] = field(default_factory=lambda: deque(maxlen=300))
    log: deque[LogLine] = field(default_factory=lambda: deque(maxlen=300))
    _last_action_step: tuple[int | None, int | None] | None = None
    _hist_episode: int | None = None  # the episode the history's newest lines belong to
    _hist_step: int = -1  # its newest step shown
    _hist_closed: int | None = None  # the newest episode whose outcome line is shown

    @property
    def state(self) -> str:
        return self.status.state if self.status is not None else "unknown"

    @property
    def label(self) -> str:
        return f"{self.key[0]}/{self.key[1]}"

    def haystack(self) -> str:
        s = self.status
        parts = [self.key[0], self.key[1], self.state]
        if s is not None:
            parts += [s.task or "", s.kind or "", s.detail or "", s.instruction or ""]
        return " ".join(parts).lower()

    def sort_value(self, key: str) -> tuple[Any, ...]:
        s = self.status
        missing = float("inf")
        if key == "state":
            return (0, _STATE_ORDER.get(self.state, 9), _natural(self.key))
        if s is None:
            return (1, 0, _natural(self.key))
        val: Any = {
            "task": s.task or "~",
            "step": -(s.step or 0),
            "return": -(s.episode_return if s.episode_return is not None else -missing),
            "episodes": -s.episodes,
            "battery": s.battery if s.battery is not None else missing,
            "temp": -(s.temperature_c if s.temperature_c is not None else -missing),
            "policy": -(s.policy_version if s.policy_version is not None else -1),
        }.get(key, "")
        return (0, val, _natural(self.key))


class FleetModel:
    """Folds wire messages into state. ``clock`` is injectable so tests are repeatable."""

    def __init__(self, clock: Callable[[], float] = time.time, *, history: int = 300,
                 max_logs: int = 2000, max_devices: int = 4096,
                 trusted_farms: TrustedKeys | None = None) -> None:
        self.clock = clock
        # farm keys whose signed command results are believed; None: any result (the
        # recorded and fake feeds, tests). A forged "ok" would tell the operator a
        # device was quarantined when it was not.
        self.trusted_farms = trusted_farms
        # bounded whatever the broker carries: 20,000 forged statuses made 20,000 rows
        self.max_devices = max_devices
        self.devices: dict[DeviceKey, DeviceView] = {}
        self.logs: deque[LogLine] = deque(maxlen=max_logs)
        self.garbage: Counter[str] = Counter()
        self.series: dict[str, deque[float]] = {}
        self.learner_step: int | None = None
        self.learner_seen: float | None = None
        self.farm_metrics: dict[str, dict[str, float]] = {}
        self.farms: dict[str, DeviceStatus] = {}  # farm id → its own (controller) status
        self.pointer: PolicyPointer | None = None
        self.sent: dict[str, tuple[str, Command]] = {}  # command id → (farm, command)
        self.results: dict[str, CommandResult] = {}
        self.connected = False
        self.link_detail = ""
        self.messages = 0
        self._pointer_logged: tuple[float, int] | None = None  # (when, version)
        self._history = history
        # change counters: each screen remembers what it has shown and compares
        self.membership_rev = 0  # devices added, or a state changed (rows may move)
        self.learner_rev = 0
        self.log_total = 0  # log lines ever appended
        self._last_line: tuple[str, str, DeviceKey | None] = ("", "", None)
        self._repeats = 0  # how often the last line came again since it was appended
        self.changes: list[StateChange] = []
        self.removed: list[DeviceKey] = []  # devices gone from the fleet; the app drains it
        self.notices: list[tuple[str, str]] = []  # (severity, text) for pop-ups; the app
        # drains it

    # -------------------------------------------------------------- logging
    def log(self, level: str, text: str, device: DeviceKey | None = None) -> None:
        """Append a line; the same line again is counted, not repeated (a hostile client
        or a flapping device would flood the screen), and said once a different one
        comes: "… the line above 57 more times"."""
        key = (level, text, device)
        if key == self._last_line:
            self._repeats += 1
            return
        if self._repeats:
            n, self._repeats = self._repeats, 0
            self._append(LogLine(self.clock(), self._last_line[0],
                                 f"… the line above {n} more time{'s' if n > 1 else ''}",
                                 self._last_line[2]))
        self._last_line = key
        self._append(LogLine(self.clock(), level, text, device))

    def _append(self, line: LogLine) -> None:
        device = line.device
        self.logs.append(line)
        self.log_total += 1
        if device is not None and device in self.devices:
            dev = self.devices[device]
            dev.log.append(line)
            dev.rev += 1

    def connection(self, connected: bool, detail: str) -> None:
        if connected != self.connected or detail:
            self.log("info" if connected else "warning", detail or
                     ("connected" if connected else "disconnected"))
        if connected != self.connected:
            self.notices.append(("information" if connected else "warning",
                                 detail or ("connected" if connected else "disconnected")))
        self.connected = connected
        # why the link is down (e.g. "[Errno 111] Connection refused"), for the title bar
        self.link_detail = "" if connected else detail

    # -------------------------------------------------------------- ingest
    def ingest(self, topic: str, payload: bytes) -> FrameJob | None:
        """One raw MQTT message. Returns a decode job for frames, else ``None``."""
        self.messages += 1
        if not payload:  # a cleared retained message: a stopped farm removes its devices
            where = parse_topic(topic)
            if where is not None and where.kind == "status" and where.farm_id \
                    and where.item_id and where.item_id != FARM_STATUS_ID:
                self._cleared((where.farm_id, where.item_id))
                return None
        parsed = parse_message(topic, payload)
        if isinstance(parsed, Rejected):
            self._garbage(topic, parsed.reason.value, parsed.detail)
            return None
        if isinstance(parsed, Chunk):  # not subscribed to; someone published oddly
            self._garbage(topic, "unexpected_chunk", "")
            return None
        if isinstance(parsed.body, CommandResult) and self.trusted_farms is not None:
            verdict, detail = check_envelope(payload, self.trusted_farms)
            if verdict is not Verdict.OK:
                self._garbage(topic, f"result_{verdict.value}", detail)
                return None
        return self._apply(parsed)

    def _garbage(self, topic: str, reason: str, detail: str) -> None:
        self.garbage[reason] += 1
        self.log("error", f"rejected message on {topic[:120]}: {reason} {detail[:160]}".rstrip())

    def _cleared(self, key: DeviceKey) -> None:
        dev = self.devices.pop(key, None)
        if dev is None:
            return
        self.removed.append(key)
        self.membership_rev += 1
        self.log("info", f"{dev.label}: left the fleet (its farm stopped and cleared its "
                         "status)")

    def _device(self, key: DeviceKey) -> DeviceView | None:
        """The device's view, created on first sight; ``None`` when the fleet is full
        (``max_devices``) and no offline device can make room (the least recently seen
        offline one is dropped first)."""
        dev = self.devices.get(key)
        if dev is None:
            if len(self.devices) >= self.max_devices and not self._make_room():
                self.garbage["too_many_devices"] += 1
                if self.garbage["too_many_devices"] == 1:
                    self.log("warning", f"more than {self.max_devices} devices on the broker: "
                                        "new ones are not shown (forged statuses?)")
                return None
            dev = self.devices[key] = DeviceView(key)
            self.membership_rev += 1
        return dev

    def _make_room(self) -> bool:
        gone = [(d.last_seen, k) for k, d in self.devices.items() if d.state == "offline"]
        if not gone:
            return False
        key = min(gone)[1]
        del self.devices[key]
        self.removed.append(key)
        return True

    def _apply(self, msg: Message) -> FrameJob | None:
        t, body = msg.topic, msg.body
        farm = t.farm_id or msg.envelope.farm_id or "?"
        if isinstance(body, DeviceStatus) and t.kind == "status":
            if body.device_id == FARM_STATUS_ID:
                self._farm_status(farm, body)
            else:
                self._status((farm, body.device_id), body)
        elif isinstance(body, DeviceFrame) and body.device_id != FARM_STATUS_ID:
            key = (farm, body.device_id)
            dev = self._device(key)
            if dev is None:
                return None
            dev.last_seen = self.clock()
            if not dev.status_actions:  # statuses name each step's action; frames only
                self._actions(dev, body.actions, body.step)  # when a source sends none
            return FrameJob(key, body, msg.data or b"")
        elif isinstance(body, Metrics) and t.kind == "learner_metrics":
            self._learner(body)
        elif isinstance(body, Metrics):
            self.farm_metrics[farm] = dict(body.scalars)
            self.learner_rev += 1
        elif isinstance(body, CommandResult):
            self._result(farm, body)
        elif isinstance(body, PolicyPointer):
            self.pointer = body
            self.learner_rev += 1
            # a learner publishes every few updates: one line per half minute, not a flood
            now, last = self.clock(), self._pointer_logged
            if last is None or now - last[0] >= 30.0:
                since = f"; v{last[1]} before" if last is not None else ""
                self.log("info", f"policy v{body.version} published ({body.size} B, "
                                 f"{body.kind}{since})")
                self._pointer_logged = (now, body.version)
        return None

    def _farm_status(self, farm: str, st: DeviceStatus) -> None:
        old = self.farms.get(farm)
        self.farms[farm] = st
        self.membership_rev += 1  # the bars show it
        if old is None or old.state != st.state or old.detail != st.detail:
            up = st.state != "offline"
            stopped = not up and st.detail == "stopped"  # farm.transport.publisher.STOPPED
            self.log("info" if up or stopped else "warning", f"farm {farm}: " + (
                "connected" if up else "stopped" if stopped else
                "offline (its controller left the broker without stopping: a crash or a "
                "lost link)"))
            if old is not None:
                self.notices.append(("information" if up else "warning",
                                     f"farm {farm}: {'back online' if up else 'offline'}"))

    def farm_links(self) -> list[tuple[str, bool]]:
        """(farm id, up) per farm that published its own status, in name order."""
        return [(f, st.state != "offline") for f, st in sorted(self.farms.items())]

    def learner_latest(self, name: str) -> float | None:
        """The newest value of a learner scalar, or ``None`` before the first."""
        q = self.series.get(name)
        return q[-1] if q else None

    def farm_names_tasks(self, farm: str) -> bool:
        """Whether the farm's own status lists its tasks (newer farms do)."""
        own = self.farms.get(farm)
        return own is not None and bool(own.tasks)

    def farm_tasks(self, farm: str) -> list[str]:
        """The task names this farm takes for run_task (what its run-task dialog offers):
        the list in the farm's own status, else (an older farm) the tasks its devices
        were seen running."""
        own = self.farms.get(farm)
        if own is not None and own.tasks:
            return list(own.tasks)
        return sorted({d.status.task for k, d in self.devices.items()
                       if k[0] == farm and d.status is not None and d.status.task})

    def headline(self) -> tuple[str, str] | None:
        """The learner's headline number as (label, value): held-out evaluation success
        (``eval/*``, the number that says whether the policy generalises) once an
        evaluation round completed, else the training window's success rate, labelled
        as such. ``None`` before either."""
        ev = self.learner_latest("eval/success_rate")
        if ev is not None:
            lo, hi = self.learner_latest("eval/ci_low"), self.learner_latest("eval/ci_high")
            n, ver = self.learner_latest("eval/episodes"), self.learner_latest(
                "eval/policy_version")
            extra = []
            if lo is not None and hi is not None:
                extra.append(f"CI {100 * lo:.0f}–{100 * hi:.0f} %")
            if n is not None:
                extra.append(f"{n:.0f} ep")
            if ver is not None:
                extra.append(f"v{ver:.0f}")
            return ("held-out success", f"{100 * ev:.0f} %"
                    + (f" ({', '.join(extra)})" if extra else ""))
        sr = self.learner_latest("success_rate")
        if sr is not None:
            return ("train success", f"{100 * sr:.0f} %")
        return None

    def _status(self, key: DeviceKey, st: DeviceStatus) -> None:
        dev = self._device(key)
        if dev is None:
            return
        old = dev.state
        old_detail = dev.status.detail if dev.status is not None else None
        dev.status = st
        dev.last_seen = self.clock()
        dev.rev += 1
        if old != st.state:
            self.membership_rev += 1  # the state may move the row (sort, filter)
            ch = StateChange(key, old, st.state, st.detail)
            self.changes.append(ch)
            lvl = "warning" if st.state in ("offline", "quarantined") else "info"
            self.log(lvl, f"{dev.label}: {old} → {st.state}"
                          + (f" ({human_detail(st.detail)})" if st.detail
                             and st.detail not in _ROUTINE_DETAILS else ""), key)
            if st.state in _NOTIFY_STATES or old in _NOTIFY_STATES:
                sev = "warning" if st.state in ("offline", "quarantined") else "information"
                self.notices.append((sev, f"{dev.label}: {old} → {st.state}"))
        elif st.detail and st.detail != old_detail and st.detail not in _ROUTINE_DETAILS:
            self.log("info", f"{dev.label}: {human_detail(st.detail)}", key)
        if st.episode is not None or st.steps or st.last_episode is not None:
            dev.status_actions = True  # a farm that reports every step (farm.controller)
            self._step_history(dev, st)
        elif st.last_action is not None:  # one that samples the newest action only
            dev.status_actions = True
            self._actions(dev, [st.last_action], st.step)

    def _step_history(self, dev: DeviceView, st: DeviceStatus) -> None:
        """Every step from the statuses' ``steps``, an opening line per episode and its
        outcome at its end; statuses replayed (a reconnect, the retained one) add
        nothing twice."""
        before = len(dev.actions), dev.actions[-1] if dev.actions else None
        done = st.last_episode if isinstance(st.last_episode, dict) else {}
        n = done.get("episode")
        if isinstance(n, int) and n != dev._hist_closed and (
                dev._hist_closed is None or n > dev._hist_closed):
            ret = done.get("return")
            where = "" if n == dev._hist_episode else " (above)"
            dev.actions.append(
                f"■ episode {n}{where}: {done.get('outcome', '?')}"
                + (f" · return {ret:+.2f}" if isinstance(ret, int | float) else "")
                + (f" · {done['steps']} steps" if isinstance(done.get("steps"), int) else ""))
            dev._hist_closed = n
        if st.episode is not None and st.episode != dev._hist_episode and (
                dev._hist_episode is None or st.episode > dev._hist_episode):
            dev.actions.append(f"▶ episode {st.episode}: {st.task or '?'}")
            dev._hist_episode, dev._hist_step = st.episode, -1
        if st.episode == dev._hist_episode:
            for item in st.steps:
                k = item.get("step")
                if isinstance(k, int) and k > dev._hist_step:
                    act = item.get("action")
                    dev.actions.append(f"  #{k} "
                                       + describe_action(act if isinstance(act, dict) else None))
                    dev._hist_step = k
        if (len(dev.actions), dev.actions[-1] if dev.actions else None) != before:
            dev.rev += 1

    def _actions(self, dev: DeviceView, actions: Iterable[dict[str, Any]],
                 step: int | None) -> None:
        acts = list(actions)
        if not acts:
            return
        marker = (dev.status.episodes if dev.status else None, step)
        if step is not None and marker == dev._last_action_step:
            return  # the status and the frame of one step both carry its action
        dev._last_action_step = marker
        prefix = f"#{step} " if step is not None else ""
        dev.actions.append(prefix + describe_action(acts[-1]))
        dev.rev += 1

    def _learner(self, m: Metrics) -> None:
        for name, val in m.scalars.items():
            q = self.series.get(name)
            if q is None:
                q = self.series[name] = deque(maxlen=self._history)
            q.append(float(val))
        self.learner_step = m.step
        self.learner_seen = self.clock()
        self.learner_rev += 1

    def _result(self, farm: str, r: CommandResult) -> None:
        self.results[r.command_id] = r
        sent = self.sent.get(r.command_id)
        what = sent[1].op if sent else "command"
        key = (farm, r.device_id)
        text = f"{what} on {farm}/{r.device_id}: {'ok' if r.ok else 'FAILED'}" + (
            f" ({r.detail})" if r.detail else "")
        self.log("info" if r.ok else "error", text, key if key in self.devices else None)
        self.notices.append(("information" if r.ok else "error", text))

    def record_sent(self, farm: str, cmd: Command) -> None:
        self.sent[cmd.id] = (farm, cmd)
        args = f" {cmd.args}" if cmd.args else ""
        self.log("info", f"sent {cmd.op} to {farm}/{cmd.device_id}{args}", (farm, cmd.device_id))

    def apply_rendered(self, r: Rendered) -> None:
        dev = self.devices.get(r.key)
        if dev is None:
            return
        dev.frame = r.frame
        if r.error:
            if dev.frame_error != r.error:
                self.log("error", f"{dev.label}: bad frame: {r.error}", r.key)
            dev.frame_error = r.error
            self.garbage["bad_image"] += 1
        else:
            dev.frame_error = None
            dev.thumb = r.thumb
            if r.big is not None:
                dev.big = r.big
            if r.tile is not None:
                dev.tile = r.tile
            if r.picture is not None:
                dev.picture = r.picture
            if r.tile_picture is not None:
                dev.tile_picture = r.tile_picture
        dev.rev += 1

    # -------------------------------------------------------------- views
    def totals(self) -> Totals:
        c = Counter(d.state for d in self.devices.values())
        errors = sum(1 for d in self.devices.values()
                     if d.state != "offline" and d.status is not None and d.status.detail
                     and d.status.detail.lower().startswith("error"))
        # a farm that stopped leaves its devices' retained "offline" behind: those ended
        # with their farm and are no fault (a device lost while its farm runs is one)
        ended = sum(1 for k, d in self.devices.items() if d.state == "offline"
                    and k[0] in self.farms and self.farms[k[0]].state == "offline")
        return Totals(total=len(self.devices),
                      online=sum(n for s, n in c.items() if s not in ("offline", "unknown")),
                      busy=c["busy"], paused=c["paused"], quarantined=c["quarantined"],
                      error=c["offline"] - ended + errors, ended=ended,
                      episodes=sum(d.status.episodes for d in self.devices.values()
                                   if d.status is not None))

    def visible(self, query: str = "", sort: str = "device", reverse: bool = False
                ) -> list[DeviceKey]:
        """Device keys matching ``query`` (space-separated words, all must match; a
        ``!word`` must not) in ``sort`` order."""
        words = query.lower().split()
        keys = []
        for k, d in self.devices.items():
            hay = d.haystack()
            if all((w[1:] not in hay) if w.startswith("!") and len(w) > 1 else (w in hay)
                   for w in words):
                keys.append(k)
        if sort == "device":
            keys.sort(key=_natural, reverse=reverse)
        else:
            keys.sort(key=lambda k: self.devices[k].sort_value(sort), reverse=reverse)
        return keys
