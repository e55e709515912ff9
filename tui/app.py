"""The DistRL TUI: an MQTT client that watches and operates device farms.

Data path: one feed worker reads the :class:`DataSource` and
folds each message into the :class:`FleetModel` (cheap, on the loop); frames go to the
:class:`FrameDecoder` thread, which keeps only the newest per device; a timer tick
(``tick_s``, 8 Hz by default) collects decoded pictures and redraws the active screen
inside one ``batch_update``. Commands go out through the same source."""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import signal
import time
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, ScreenStackError
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.dom import DOMNode
from textual.screen import Screen

from distrl_sdk.wire import Command, encode_envelope, topics
from distrl_sdk.wire.signing import SigningKey, TrustedKeys
from tui.base import MUTATIONS, AppScreen, DeviceActionsScreen
from tui.commands import FarmCommands
from tui.decoder import DeviceKey, FrameDecoder
from tui.device import DeviceScreen
from tui.fleet import FleetScreen
from tui.fleet_table import FleetTable
from tui.host import PaletteEntry
from tui.learner import LearnerScreen
from tui.logs import LogsScreen
from tui.modals import ConfirmScreen, HelpScreen, PromptScreen
from tui.model import FleetModel
from tui.source import ConnectionChanged, DataSource, SourceClosed
from tui.terminal import force_color_system
from tui.wall import PhoneWall

__all__ = ["DistrlTui"]

#: seconds a command stays valid: long enough for a slow broker, short for a replay
COMMAND_TTL_S = 60.0


class DistrlTui(App[None]):
    """``DistrlTui(source).run()``; ``readonly=True`` refuses every mutation."""

    TITLE = "DistRL"
    COMMANDS = App.COMMANDS | {FarmCommands}
    MODES: ClassVar[dict[str, str | Callable[[], Screen[Any]]]] = {
        "fleet": FleetScreen, "learner": LearnerScreen, "logs": LogsScreen}
    DEFAULT_MODE = "fleet"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "switch_mode('fleet')", "Fleet", tooltip="Every device"),
        Binding("2", "switch_mode('learner')", "Learner", tooltip="Training curves"),
        Binding("3", "switch_mode('logs')", "Logs", tooltip="Events and rejected messages"),
        Binding("question_mark", "help", "Help", tooltip="Every key", key_display="?"),
        Binding("q", "quit", "Quit", tooltip="Leave the TUI (the farm keeps running)"),
    ]

    def __init__(self, source: DataSource, *, readonly: bool = False,
                 clock: Callable[[], float] = time.time, tick_s: float = 0.125,
                 thumb_rows: int = 4, notify_limit: int = 3,
                 crash_log: Path | None = None, quit_hint: str | None = None,
                 fleet_view: str = "wall", color: str = "auto", image: str = "halfblock",
                 password_file: Path | None = None, signer: SigningKey | None = None,
                 trusted_farms: TrustedKeys | None = None) -> None:
        super().__init__()
        self.signer = signer  # signs every command (farms run only what a key they trust signed)
        if fleet_view not in ("wall", "list"):
            raise ValueError(f"fleet_view must be wall or list, not {fleet_view!r}")
        if image not in ("halfblock", "native"):
            raise ValueError(f"image must be halfblock or native, not {image!r}")
        self.fleet_view = fleet_view
        self.image = image
        self.color = force_color_system(self.console, color)
        self.quit_hint = quit_hint or "Leave the TUI (the farm keeps running)"
        self.source = source
        self.crash_log = crash_log
        # the broker password's file, named (never its content) in command lines shown
        self.password_file = password_file
        self.readonly = readonly
        self.tick_s = tick_s
        self.thumb_rows = thumb_rows
        self.thumb_cols = thumb_rows + 1  # a phone is about half as wide as tall
        self.notify_limit = notify_limit
        self.model = FleetModel(clock, trusted_farms=trusted_farms)
        self.decoder = FrameDecoder(thumb_rows, self.thumb_cols)
        self.decoder.native = image == "native"
        self.ticks = 0

    # ------------------------------------------------------------ lifecycle
    def _handle_exception(self, error: Exception) -> None:
        """Textual prints a crash's traceback on the terminal it is tearing down; with
        ``crash_log`` it also goes to a file, so whoever ran us (``distrl demo``) can say
        where it is after the screen is gone."""
        if self.crash_log is not None:
            with contextlib.suppress(OSError):
                self.crash_log.parent.mkdir(parents=True, exist_ok=True)
                self.crash_log.write_text("".join(traceback.format_exception(error)))
        super()._handle_exception(error)

    def on_mount(self) -> None:
        self.decoder.start()
        self.run_worker(self._feed(), name="feed", group="feed", exclusive=True,
                        exit_on_error=False)
        self.set_interval(self.tick_s, self.tick, name="tick")
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            # `distrl demo` stops its TUI child with SIGTERM: leave the terminal clean
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, self.exit)

    async def on_unmount(self) -> None:
        self.decoder.stop()
        await self.source.close()

    async def _feed(self) -> None:
        n = 0
        async for ev in self.source.events():
            if isinstance(ev, ConnectionChanged):
                self.model.connection(ev.connected, ev.detail)
                continue
            job = self.model.ingest(ev.topic, ev.payload)
            if job is not None:
                self.decoder.submit(job)
            while self.model.removed:
                self.decoder.forget(self.model.removed.pop())
            n += 1
            if n % 64 == 0:
                await asyncio.sleep(0)  # a burst must not starve the UI
        self.model.connection(False, "data source closed")

    def tick(self) -> None:
        """Apply decoded frames, pop notifications, redraw the active screen."""
        self.ticks += 1
        for r in self.decoder.take().values():
            self.model.apply_rendered(r)
        notices, self.model.notices = self.model.notices, []
        for sev, text in notices[: self.notify_limit]:
            self.notify(text, severity=sev)  # type: ignore[arg-type]
        if len(notices) > self.notify_limit:
            self.notify(f"… and {len(notices) - self.notify_limit} more (see logs: 3)")
        del self.model.changes[:-1000]
        try:
            screen = self.screen
        except ScreenStackError:  # shutting down: the screens are gone already
            return
        if isinstance(screen, AppScreen):
            # NoMatches: the screen is still composing or already torn down
            with self.batch_update(), contextlib.suppress(NoMatches):
                screen.refresh_from_model()

    async def settle(self, timeout: float = 5.0) -> None:
        """Wait until everything the source queued is ingested and decoded, then tick
        (tests: deterministic screens without sleeping). A tick can itself queue frames
        (the wall's tile size or its phones on screen changed), so it is settled only
        after a tick that queued none."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            while loop.time() < deadline:
                if not getattr(self.source, "pending", 0) and self.decoder.idle:
                    break
                await asyncio.sleep(0.005)
            queued = self.decoder.queued
            await asyncio.sleep(0)
            self.tick()
            if self.decoder.queued == queued or loop.time() >= deadline:
                return

    async def wait_commands(self) -> None:
        """Wait until every command publish started so far is done (tests)."""
        workers = [w for w in self.workers if w.group == "commands"]
        if workers:
            await self.workers.wait_for_complete(workers)

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """The palette's screenshot: Textual saves to ~/Downloads and fails when there
        is none (servers, containers); fall back to the working directory, and say
        where it went or why it could not be written."""
        if path is None:
            downloads = Path.home() / "Downloads"
            path = str(downloads if downloads.is_dir() else Path.cwd())
        try:
            key = super().deliver_screenshot(filename, path, time_format)
        except OSError as e:
            self.notify(f"screenshot not saved in {path}: {e}", severity="error")
            return None
        return key  # Textual says when its thread has written it (or failed to)

    # ------------------------------------------------------------ navigation
    def open_device(self, key: DeviceKey) -> None:
        if key not in self.model.devices:
            self.notify(f"unknown device {key[0]}/{key[1]}", severity="warning")
            return
        if self.current_mode != "fleet":
            self.switch_mode("fleet")
        self.push_screen(DeviceScreen(key))

    def action_help(self) -> None:
        sections: list[tuple[str, list[tuple[str, str]]]] = []
        seen: set[str] = set()

        def keys_of(cls: type[DOMNode]) -> list[tuple[str, str]]:
            out = []
            for b in cls.BINDINGS:
                if isinstance(b, Binding):
                    tip = self.quit_hint if b.action == "quit" else b.tooltip
                    out.append((b.key_display or b.key, tip or b.description))
            return out

        for title, cls in (("Everywhere", type(self)), ("Fleet", FleetScreen),
                           ("Fleet wall", PhoneWall), ("Fleet list", FleetTable),
                           ("Device", DeviceScreen)):
            rows = [kv for kv in keys_of(cls) if kv[0] not in seen or title == "Device"]
            seen.update(k for k, _ in rows)
            if rows:  # the list's keys are mostly the wall's: no empty heading
                sections.append((title, rows))
        acts = [(key, f"{label} (confirm first)" if name == "quarantine" else label)
                for name, (key, label, _op) in MUTATIONS.items()]
        sections.append(("Device actions (fleet and device screens)"
                         + (": DISABLED, read-only" if self.readonly else ""), acts))
        sections.append(("Anywhere else", [("ctrl+p", "command palette (every action)"),
                                           ("esc", "close a dialog / go back"),
                                           ("y / n", "answer a confirmation"),
                                           ("mouse", "click selects a row, double click "
                                                     "opens it")]))
        self.push_screen(HelpScreen(sections, note=f"source: {self.source.description}"))

    # ------------------------------------------------------------ commands
    def request(self, name: str, key: DeviceKey | None) -> None:
        """A device action by name (see :data:`tui.base.MUTATIONS`), with its dialog."""
        if name not in MUTATIONS:
            raise ValueError(f"unknown device action {name!r}")
        label = MUTATIONS[name][1].lower()
        if self.readonly:
            self.notify(f"read-only mode: {label} is disabled", severity="warning")
            return
        if key is None:
            self.notify("no device selected", severity="warning")
            return
        who = f"{key[0]}/{key[1]}"
        if name == "quarantine":
            def confirmed(yes: bool | None) -> None:
                if yes:
                    self.send_command(key, "quarantine")
            self.push_screen(ConfirmScreen(
                f"Quarantine {who}? It stops taking episodes until released (e)."), confirmed)
        elif name == "run_task":
            def got_task(task: str | None) -> None:
                if task:
                    self.send_command(key, "run_task", {"task": task})
            known = self.model.farm_tasks(key[0])
            # only the farm's own list is complete enough to refuse other names
            named = self.model.farm_names_tasks(key[0])
            listed = f"{', '.join(known[:8])}{' …' if len(known) > 8 else ''}"
            title = f"Task to run on {who}" + (
                f" ({len(known)} this farm runs: {listed})" if named else
                f" (seen running: {listed}; the farm refuses a task it does not run)"
                if known else " (the farm refuses a task it does not run)")
            self.push_screen(PromptScreen(
                title, f"task name, e.g. {known[0]}" if known else "task name",
                choices=known if named else ()), got_task)
        elif name == "deploy":
            def got_instruction(text: str | None) -> None:
                if text:
                    self.deploy_hint(key, text)
            self.push_screen(PromptScreen(f"Deploy the trained agent on {who}: instruction",
                                          "e.g. Turn off Wi-Fi"), got_instruction)
        else:
            self.send_command(key, MUTATIONS[name][2])

    def deploy_hint(self, key: DeviceKey, instruction: str) -> str:
        """Deploying runs ``distrl deploy`` next to the phone (its safety guard, limits
        and recording live there, not in the farm's command set): build that command
        line, runnable as it is on the farm's host, copy it to the clipboard (OSC 52) and
        show it. The policy is a checkpoint the learner announced as a file, else the
        newest one it published on this broker (``--policy published``, with the
        TUI's own ``--password-file`` when it was given one); the adb server
        is the one the farm reports for the device. The farm's own policy is what
        ``run_task`` (t) uses."""
        p = self.model.pointer
        broker = self.source.broker_url
        if p is not None and p.where.startswith("file://"):
            policy = ["--policy", p.where[len("file://"):]]
        elif broker is not None:
            policy = ["--policy", "published", "--broker", broker]  # never a password
            if self.password_file is not None:  # a broker with accounts needs its password
                policy += ["--password-file", str(self.password_file.resolve())]
        else:
            policy = ["--policy", "random"]  # no learner known to this source
        dev = self.model.devices.get(key)
        adb = dev.status.adb_server if dev is not None and dev.status is not None else None
        port = adb.rpartition(":")[2] if adb else ""
        flags = ["--adb-port", port] if port.isdecimal() and port != "5037" else []
        line = " ".join(["distrl", "deploy", "--device", shlex.quote(key[1]), *flags,
                         *(shlex.quote(a) for a in policy), shlex.quote(instruction)])
        with contextlib.suppress(Exception):  # terminals without OSC 52 just ignore it
            self.copy_to_clipboard(line)
        self.model.log("info", f"deploy: run this on the host of {key[0]}/{key[1]}: {line}",
                       key)
        # OSC 52 gets no answer: whether the terminal took it is not known, so say so
        self.notify(f"Run this where the phone is connected (offered to the clipboard, "
                    f"terminal permitting; also in the logs, 3):\n{line}",
                    title="Deploy", timeout=15)
        return line

    def send_command(self, key: DeviceKey, op: str, args: dict[str, Any] | None = None
                     ) -> Command | None:
        """Publish a :class:`Command` on ``distrl/v1/<farm>/cmd/<device>`` (in a worker);
        the farm answers on ``cmd_result``, which the Logs screen shows."""
        if self.readonly:  # the last line of defence; the UI never gets here read-only
            self.notify("read-only mode: commands are disabled", severity="warning")
            return None
        farm, device = key
        # expires: a captured command replayed later is refused even by a restarted farm
        cmd = Command(device_id=device, op=op, args=args or {},  # type: ignore[arg-type]
                      expires_at=time.time() + COMMAND_TTL_S)
        payload = encode_envelope(cmd, farm_id=farm, signer=self.signer)
        topic = topics.cmd(farm, device)
        self.model.record_sent(farm, cmd)

        async def publish() -> None:
            try:
                await self.source.send(topic, payload)
            except SourceClosed as e:
                self.model.log("error", f"{op} to {farm}/{device} not sent: {e}", key)
                self.notify(f"{op} not sent: {e}", severity="error")
            else:
                self.notify(f"{op} sent to {farm}/{device}", timeout=2)

        self.run_worker(publish(), group="commands", exit_on_error=False)
        return cmd

    def palette_commands(self, current_only: bool = False) -> list[PaletteEntry]:
        out: list[PaletteEntry] = [
            ("Show fleet", "every device (1)", partial(self.switch_mode, "fleet")),
            ("Show learner", "training curves (2)", partial(self.switch_mode, "learner")),
            ("Show logs", "events and rejected messages (3)", partial(self.switch_mode, "logs")),
            ("Help: keys", "every key (?)", self.action_help),
        ]
        screen = self.screen
        current = screen.current_device() if isinstance(screen, DeviceActionsScreen) else None
        keys = [current] if current_only else sorted(self.model.devices)
        for key in keys:
            if key is None:
                continue
            who = f"{key[0]}/{key[1]}"
            out.append((f"Open {who}", "the device screen", partial(self.open_device, key)))
            if self.readonly:
                continue
            for name, (k, label, _op) in MUTATIONS.items():
                out.append((f"{label} {who}", f"key {k}", partial(self.request, name, key)))
        return out
