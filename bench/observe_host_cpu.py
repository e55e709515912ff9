"""Host CPU to read one raw frame (1080×2400 `screencap`): ours vs the `adb` CLI vs before.

A sim phone runs in a child process (`distrl sim serve`), behind a private adb server;
each round reads N frames of an unchanged screen three ways, in rotating order:

* **ours**: `AdbDevice.screenshot_rgba()` — one exact-size buffer `recv_into`-ed from
  the socket, pixels handed on as a view — plus the blank-frame check `observe()` runs;
* **before**: the reader this replaced, kept here to compare against — a buffer grown by
  doubling, copied into `bytes`, sliced (another copy), then every byte scanned for 0;
* **adb CLI**: `adb exec-out screencap` spawned per frame, its stdout read into this
  process (what a script piping the CLI pays).

Then whole observations (frame + UI dump + focus, concurrently): `observe()` vs three
`adb exec-out` processes run at once, wall time and host CPU per observation.

CPU is process CPU time (user + system, every thread), not wall time: ours and before
are this process's; the CLI is its process (`RUSAGE_CHILDREN`) plus this process
reading the pipe. The adb server (the same for all three) and the phone are other
processes, reported for context and not counted. Figures are the median over rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import struct
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from _common import cpu_seconds, phones_in_child

from farm.adb import AdbServerClient, looks_blank
from farm.device import AdbDevice
from farm.device.observe import FOCUS_COMMAND, observe
from farm.sim.adbhost import PrivateAdbServer, bundled_adb


async def _before(client: AdbServerClient, serial: str) -> int:
    """The old path, verbatim in effect: grow-by-doubling read, ``bytes()``, a slice,
    a full ``count(0)``."""
    loop = asyncio.get_running_loop()
    sock = await client._service(serial, "exec:screencap")
    try:
        buf = bytearray(64 * 1024)
        got = 0
        while True:
            if got == len(buf):
                buf.extend(bytes(len(buf)))
            k = await loop.sock_recv_into(sock, memoryview(buf)[got:])
            if k == 0:
                del buf[got:]
                break
            got += k
        raw = bytes(buf)
    finally:
        sock.close()
    width, height = struct.unpack_from("<II", raw)
    rgba = raw[16:] if len(raw) == 16 + width * height * 4 else raw[12:]
    assert len(rgba) == width * height * 4
    assert rgba.count(0) != len(rgba)
    return len(rgba)


async def _ours(dev: AdbDevice) -> int:
    width, height, rgba = await dev.screenshot_rgba()
    assert len(rgba) == width * height * 4 and not looks_blank(rgba)
    return len(rgba)


def _cli(adb: PrivateAdbServer, serial: str, size: int) -> int:
    out = subprocess.run([adb.adb_path, "-P", str(adb.port), "-s", serial, "exec-out",
                          "screencap"], stdout=subprocess.PIPE, env=adb.env, check=True).stdout
    assert len(out) == 16 + size
    return len(out) - 16


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _adb_server_pid(port: int) -> int | None:
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"fork-server" in argv and f"tcp:{port}".encode() in argv:
            return int(proc.name)
    return None


async def run(n: int, rounds: int, screen: str) -> None:
    with phones_in_child(1, screen=screen) as state, PrivateAdbServer(bundled_adb()) as adb:
        phone_pid, phone = state["pid"], state["phones"][0]
        serial = phone["serial"]
        width, height = (int(v) for v in phone["screen"].split("x"))
        size = width * height * 4
        adb.connect(serial)
        server_pid = _adb_server_pid(adb.port)
        client = AdbServerClient(port=adb.port, timeout=60)
        dev = AdbDevice(serial, port=adb.port, timeout=60)
        await dev.shell("am start -n com.android.settings/.Settings")

        async def cli() -> int:
            return _cli(adb, serial, size)  # blocking on purpose: no thread's CPU added

        ways: dict[str, Callable[[], Awaitable[int]]] = {
            "ours": lambda: _ours(dev), "before": lambda: _before(client, serial),
            "adb CLI": cli}
        for read in ways.values():  # warm up: render cached, code paths loaded
            for _ in range(3):
                assert await read() == size
        cpu: dict[str, list[float]] = {k: [] for k in ways}
        child: dict[str, list[float]] = {k: [] for k in ways}
        wall: dict[str, list[float]] = {k: [] for k in ways}
        server: dict[str, list[float]] = {k: [] for k in ways}
        phone_cpu: dict[str, list[float]] = {k: [] for k in ways}
        names = list(ways)
        for r in range(rounds):
            for name in names[r % len(names):] + names[: r % len(names)]:
                read = ways[name]
                s0 = cpu_seconds(server_pid) if server_pid else 0.0
                p0 = cpu_seconds(phone_pid)
                c0, k0, w0 = time.process_time(), _children_cpu(), time.perf_counter()
                for _ in range(n):
                    await read()
                cpu[name].append((time.process_time() - c0) / n * 1e3)
                child[name].append((_children_cpu() - k0) / n * 1e3)
                wall[name].append((time.perf_counter() - w0) / n * 1e3)
                if server_pid:
                    server[name].append((cpu_seconds(server_pid) - s0) / n * 1e3)
                phone_cpu[name].append((cpu_seconds(phone_pid) - p0) / n * 1e3)

        med = statistics.median
        total = {k: med(cpu[k]) + med(child[k]) for k in ways}
        print(f"{width}x{height} raw frame ({size / 1e6:.1f} MB), {rounds} rounds x {n} "
              "frames each way; host CPU per frame (median over rounds):")
        print(f"  {'':8} {'ours':>9} {'+ child':>9} {'= total':>9} {'wall':>8}   "
              f"{'adb server':>10} {'phone':>7}")
        for k in ways:
            srv = f"{med(server[k]):8.2f}ms" if server[k] else "       n/a"
            print(f"  {k:8} {med(cpu[k]):7.2f}ms {med(child[k]):7.2f}ms {total[k]:7.2f}ms "
                  f"{med(wall[k]):6.1f}ms   {srv} {med(phone_cpu[k]):5.2f}ms")
        print("  rounds, total ms/frame: " + "; ".join(
            f"{k} " + " ".join(f"{c + d:.1f}" for c, d in zip(cpu[k], child[k], strict=True))
            for k in ways))
        print(f"ratios (host CPU, lower is better): before / ours = "
              f"{total['before'] / total['ours']:.1f}x, adb CLI / ours = "
              f"{total['adb CLI'] / total['ours']:.1f}x")
        await _observations(adb, dev, n, rounds)


async def _observations(adb: PrivateAdbServer, dev: AdbDevice, n: int, rounds: int) -> None:
    """A whole observation: ``observe()`` vs the three reads as concurrent CLI processes."""
    base = [adb.adb_path, "-P", str(adb.port), "-s", dev.serial, "exec-out"]
    cmds = ["screencap", "uiautomator dump /dev/tty", FOCUS_COMMAND]

    async def cli() -> None:
        procs = [await asyncio.create_subprocess_exec(*base, c, stdout=subprocess.PIPE,
                                                      env=adb.env) for c in cmds]
        outs = await asyncio.gather(*(p.communicate() for p in procs))
        assert b"</hierarchy>" in outs[1][0] and not looks_blank(outs[0][0][16:])

    async def ours() -> None:
        await observe(dev)

    ways: dict[str, Callable[[], Awaitable[None]]] = {"observe()": ours, "adb CLI x3": cli}
    walls: dict[str, list[float]] = {k: [] for k in ways}
    cpus: dict[str, list[float]] = {k: [] for k in ways}
    for read in ways.values():
        await read()
    for r in range(rounds):
        for name in list(ways)[r % 2:] + list(ways)[: r % 2]:
            c0, k0 = time.process_time(), _children_cpu()
            for _ in range(n):
                w0 = time.perf_counter()
                await ways[name]()
                walls[name].append((time.perf_counter() - w0) * 1e3)
            cpus[name].append((time.process_time() - c0 + _children_cpu() - k0) / n * 1e3)
    print("whole observation (frame + UI dump + focus, concurrent): wall p50 / host CPU")
    for k in ways:
        print(f"  {k:11} {statistics.median(walls[k]):6.1f} ms / "
              f"{statistics.median(cpus[k]):6.2f} ms")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20, help="frames per way per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--screen", default="phone", choices=["phone", "small"])
    args = ap.parse_args()
    asyncio.run(run(args.n, args.rounds, args.screen))
