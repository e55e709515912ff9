"""``tcp:``/``localabstract:`` device sockets and ``reverse:`` as adbd serves them.

Without a sim-side service the OPEN is refused with a bare CLSE, which the adb server
turns into ``FAIL closed`` (adbutils: ``AdbError('closed')``) exactly as for a phone
whose on-device server (uiautomator2's, Appium's) is not running; with one, the
stream is connected to it.
"""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Iterator

import adbutils
import pytest

from farm.sim.adbd.socket_service import reverse_reply, socket_spec
from farm.sim.adbd.stream import Stream
from farm.sim.adbhost import PrivateAdbServer, free_port
from farm.sim.background import BackgroundFarm
from farm.sim.farm import SimFarm
from farm.sim.phone import SimPhone
from farm.sim.spec import PhoneSpec
from tests.sim.adb_helpers import RawAdbClient, adb_binary_params


async def echo(stream: Stream) -> None:
    while True:
        data = await stream.read_some(65536)
        if not data:
            return
        await stream.write((b"echo:" + data,))


# -- packet level -------------------------------------------------------------------------

@pytest.fixture
async def phone() -> AsyncIterator[SimPhone]:
    p = SimPhone(PhoneSpec(name="sockets"))
    await p.start()
    try:
        yield p
    finally:
        await p.stop()


@pytest.mark.parametrize("service", ["tcp:7912", "tcp:localhost:9008", "localabstract:minitouch",
                                     "localabstract:scrcpy", "localfilesystem:/dev/socket/x",
                                     "tcp:nope", "tcp:70000"])
async def test_nothing_listening_is_a_bare_close(phone: SimPhone, service: str) -> None:
    c = await RawAdbClient.connected(phone.port)
    try:
        assert await c.open(service) is None  # CLSE(0, id) and no OKAY
        assert await c.run("exec:echo ok") == b"ok\n"  # the connection is fine
    finally:
        await c.close()


async def test_a_sim_side_service_gets_the_stream(phone: SimPhone) -> None:
    phone.listen("localabstract:minitouch", echo)
    c = await RawAdbClient.connected(phone.port)
    try:
        stream = await c.open("localabstract:minitouch")
        assert stream is not None
        await stream.write(b"ping")
        assert await stream.read_exactly(9) == b"echo:ping"
    finally:
        await c.close()
    with pytest.raises(ValueError):
        phone.listen("shell:", echo)


def test_socket_names_are_normalised() -> None:
    assert socket_spec("tcp:07912") == "tcp:7912"
    assert socket_spec("tcp:127.0.0.1:5000") == "tcp:5000"
    assert socket_spec("local:x") == "localreserved:x"
    assert socket_spec("tcp:0") is None and socket_spec("shell:ls") is None


class _Table:
    def __init__(self) -> None:
        self.reverse: dict[str, str] = {}
        self.device_serial = "host-19"


def test_reverse_replies_follow_handle_forward_request() -> None:
    t = _Table()
    assert reverse_reply("forward:tcp:8080;tcp:8081", t) == b"OKAY"
    assert reverse_reply("forward:norebind:tcp:8080;tcp:1", t) == (
        b"FAIL001dcannot rebind existing socket")
    assert reverse_reply("forward:tcp:8080", t) == b"FAIL0015bad forward: tcp:8080"
    assert reverse_reply("list-forward", t) == b"001ahost-19 tcp:8080 tcp:8081\n"
    assert reverse_reply("killforward:tcp:1", t) == b"FAIL001alistener 'tcp:1' not found"
    assert reverse_reply("killforward-all", t) == b"OKAY" and t.reverse == {}


# -- real clients -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def farm_rig(request: pytest.FixtureRequest) -> Iterator[tuple[BackgroundFarm, SimFarm]]:
    bg = BackgroundFarm(1, seed=4)
    farm = bg.start()
    try:
        yield bg, farm
    finally:
        bg.stop()


@pytest.fixture(scope="module", params=adb_binary_params())
def adb_rig(request: pytest.FixtureRequest, farm_rig: tuple[BackgroundFarm, SimFarm]
            ) -> Iterator[tuple[BackgroundFarm, SimFarm, PrivateAdbServer]]:
    if request.param is None:
        pytest.fail("DISTRL_REQUIRE_SYSTEM_ADB=1 but Debian's adb is missing")
    bg, farm = farm_rig
    with PrivateAdbServer(request.param) as adb:
        adb.connect(farm.phones[0].serial)
        yield bg, farm, adb


def test_adbutils_create_connection_refused_like_a_phone(
        adb_rig: tuple[BackgroundFarm, SimFarm, PrivateAdbServer]) -> None:
    _, farm, adb = adb_rig
    dev = adb.client().device(farm.phones[0].serial)
    # what uiautomator2 (tcp:9008) and minitouch/scrcpy clients try first
    for network, address in ((adbutils.Network.TCP, 9008),
                             (adbutils.Network.LOCAL_ABSTRACT, "minitouch")):
        with pytest.raises(adbutils.AdbError, match="closed"):
            dev.create_connection(network, address)


def test_adb_forward_to_nothing_gives_eof(
        adb_rig: tuple[BackgroundFarm, SimFarm, PrivateAdbServer]) -> None:
    _, farm, adb = adb_rig
    serial = farm.phones[0].serial
    port = free_port()
    assert adb.run("-s", serial, "forward", f"tcp:{port}", "tcp:4723").returncode == 0
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /status HTTP/1.1\r\n\r\n")
            assert s.recv(100) == b""  # the host closes the forwarded socket: refused
    finally:
        adb.run("-s", serial, "forward", "--remove", f"tcp:{port}")


def test_forward_reaches_a_sim_side_service(
        adb_rig: tuple[BackgroundFarm, SimFarm, PrivateAdbServer]) -> None:
    bg, farm, adb = adb_rig
    phone = farm.phones[0]

    async def listen() -> None:
        phone.listen("tcp:7912", echo)

    bg.call(listen())
    try:
        dev = adb.client().device(phone.serial)
        conn = dev.create_connection(adbutils.Network.TCP, 7912)
        conn.sendall(b"hi")
        deadline = time.monotonic() + 10
        got = b""
        while len(got) < 7 and time.monotonic() < deadline:
            got += conn.recv(100)
        conn.close()
        assert got == b"echo:hi"
    finally:
        async def unlisten() -> None:
            phone.listeners.clear()

        bg.call(unlisten())


def test_adb_reverse_list_forward_and_remove(
        adb_rig: tuple[BackgroundFarm, SimFarm, PrivateAdbServer]) -> None:
    _, farm, adb = adb_rig
    serial = farm.phones[0].serial

    def run(*args: str) -> tuple[int, str, str]:
        r = adb.run("-s", serial, "reverse", *args)
        return r.returncode, str(r.stdout), str(r.stderr)

    assert run("tcp:8080", "tcp:8081")[0] == 0
    code, out, _ = run("tcp:0", "tcp:9000")
    assert code == 0 and out.strip().isdigit()
    code, out, _ = run("--list")
    lines = out.split("\n")
    assert code == 0 and lines[0].split()[1:] == ["tcp:8080", "tcp:8081"]
    assert lines[0].split()[0].startswith("host-")
    assert run("--no-rebind", "tcp:8080", "tcp:1")[2].strip().endswith(
        "cannot rebind existing socket")
    assert run("--remove", "tcp:1")[2].strip().endswith("listener 'tcp:1' not found")
    assert run("--remove-all")[0] == 0
    assert run("--list")[1].strip() == ""
