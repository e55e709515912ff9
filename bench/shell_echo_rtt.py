"""`shell echo` round trip through the adb server to a sim phone vs a plain TCP echo.

Both sides open a fresh loopback connection per request, as adb does per command.
The phone runs in a child process; so does the TCP echo server. Prints medians and
the ratio for three adb clients: DistRL's lean async client, adbutils, and the `adb`
binary (process start included).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time

from _common import phones_in_child

from farm.adb import AdbServerClient
from farm.sim.adbhost import PrivateAdbServer, bundled_adb, free_port

ECHO_SERVER = """
import asyncio, sys
async def handle(r, w):
    data = await r.read(4096)
    w.write(data); await w.drain(); w.close()
async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
    print("ready", flush=True)
    await srv.serve_forever()
asyncio.run(main())
"""


async def tcp_echo(port: int) -> None:
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(b"hi\n")
    await w.drain()
    assert await r.read(4096) == b"hi\n"
    w.close()
    await w.wait_closed()


async def timed(fn, n: int) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1000


async def run(n: int, port: int) -> None:
    with phones_in_child(1) as state, PrivateAdbServer(bundled_adb()) as adb:
        serial = state["phones"][0]["serial"]
        adb.connect(serial)
        client = AdbServerClient(port=adb.port)
        device = adb.client().device(serial)

        async def lean() -> None:
            assert (await client.shell_v2(serial, "echo hi")).stdout == b"hi\n"

        async def via_adbutils() -> None:
            assert await asyncio.to_thread(device.shell, "echo hi") == "hi"

        async def via_cli() -> None:
            out = await asyncio.to_thread(adb.run, "-s", serial, "shell", "echo", "hi")
            assert out.stdout == "hi\n"

        for fn in (lean, via_adbutils, tcp_echo_fn(port)):
            await timed(fn, 20)  # warm up
        base = await timed(tcp_echo_fn(port), n)
        print(f"plain TCP echo on loopback: {base:7.3f} ms (median of {n})")
        for name, fn, reps in (("lean async client", lean, n), ("adbutils", via_adbutils, n),
                               ("adb CLI process", via_cli, max(20, n // 10))):
            ms = await timed(fn, reps)
            print(f"shell echo via {name:>17}: {ms:7.3f} ms  = {ms / base:5.1f}× TCP echo")


def tcp_echo_fn(port: int):  # type: ignore[no-untyped-def]
    async def fn() -> None:
        await tcp_echo(port)
    return fn


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=300, help="round trips per client")
    args = ap.parse_args()
    port = free_port()
    echo = subprocess.Popen([sys.executable, "-c", ECHO_SERVER, str(port)],
                            stdout=subprocess.PIPE, text=True)
    assert echo.stdout and echo.stdout.readline().strip() == "ready"
    try:
        asyncio.run(run(args.n, port))
    finally:
        echo.terminate()
