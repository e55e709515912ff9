"""Shared plumbing for the benchmarks: phones in a child process, CPU accounting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from farm.sim.adbhost import free_port  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """user+system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def free_base_port(n: int) -> int:
    import socket

    while True:
        base = free_port()
        if base + n >= 65535:
            continue
        socks = []
        try:
            for i in range(n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", base + i))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()


PORT_RACE = "cannot listen on ports"  # `sim serve`'s message when a port was taken
PORT_TRIES = 5


@contextmanager
def phones_in_child(count: int, *, profile: str = "instant", screen: str = "phone",
                    seed: int = 0) -> Iterator[dict[str, Any]]:
    """Run ``distrl sim serve`` in a child process; yield its state (pid, phones …).

    The ports are probed free here but bound by the child, so another process (a bench
    run beside this one, an adb server) can take one in between: the child then exits
    saying so, and it is started again on fresh ports, up to ``PORT_TRIES`` times."""
    for attempt in range(1, PORT_TRIES + 1):
        try:
            proc, state = _start_sim_serve(count, profile, screen, seed)
            break
        except RuntimeError as exc:
            if PORT_RACE not in str(exc) or attempt == PORT_TRIES:
                raise
    try:
        yield state
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _start_sim_serve(count: int, profile: str, screen: str, seed: int
                     ) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """One ``sim serve`` child on a free port range and its state once it is up; raises
    RuntimeError with the child's stderr if it exits (or hangs) before that."""
    state_dir = tempfile.mkdtemp(prefix="distrl-bench-")
    env = {**os.environ, "DISTRL_STATE_DIR": state_dir}
    base = free_base_port(count)
    # stderr to a file, not a pipe: nobody reads a pipe during a 30-minute run, and a
    # child whose warnings fill it would block on its next write
    err_path = Path(state_dir) / "sim-serve.stderr"
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "farm.cli", "sim", "serve", "--count", str(count),
             "--base-port", str(base), "--profile", profile, "--screen", screen,
             "--seed", str(seed), "--name", "bench"],
            env=env, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT,
        )
    state_file = Path(state_dir) / "sim-bench.json"
    deadline = time.monotonic() + 60
    while not state_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait(timeout=20)
            raise RuntimeError(f"sim serve failed: {err_path.read_text(errors='replace')}")
        time.sleep(0.05)
    return proc, json.loads(state_file.read_text())
