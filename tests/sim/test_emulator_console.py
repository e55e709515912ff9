"""Sim phones started as emulators (`sim up --as-emulator`): adb on the odd emulator
ports, a console on the even port below, registered with a real adb server (Debian's
and adbutils' bundled one) as emulator-NNNN; `adb emu` reaches the console through the
auth token, snapshots save and load the whole phone, `sms send` delivers, `kill` ends
the phone. The console protocol itself, raw: banner, auth, KO lines, garbage."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from farm.sim.adbhost import PrivateAdbServer, bundled_adb
from farm.sim.console import register_with_adb
from farm.sim.farm import SimFarm

ADBS = [a for a in (shutil.which("adb"), bundled_adb()) if a]


async def adb_run(adb: PrivateAdbServer, *args: str) -> str:
    r = await asyncio.to_thread(adb.run, *args, timeout=30)
    return str(r.stdout) + str(r.stderr)


async def devices(adb: PrivateAdbServer) -> dict[str, str]:
    out = await adb_run(adb, "devices")
    return dict(line.split("\t") for line in out.splitlines()[1:] if "\t" in line)


@pytest.mark.slow
@pytest.mark.parametrize("adb_path", ADBS)
@pytest.mark.timeout(180)
async def test_emulators_appear_and_adb_emu_drives_their_console(adb_path: str) -> None:
    with PrivateAdbServer(adb_path=adb_path) as adb:
        await asyncio.to_thread(adb.run, "start-server")
        token = Path(adb.home) / ".emulator_console_auth_token"  # adb emu reads this HOME's
        async with SimFarm(2, as_emulator=True, seed=4, console_token=token) as farm:
            serials = farm.serials
            assert all(s.startswith("emulator-") for s in serials)
            for p in farm.phones:
                assert p.port == p.console_port + 1 and p.console_port % 2 == 0  # type: ignore[operator]
                assert await register_with_adb(adb.port, p.port)
            async with asyncio.timeout(20):
                while (await devices(adb)) != {s: "device" for s in serials}:  # noqa: ASYNC110 - polls adb's list
                    await asyncio.sleep(0.2)
            first = serials[0]
            assert "DistRL" in await adb_run(adb, "-s", first, "shell",
                                             "getprop ro.product.model")
            assert farm.phones[0].spec.name in await adb_run(adb, "-s", first, "emu",
                                                             "avd", "name")
            # a snapshot is the whole phone: settings, the foreground app
            await adb_run(adb, "-s", first, "emu", "avd", "snapshot", "save", "clean")
            assert "clean" in await adb_run(adb, "-s", first, "emu", "avd", "snapshot", "list")
            await adb_run(adb, "-s", first, "shell", "settings put global airplane_mode_on 1")
            await adb_run(adb, "-s", first, "shell", "am start -n com.android.settings/"
                                                     ".Settings")
            assert farm.phones[0].world.current_focus()[0] == "com.android.settings"  # type: ignore[index]
            await adb_run(adb, "-s", first, "emu", "avd", "snapshot", "load", "clean")
            assert (await adb_run(adb, "-s", first, "shell",
                                  "settings get global airplane_mode_on")).strip() == "0"
            assert farm.phones[0].world.current_focus()[0] != "com.android.settings"  # type: ignore[index]
            await adb_run(adb, "-s", first, "emu", "sms", "send", "5551234", "hello", "there")
            assert "body=hello there" in await adb_run(
                adb, "-s", first, "shell", "content query --uri content://sms/inbox "
                "--where read=0 --projection body")
            await adb_run(adb, "-s", serials[1], "emu", "kill")
            async with asyncio.timeout(20):
                while (await devices(adb)).get(serials[1]) == "device":  # noqa: ASYNC110
                    await asyncio.sleep(0.2)
            assert (await devices(adb)).get(first) == "device"


async def test_the_console_protocol_raw(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    async with SimFarm(1, as_emulator=True, console_token=token) as farm:
        port = farm.phones[0].console_port
        assert port is not None
        r, w = await asyncio.open_connection("127.0.0.1", port)

        async def ask(line: bytes) -> list[str]:
            w.write(line + b"\r\n")
            await w.drain()
            out: list[str] = []
            while True:
                got = (await asyncio.wait_for(r.readline(), 5)).decode().rstrip("\r\n")
                out.append(got)
                if got == "OK" or got.startswith("KO") or got.startswith("OK:"):
                    return out

        banner: list[str] = []
        while not banner or banner[-1] != "OK":
            banner.append((await r.readline()).decode().rstrip("\r\n"))
        assert banner[0] == "Android Console: Authentication required"
        assert str(token) in banner[-2]
        assert (await ask(b"avd name"))[-1].startswith("KO: unknown command")
        assert (await ask(b"auth nope"))[-1].startswith("KO: authentication token")
        assert (await ask(b"auth s3cret"))[-1] == "OK"
        assert await ask(b"avd name") == [farm.phones[0].spec.name, "OK"]
        assert (await ask(b"avd snapshot load missing"))[-1] == \
            "KO: snapshot 'missing' does not exist"
        assert (await ask(b"power capacity 42"))[-1] == "OK"
        assert farm.phones[0].faults.battery.level == 42
        for line, want in ((b"\xff\xfe", "KO: unknown command"), (b"avd", "KO: missing"),
                           (b"sms send", "KO: missing argument"), (b"geo fix x y", "KO: "),
                           (b"power capacity 900", "KO: Usage"), (b"rotate", "OK"),
                           (b"help", "OK"), (b"x" * 3000, "KO: unknown command")):
            assert (await ask(line))[-1].startswith(want), line  # answered, never dropped
        w.write(b"quit\r\n")
        await w.drain()
        assert await asyncio.wait_for(r.read(), 5) == b""
        w.close()


@pytest.mark.parametrize("adb_path", ADBS)
async def test_a_private_adb_server_adopts_no_emulator_it_was_not_told_of(
        adb_path: str) -> None:
    """Another test's (or farm's) emulator phones listen on the ports every adb server
    scans at start; a private server must not pick them up (a fresh-clone CI run once
    saw one in a registry test's device list)."""
    async with SimFarm(1, as_emulator=True, console_token=Path("/dev/null")) as farm:
        with PrivateAdbServer(adb_path=adb_path) as adb:
            await asyncio.to_thread(adb.run, "start-server")
            await asyncio.sleep(1.5)  # the scan runs right after the server starts
            assert await devices(adb) == {}
            assert await register_with_adb(adb.port, farm.phones[0].port)
            # adb lists a newly registered emulator as "offline" until its CNXN
            # handshake is done (slow on a loaded machine): wait for the settled state
            serial = farm.serials[0]
            async with asyncio.timeout(20):
                while (await devices(adb)).get(serial) != "device":  # noqa: ASYNC110
                    await asyncio.sleep(0.2)
            assert await devices(adb) == {serial: "device"}
