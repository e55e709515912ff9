"""Stream semantics as on a phone: stdout and stderr in the order written, sent while
the command runs, exit codes unchanged.

Packet-level checks use a raw ADB client against a whole SimPhone; the client-level
checks use adbutils' ``shell2`` (it appends ``; echo X4EXIT:$?`` to a ``shell:`` v1
command and parses the last line, so stderr sent out of order breaks it) and the
``adb`` binaries.
"""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator, Iterator

import pytest

from farm.sim.adbd.packets import A_CLSE, A_WRTE
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm
from farm.sim.farm import SimFarm
from farm.sim.phone import SimPhone
from farm.sim.spec import PhoneSpec
from tests.sim.adb_helpers import RawAdbClient, adb_binary_params

MIXED = "echo a; ls /nope; echo b; echo c >&2; echo d"
MIXED_MERGED = (b"a\nls: /nope: No such file or directory\nb\nc\nd\n")


def v2_decode(data: bytes) -> list[tuple[int, bytes]]:
    out = []
    pos = 0
    while pos < len(data):
        ident, length = struct.unpack_from("<BI", data, pos)
        out.append((ident, data[pos + 5 : pos + 5 + length]))
        pos += 5 + length
    assert pos == len(data)
    return out


@pytest.fixture
async def phone() -> AsyncIterator[SimPhone]:
    p = SimPhone(PhoneSpec(name="stream"))
    await p.start()
    try:
        yield p
    finally:
        await p.stop()


@pytest.fixture
async def client(phone: SimPhone) -> AsyncIterator[RawAdbClient]:
    c = await RawAdbClient.connected(phone.port)
    try:
        yield c
    finally:
        await c.close()


# -- packet level -------------------------------------------------------------------------

@pytest.mark.parametrize("service", ["shell:", "exec:"])
async def test_v1_and_exec_interleave_in_write_order(client: RawAdbClient, service: str) -> None:
    assert await client.run(service + MIXED) == MIXED_MERGED


async def test_v2_packets_follow_write_order_and_end_with_exit(client: RawAdbClient) -> None:
    packets = v2_decode(await client.run("shell,v2,raw:" + MIXED + "; exit 3"))
    assert packets == [(1, b"a\n"), (2, b"ls: /nope: No such file or directory\n"),
                       (1, b"b\n"), (2, b"c\n"), (1, b"d\n"), (3, b"\x03")]


async def test_redirected_stderr_keeps_its_place(client: RawAdbClient) -> None:
    # 2>&1 on a group and on one command: routed as written, not stdout-then-stderr
    out = await client.run("exec:(echo a; echo b >&2; echo c) 2>&1 | cat")
    assert out == b"a\nb\nc\n"
    out = await client.run("exec:ls /nope /sdcard/Download 2>&1 >/dev/null; echo end")
    assert out == b"ls: /nope: No such file or directory\nend\n"


@pytest.mark.parametrize("service", ["shell:", "shell,v2,raw:", "exec:"])
async def test_output_is_sent_while_the_command_runs(client: RawAdbClient, service: str) -> None:
    # The first WRTE holds only what was written before the sleep: it left the phone
    # while the command was still running (a phone would have sent it at once too).
    stream = await client.open(service + "echo first; sleep 0.3; echo second")
    assert stream is not None
    first = await stream.next()
    assert first.command == A_WRTE
    assert first.payload.endswith(b"first\n") and b"second" not in first.payload
    await stream.ack()
    rest = await stream.read_until_close()
    assert b"second\n" in rest
    if service.startswith("shell,v2"):
        assert v2_decode(first.payload + rest)[-1] == (3, b"\x00")


async def test_host_closing_mid_command_leaves_the_phone_serving(client: RawAdbClient) -> None:
    stream = await client.open("shell:echo x; sleep 0.2; echo y")
    assert stream is not None
    packet = await stream.next()
    assert packet.command == A_WRTE
    await stream.close()
    assert await client.run("exec:echo still here") == b"still here\n"
    late = [p for p in stream.pending if p.command not in (A_WRTE, A_CLSE)]
    assert late == []


# -- real clients -------------------------------------------------------------------------

@pytest.fixture(scope="module", params=adb_binary_params())
def rig(request: pytest.FixtureRequest) -> Iterator[tuple[SimFarm, PrivateAdbServer]]:
    if request.param is None:
        pytest.fail("DISTRL_REQUIRE_SYSTEM_ADB=1 but Debian's adb is missing")
    with BackgroundFarm(1, seed=5) as farm, PrivateAdbServer(request.param) as adb:
        adb.connect(farm.phones[0].serial)
        yield farm, adb


@pytest.mark.parametrize(("command", "code", "tail"), [
    ("am start -n com.nope.app/.Missing", 1,
     "Error: Activity class {com.nope.app/com.nope.app.Missing} does not exist.\n"),
    ("ls /nonexistent", 1, "ls: /nonexistent: No such file or directory\n"),
    (MIXED, 0, "b\nc\nd\n"),
    ("echo out; echo err >&2; sh -c 'exit 7'", 7, "out\nerr\n"),
])
def test_adbutils_shell2_parses_exit_codes_after_stderr(
        rig: tuple[SimFarm, PrivateAdbServer], command: str, code: int, tail: str) -> None:
    farm, adb = rig
    dev = adb.client().device(farm.phones[0].serial)
    ret = dev.shell2(command)
    assert ret.returncode == code
    assert ret.output.endswith(tail)


def test_adb_exec_out_and_v1_shell_interleave(rig: tuple[SimFarm, PrivateAdbServer]) -> None:
    farm, adb = rig
    serial = farm.phones[0].serial
    proc = adb.run("-s", serial, "exec-out", MIXED, text=False)
    assert proc.stdout == MIXED_MERGED
    dev = adb.client().device(serial)  # adbutils' shell() opens ``shell:`` (v1, raw)
    assert dev.shell(MIXED, encoding=None, rstrip=False) == MIXED_MERGED


def test_adb_shell_v2_splits_streams_and_keeps_exit(rig: tuple[SimFarm, PrivateAdbServer]) -> None:
    farm, adb = rig
    proc = adb.run("-s", farm.phones[0].serial, "shell", MIXED + "; exit 4", text=False)
    assert proc.returncode == 4
    assert proc.stdout == b"a\nb\nd\n"
    assert proc.stderr == b"ls: /nope: No such file or directory\nc\n"
