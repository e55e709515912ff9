"""The README's main-job command, for real: ``distrl demo --phones 2`` in a 200×50 tmux
terminal. The TUI must show both sim phones as rows and a fleet episode total that
rises; ``q`` must end the whole demo with exit code 0 and leave no process behind
(learner, farm, its sim phones, mosquitto, the TUI).

Everything is the real thing: the embedded broker, the learner and farm as child
processes, the Textual app drawing into tmux; the test only reads the screen
(``tmux capture-pane``) and presses keys (``tmux send-keys``)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None,
                       reason="tmux is not installed (apt install tmux): this test runs the "
                              "real `distrl demo` in a tmux terminal and reads its screen"),
]

REPO = Path(__file__).resolve().parents[1]
# a sim phone's serial, in a wall tile or a list row (not the broker URL's mqtt://host:port)
SERIAL = re.compile(r"(?<![/\w.:@])(127\.0\.0\.1:\d+)")
EPISODES = re.compile(r"│ episodes (\d+) │")
STARTUP_S = 40.0  # rows and a rising episode total on a loaded 2-core box
SHUTDOWN_S = 45.0  # farm flush + learner checkpoint, each bounded by the demo
KEY_S = 20.0  # a key press → its screen drawn, on a loaded 2-core box


class Tmux:
    """A private tmux server (own socket) so the test never touches anyone's sessions."""

    def __init__(self, sock: Path, session: str) -> None:
        self.sock, self.session = sock, session

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        # the server (and so the demo) inherits this environment: COLUMNS/LINES (set under
        # pytest) would make the TUI draw 80×24 in a 200×50 window
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        return subprocess.run(["tmux", "-S", str(self.sock), *args], capture_output=True,
                              text=True, check=check, timeout=10, env=env)

    def screen(self) -> str:
        r = self("capture-pane", "-p", "-t", self.session, check=False)
        return r.stdout if r.returncode == 0 else ""


def _children_of() -> dict[int, list[int]]:
    """ppid → pids, from /proc (Linux)."""
    out: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        out.setdefault(ppid, []).append(int(d))
    return out


def _descendants(pid: int) -> set[int]:
    tree, seen, todo = _children_of(), set(), [pid]
    while todo:
        for c in tree.get(todo.pop(), []):
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return seen


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for init to reap it counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace")
    except OSError:
        return ""


def _mentioning(text: str, but: str) -> set[int]:
    """Live processes whose command line contains ``text`` — but not ``but`` (the pane's
    shell, still writing the exit code) and not tmux (its server keeps the command line
    it was started with)."""
    return {int(d) for d in os.listdir("/proc") if d.isdigit() and int(d) != os.getpid()
            and text in (c := _cmdline(int(d))) and but not in c
            and not c.startswith("tmux") and _alive(int(d))}


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    # a short socket path: unix sockets allow ~100 bytes, pytest's tmp_path can be longer
    sock_dir = Path(tempfile.mkdtemp(prefix="dtmux"))
    t = Tmux(sock_dir / "s", f"demo{os.getpid()}")
    try:
        yield t
    finally:
        t("kill-server", check=False)  # SIGHUP: the demo shuts its children down
        shutil.rmtree(sock_dir, ignore_errors=True)


def _fail(msg: str, screen: str, run_dir: Path) -> None:
    logs = "".join(f"\n--- {p.name} (tail)\n" + "".join(p.read_text(errors="replace")
                                                        .splitlines(True)[-15:])
                   for p in sorted(run_dir.glob("*/logs/*.log")))
    pytest.fail(f"{msg}\n--- screen\n{screen}{logs}")


def test_demo_shows_devices_and_rising_episodes_and_q_exits_cleanly(tmux: Tmux,
                                                                      tmp_path: Path) -> None:
    run_dir = tmp_path / "runs"
    rc_file = tmp_path / "rc"
    # --duration: a safety net so a demo that ignores q still ends on its own
    cmd = (f"{shlex.quote(sys.executable)} -m farm.cli demo --phones 2 --duration 180 "
           f"--run-dir {shlex.quote(str(run_dir))}; echo $? > {shlex.quote(str(rc_file))}")
    tmux("new-session", "-d", "-s", tmux.session, "-x", "200", "-y", "50", "-c", str(REPO),
         cmd)
    t0 = time.monotonic()
    serials: set[str] = set()
    first_seen: dict[str, str] = {}
    totals: list[int] = []
    tree: set[int] = set()
    demo_pid: int | None = None
    screen = ""
    while time.monotonic() - t0 < STARTUP_S:
        time.sleep(0.5)
        if rc_file.exists():
            _fail(f"the demo ended on its own (exit {rc_file.read_text().strip()})", screen,
                  run_dir)
        screen = tmux.screen()
        if demo_pid is None:
            for p in run_dir.glob("*/logs/pids.json"):
                with contextlib.suppress(ValueError, OSError):
                    demo_pid = int(json.loads(p.read_text())["demo"])
        if demo_pid is not None:
            tree |= _descendants(demo_pid)  # learner, farm, sims, mosquitto, TUI …
        for found in set(SERIAL.findall(screen)) - serials:
            first_seen[found] = screen  # where an unexpected serial came from, if one does
            serials.add(found)
        m = EPISODES.search(screen)
        if m and (not totals or int(m.group(1)) != totals[-1]):
            totals.append(int(m.group(1)))
        seen = [n for n in totals if n > 0]  # two different finished-episode totals
        if len(serials) >= 2 and len(seen) >= 2 and seen[-1] > seen[0]:
            break
    else:
        _fail(f"after {STARTUP_S:.0f} s: serials {sorted(serials)}, episode totals {totals}",
              screen, run_dir)
    startup_s = time.monotonic() - t0
    assert len(serials) == 2, "\n".join(  # two sim phones, and no "controller" row
        f"--- {serial} first seen on\n{where}" for serial, where in first_seen.items())
    assert not re.search(r"^\S*\s+controller\s", screen, re.M), screen
    assert totals == sorted(totals), f"the episode total went down: {totals}"
    assert "farm demo ● up" in screen, screen
    assert demo_pid is not None and tree, "no pids.json / child processes seen"
    names = " ".join(_cmdline(p) for p in tree)
    names_short = ", ".join(sorted({" ".join(Path(w).name for w in _cmdline(p).split()[:3])
                                    for p in tree}))
    assert "learner" in names and "farm up" in names and "-m tui" in names, names

    # every screen key, each screen seen, and the demo (all its parts) still running
    help_title = "DistRL TUI: keys"
    for key, marker, gone in (
            ("2", "DistRL learner", "DistRL fleet"), ("3", "DistRL logs", "DistRL learner"),
            ("1", "DistRL fleet", "DistRL logs"),
            ("Enter", "esc: back to the fleet", "DistRL fleet"),
            ("Escape", "DistRL fleet", "esc: back to the fleet"),
            ("?", help_title, "\x00"), ("Escape", "DistRL fleet", help_title)):
        tmux("send-keys", "-t", tmux.session, key)
        t_key = time.monotonic()
        while marker not in (screen := tmux.screen()) or gone in screen:
            if time.monotonic() - t_key > KEY_S or rc_file.exists():
                _fail(f"after {key!r}: no {marker!r} on screen", screen, run_dir)
            time.sleep(0.2)
        if key == "?":  # the help tells what q does here: it stops the whole demo
            assert "Quit the demo" in screen, screen
    assert not rc_file.exists(), "the demo ended while its screens were visited"
    parts = {name: pid for p in run_dir.glob("*/logs/pids.json")
             for name, pid in json.loads(p.read_text()).items()}
    assert {"demo", "learner", "farm", "tui"} <= set(parts), parts
    assert all(_alive(pid) for pid in parts.values() if pid), parts
    tmux("send-keys", "-t", tmux.session, "q")
    t1 = time.monotonic()
    while not rc_file.exists() and time.monotonic() - t1 < SHUTDOWN_S:
        time.sleep(0.25)
    if not rc_file.exists():
        _fail(f"q did not end the demo within {SHUTDOWN_S:.0f} s", tmux.screen(), run_dir)
    rc = rc_file.read_text().strip()
    assert rc == "0", f"demo exit code {rc}"
    time.sleep(0.5)  # init reaps what the demo left (nothing, we hope)
    left = {p for p in tree | {demo_pid} if _alive(p)}
    strays = _mentioning(str(run_dir), but=str(rc_file))
    for pid in left | strays:  # ours: never leave them running, even when the test fails
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    assert not left, {p: _cmdline(p) for p in left}
    assert not strays, {p: _cmdline(p) for p in strays}
    print(f"rows + rising episodes on screen after {startup_s:.1f} s; "
          f"q → exit in {time.monotonic() - t1:.1f} s; totals {totals}; "
          f"{len(tree)} processes ({names_short}), all gone")
