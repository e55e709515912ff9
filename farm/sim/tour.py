"""A guided tour of simulated phones driven by the real ``adb`` (``distrl demo`` for now).

It starts a few phones and a private adb server, then walks phone 0 from the
launcher to Settings → Network & internet → Wi-Fi and flips the switch, using
only what ``uiautomator dump`` reports and ``input tap`` — the loop an agent runs.
Every adb command is printed so the user can repeat it by hand.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Callable
from pathlib import Path

from distrl_sdk.uitree import UIElement, find_elements, parse_ui_dump
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.farm import DEFAULT_BASE_PORT, SimFarm
from farm.sim.spec import ScreenSpec

Say = Callable[[str], None]


class TourFailed(Exception):
    """The walk could not find what it looked for on screen."""


def _find(elements: list[UIElement], *labels: str) -> UIElement:
    for label in labels:
        hits = find_elements(elements, text=label) or find_elements(elements, content_desc=label)
        if hits:
            return hits[0]
    seen = sorted({e.label for e in elements if e.label})[:30]
    raise TourFailed(f"none of {labels} on screen; saw: {', '.join(seen)}")


def _wifi_switch(elements: list[UIElement]) -> UIElement:
    switches = [e for e in elements if e.class_name == "android.widget.Switch"]
    if not switches:
        raise TourFailed("no Wi-Fi switch on the Internet page")
    row = next((e for e in elements if e.text in ("Wi\u2011Fi", "Wi-Fi")), None)
    if row is None:
        return switches[0]
    # the switch that shares a row with the Wi-Fi label
    return min(switches, key=lambda s: abs(s.bounds.center[1] - row.bounds.center[1]))


class Tour:
    def __init__(self, adb: PrivateAdbServer, serial: str, out_dir: Path, say: Say) -> None:
        self.adb, self.serial, self.out_dir, self.say = adb, serial, out_dir, say

    def adb_cmd(self, *args: str) -> str:
        return f"adb -P {self.adb.port} -s {self.serial} " + " ".join(shlex.quote(a) for a in args)

    def shell(self, *args: str) -> str:
        self.say(f"  $ {self.adb_cmd('shell', *args)}")
        proc = self.adb.run("-s", self.serial, "shell", *args)
        if proc.returncode != 0:
            raise TourFailed(f"adb shell {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
        return str(proc.stdout)

    def screenshot(self, name: str) -> Path:
        path = self.out_dir / f"{name}.png"
        self.say(f"  $ {self.adb_cmd('exec-out', 'screencap', '-p')} > {path}")
        proc = self.adb.run("-s", self.serial, "exec-out", "screencap", "-p", text=False)
        if not proc.stdout.startswith(b"\x89PNG"):
            raise TourFailed("screencap -p did not return a PNG")
        path.write_bytes(proc.stdout)
        return path

    def tap(self, element: UIElement) -> None:
        x, y = element.bounds.center
        self.say(f"  tap {element.label!r} at its bounds' centre {element.bounds}")
        self.shell("input", "tap", str(x), str(y))

    def screen(self) -> list[UIElement]:
        return parse_ui_dump(self.shell("uiautomator", "dump", "/dev/tty"))

    def walk_to_wifi(self) -> tuple[str, str]:
        self.shell("input", "keyevent", "HOME")
        self.screenshot("1-home")
        self.tap(_find(self.screen(), "Settings"))
        self.screenshot("2-settings")
        self.tap(_find(self.screen(), "Network & internet"))
        self.tap(_find(self.screen(), "Internet"))  # Android 12+ keeps Wi-Fi one level down
        before = self.shell("settings", "get", "global", "wifi_on").strip()
        self.tap(_wifi_switch(self.screen()))
        after = self.shell("settings", "get", "global", "wifi_on").strip()
        self.screenshot("3-wifi-toggled")
        return before, after


async def run_tour(
    *, count: int = 3, profile: str = "instant", seed: int = 0, screen: str = "phone",
    out_dir: Path = Path("runs/demo"), duration: float | None = None, say: Say = print,
) -> None:
    """Run the tour; keep the phones up for ``duration`` s (``None``: until Ctrl-C)."""
    out_dir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - once, before anything runs
    farm = SimFarm(count, profile=profile, seed=seed, base_port=DEFAULT_BASE_PORT,
                   screen=ScreenSpec.preset(screen))
    try:
        await farm.start()
    except OSError:
        farm = SimFarm(count, profile=profile, seed=seed, screen=ScreenSpec.preset(screen))
        await farm.start()
    adb = PrivateAdbServer()
    try:
        say(f"Started {count} simulated phones ({profile} latency, seed {seed}).")
        await asyncio.to_thread(adb.start)
        say(f"Started a private adb server on port {adb.port} ({adb.adb_path}); "
            "your own adb server and devices are left alone.\n")
        for p in farm.phones:
            await asyncio.to_thread(adb.connect, p.serial)
        listing = (await asyncio.to_thread(adb.run, "devices", "-l")).stdout
        say(f"$ adb -P {adb.port} devices -l\n{listing}")
        tour = Tour(adb, farm.phones[0].serial, out_dir, say)
        model = await asyncio.to_thread(tour.shell, "getprop", "ro.product.model")
        say(f"Model: {model.strip()}")
        say((await asyncio.to_thread(tour.shell, "wm", "size")).strip())
        say("\nWalking Launcher → Settings → Network & internet → Internet → Wi-Fi, reading bounds "
            "from the UI dump:")
        t0 = time.perf_counter()
        before, after = await asyncio.to_thread(tour.walk_to_wifi)
        say(f"\nwifi_on: {before} → {after} in {time.perf_counter() - t0:.2f} s; "
            f"screenshots in {out_dir}/\n")
        serial = farm.phones[0].serial
        say("Drive the phones yourself from another terminal, for example:")
        for example in ("shell input keyevent HOME", "shell dumpsys battery",
                        "exec-out screencap -p > screen.png", "shell uiautomator dump /dev/tty",
                        "shell am start -n com.android.settings/.Settings"):
            say(f"  adb -P {adb.port} -s {serial} {example}")
        say("Phones that outlive this demo: `distrl sim up`, then `distrl sim fault sim-0 hang` "
            "to inject faults and `distrl sim down` to stop them.")
        if duration is None:
            say("\nPress Ctrl-C to stop.")
            await asyncio.Event().wait()
        else:
            say(f"\nKeeping the phones up for {duration:g} s.")
            await asyncio.sleep(duration)
    finally:
        await asyncio.to_thread(adb.stop)
        await farm.stop()
        say("Stopped the phones and the private adb server.")
