"""The simulated adbd against a raw packet client: the wire protocol, seam by seam."""

from __future__ import annotations

import asyncio
import hashlib
import struct
from collections.abc import AsyncIterator

import pytest

from farm.sim.adbd import AdbdServer
from farm.sim.adbd.banner import clean_prop, device_banner
from farm.sim.adbd.packets import (
    A_CLSE,
    A_CNXN,
    A_OKAY,
    A_OPEN,
    A_VERSION,
    A_VERSION_MIN,
    A_WRTE,
    HEADER_SIZE,
    MAX_PAYLOAD,
    PacketParser,
    ProtocolError,
    checksum,
    pack_header,
    pack_packet,
)
from farm.sim.faults import FaultKind
from farm.sim.spec import PhoneSpec, ShellResult
from farm.sim.vfs import VirtualFS
from tests.sim.adb_helpers import FakeBackend, RawAdbClient, RawStream

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
async def server(backend: FakeBackend) -> AsyncIterator[AdbdServer]:
    srv = AdbdServer(backend)
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


@pytest.fixture
async def client(server: AdbdServer) -> AsyncIterator[RawAdbClient]:
    c = await RawAdbClient.connected(server.port)
    try:
        yield c
    finally:
        await c.close()


def v2_decode(data: bytes) -> list[tuple[int, bytes]]:
    out = []
    pos = 0
    while pos < len(data):
        ident, length = struct.unpack_from("<BI", data, pos)
        out.append((ident, data[pos + 5 : pos + 5 + length]))
        pos += 5 + length
    assert pos == len(data)
    return out


# -- packets -------------------------------------------------------------------------------

def test_header_layout_and_checksum() -> None:
    raw = pack_packet(A_CNXN, A_VERSION, 4096, b"host::")
    assert len(raw) == HEADER_SIZE + 6
    cmd, a0, a1, length, check, magic = struct.unpack("<6I", raw[:24])
    assert raw[:4] == b"CNXN" and (a0, a1, length) == (A_VERSION, 4096, 6)
    assert check == sum(b"host::") and magic == cmd ^ 0xFFFFFFFF
    big = bytes(range(256)) * 40000
    assert checksum([big, memoryview(b"\x05")]) == (sum(range(256)) * 40000 + 5) & 0xFFFFFFFF


def test_parser_handles_any_split() -> None:
    stream = b"".join(pack_packet(A_WRTE, i, i + 1, bytes([i]) * i) for i in range(1, 40))
    for step in (1, 3, 7, 24, 25, 100, len(stream)):
        parser = PacketParser()
        packets = []
        for i in range(0, len(stream), step):
            packets += parser.feed(stream[i : i + step])
        assert [(p.arg0, p.payload) for p in packets] == [(i, bytes([i]) * i) for i in range(1, 40)]
        assert parser.buffered == 0


def test_parser_ignores_checksum_but_rejects_bad_magic_and_oversize() -> None:
    parser = PacketParser(max_payload=16)
    header = pack_header(A_WRTE, 1, 2, 3, check=12345)  # wrong sum: never checked
    assert parser.feed(header + b"abc")[0].payload == b"abc"
    with pytest.raises(ProtocolError, match="magic"):
        PacketParser().feed(struct.pack("<6I", A_WRTE, 1, 2, 0, 0, 0))
    with pytest.raises(ProtocolError, match="exceeds"):
        parser.feed(pack_header(A_WRTE, 1, 2, 17))  # refused on the header alone


def test_banner_is_sanitised() -> None:
    spec = PhoneSpec(model="Pixel 6: Pro;x=y", product="p", device="d")
    banner = device_banner(spec).decode()
    assert banner.startswith("device::ro.product.name=p;ro.product.model=Pixel 6_ Pro_x_y;")
    assert banner.endswith(";features=shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir")
    assert banner.count(":") == 2
    assert clean_prop("a\nb\x00c") == "a_b_c"


# -- handshake ------------------------------------------------------------------------------

async def test_handshake_banner_version_and_maxdata(server: AdbdServer) -> None:
    c = await RawAdbClient.open_connection(server.port)
    try:
        cnxn = await c.handshake(maxdata=8 << 20)
        assert cnxn.arg0 == 0x01000001 and cnxn.arg1 == MAX_PAYLOAD
        assert cnxn.payload == (b"device::ro.product.name=fakeprod;ro.product.model=Fake Model X;"
                                b"ro.product.device=fakedev;"
                                b"features=shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir")
        assert (await c.handshake(maxdata=4096)).arg1 == 4096  # min(host's, 1 MiB)
    finally:
        await c.close()


async def test_packets_before_cnxn_are_ignored(server: AdbdServer) -> None:
    c = await RawAdbClient.open_connection(server.port)
    try:
        stream = c.new_stream()
        await c.send(A_OPEN, stream.local_id, 0, b"shell:echo hi\0")
        await c.send(A_WRTE, 5, 6, b"junk")
        with pytest.raises(asyncio.TimeoutError):
            await c.next_other(secs=0.2)
        assert stream.queue.empty()
        await c.handshake()
        assert await c.run("shell:echo hi") == b"hi\n"
    finally:
        await c.close()


async def test_second_cnxn_resets_streams(client: RawAdbClient) -> None:
    slow = await client.open("shell:sleep 0.3; echo late")
    assert slow is not None
    cnxn = await client.handshake()
    assert cnxn.command == A_CNXN
    assert await client.run("shell:echo fresh") == b"fresh\n"
    await asyncio.sleep(0.5)
    assert slow.queue.empty()  # the old stream is gone: no output, no CLSE


# -- shell / exec ----------------------------------------------------------------------------

async def test_shell_v1_merges_and_closes(client: RawAdbClient) -> None:
    out = await client.run("shell:echo hi; err oops; false")
    assert out == b"hi\noops\n"


async def test_shell_v2_packets_and_exit_code(client: RawAdbClient) -> None:
    stream = await client.open("shell,v2,TERM=xterm,raw:echo out; err bad")
    assert stream is not None
    await stream.write(b"\x05" + struct.pack("<I", 12) + b"24x80,0x0\0\0\0")  # window size
    await stream.write(b"\x00" + struct.pack("<I", 3) + b"abc")  # stdin, acked and dropped
    await stream.write(b"\x04" + struct.pack("<I", 0))  # close-stdin
    data = await stream.read_until_close()
    assert v2_decode(data) == [(1, b"out\n"), (2, b"bad\n"), (3, b"\x02")]


async def test_shell_v2_false_gives_exit_1(client: RawAdbClient) -> None:
    assert v2_decode(await client.run("shell,v2,raw:false")) == [(3, b"\x01")]
    assert v2_decode(await client.run("shell,v2,pty:")) == [(3, b"\x00")]  # no interactive shell


async def test_exec_is_binary_safe(client: RawAdbClient, backend: FakeBackend) -> None:
    out = await client.run("exec:blob 3000000")
    assert out == backend.blob[:3000000]


@pytest.mark.parametrize("sizes", [[600_000, 700_000, 5], [70_000] * 20, [1, 2, 3] * 50,
                                   [2_000_000, 100, 2_000_000]])
async def test_many_chunks_of_any_size(client: RawAdbClient, backend: FakeBackend,
                                       sizes: list[int]) -> None:
    total = sum(sizes)
    args = " ".join(map(str, sizes))
    assert await client.run(f"exec:blobs {args}") == backend.blob[:total]
    data = await client.run(f"shell,v2:blobs {args}")
    packets = v2_decode(data)
    assert [len(p) for i, p in packets if i == 1] == sizes
    assert b"".join(p for i, p in packets if i == 1) == backend.blob[:total]


async def test_writes_are_chunked_to_maxdata_with_flow_control(server: AdbdServer,
                                                               backend: FakeBackend) -> None:
    c = await RawAdbClient.connected(server.port, maxdata=4096)
    try:
        stream = await c.open("exec:blob 20000")
        assert stream is not None
        first = await stream.next()
        assert first.command == A_WRTE and len(first.payload) == 4096
        with pytest.raises(asyncio.TimeoutError):  # one unacknowledged WRTE per stream
            await stream.next(secs=0.2)
        await stream.ack()
        rest = await stream.read_until_close()
        assert first.payload + rest == backend.blob[:20000]
    finally:
        await c.close()


async def test_old_protocol_version_gets_checksums(server: AdbdServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        async def packet() -> tuple[tuple[int, ...], bytes]:
            head = struct.unpack("<6I", await reader.readexactly(24))
            return head, await reader.readexactly(head[3])

        writer.write(pack_packet(A_CNXN, A_VERSION_MIN, 4096, b"host::"))
        head, banner = await packet()
        assert head[0] == A_CNXN and head[4] == sum(banner)
        writer.write(pack_packet(A_OPEN, 7, 0, b"shell:echo sum\0"))
        head, _ = await packet()
        assert head[0] == A_OKAY
        head, data = await packet()
        assert head[0] == A_WRTE and data == b"sum\n" and head[4] == sum(b"sum\n")
    finally:
        writer.close()


async def test_streamed_install_reads_exactly_n_bytes(client: RawAdbClient,
                                                      backend: FakeBackend) -> None:
    apk = bytes(range(256)) * 1200  # 307200 bytes: several WRTEs
    stream = await client.open(f"exec:cmd package 'install' '-r' -S {len(apk)}")
    assert stream is not None
    await stream.write_all(apk)
    # no host close: the device answers and closes on its own
    assert await stream.read_until_close() == b"Success\n"
    assert backend.installs == [(apk, ["-r", "-S", str(len(apk))])]


async def test_install_too_big_fails_without_reading(client: RawAdbClient) -> None:
    out = await client.run("exec:cmd package install -S 99999999999")
    assert out.startswith(b"Failure [INSTALL_FAILED_INSUFFICIENT_STORAGE")


async def test_host_close_stops_output(client: RawAdbClient) -> None:
    stream = await client.open("exec:blob 8000000")
    assert stream is not None
    first = await stream.next()
    assert first.command == A_WRTE
    await stream.close()
    await stream.ack()  # a late OKAY for a closed stream is ignored
    with pytest.raises(asyncio.TimeoutError):
        await stream.next(secs=0.3)
    assert await client.run("shell:echo still") == b"still\n"


# -- small services --------------------------------------------------------------------------

@pytest.mark.parametrize(("service", "reply"), [
    ("root:", b"adbd is already running as root\n"),
    ("unroot:", b"adbd not running as root\n"),
    ("tcpip:5555", b"restarting in TCP mode port: 5555\n"),
    ("usb:", b"restarting in USB mode\n"),
    ("reboot:", b""),
    ("reboot:bootloader", b""),
])
async def test_small_services(client: RawAdbClient, service: str, reply: bytes) -> None:
    assert await client.run(service) == reply


async def test_framebuffer_v2_header(client: RawAdbClient, backend: FakeBackend) -> None:
    out = await client.run("framebuffer:")
    head = struct.unpack("<14I", out[:56])
    assert head == (2, 32, 1, 48, 4, 3, 0, 8, 16, 8, 8, 8, 24, 8)
    assert out[56:] == backend.frame[2]


@pytest.mark.parametrize("service", ["bogus:", "shell", "jdwp:1", "", "\xff\xfe:x", "a" * 60000])
async def test_unknown_services_are_refused(client: RawAdbClient, service: str) -> None:
    assert await client.open(service) is None
    assert await client.run("shell:echo ok") == b"ok\n"


async def test_huge_service_string(client: RawAdbClient, backend: FakeBackend) -> None:
    out = await client.run("shell:echo " + "x" * 900_000)
    assert out == b"x" * 900_000 + b"\n"


# -- sync --------------------------------------------------------------------------------

def req(ident: bytes, path: bytes | str) -> bytes:
    raw = path.encode() if isinstance(path, str) else path
    return ident + struct.pack("<I", len(raw)) + raw


async def sync_reply(stream: RawStream, n: int) -> bytes:
    data = await stream.read_exactly(n)
    assert len(data) == n, data
    return data


async def test_sync_stat_variants(client: RawAdbClient, backend: FakeBackend) -> None:
    backend.vfs.write("/sdcard/a.txt", b"hello", mtime=1_700_000_000)
    s = await client.open("sync:")
    assert s is not None
    await s.write(req(b"STAT", "/sdcard/a.txt") + req(b"STAT", "/nope"))
    data = await sync_reply(s, 32)
    assert struct.unpack("<4sIII", data[:16]) == (b"STAT", 0o100644, 5, 1_700_000_000)
    assert data[16:] == b"STAT" + bytes(12)
    await s.write(req(b"STA2", "/sdcard/a.txt"))
    st2 = struct.unpack("<4sIQQIIIIQqqq", await sync_reply(s, 72))
    assert st2[0] == b"STA2" and st2[1] == 0 and st2[4] == 0o100644 and st2[8] == 5
    assert st2[10] == 1_700_000_000
    await s.write(req(b"LST2", "/missing"))
    lst = struct.unpack("<4sIQQIIIIQqqq", await sync_reply(s, 72))
    assert lst[:2] == (b"LST2", 2)
    await s.write(req(b"STA2", "/sdcard"))
    assert struct.unpack("<4sIQQIIIIQqqq", await sync_reply(s, 72))[4] == 0o040755
    await s.write(req(b"QUIT", b""))
    assert (await s.next()).command == A_CLSE


async def test_sync_list_v1_and_v2(client: RawAdbClient, backend: FakeBackend) -> None:
    backend.vfs.write("/sdcard/d/one", b"1", make_parents=True)
    backend.vfs.write("/sdcard/d/two", b"22")
    backend.vfs.mkdir("/sdcard/d/sub")
    s = await client.open("sync:")
    assert s is not None
    await s.write(req(b"LIST", "/sdcard/d"))
    names = []
    buf = b""
    while not buf.endswith(b"DONE" + bytes(16)):
        buf += await s.read_exactly(1)
    pos = 0
    while buf[pos : pos + 4] == b"DENT":
        _, mode, size, _mtime, namelen = struct.unpack_from("<4sIIII", buf, pos)
        names.append((buf[pos + 20 : pos + 20 + namelen].decode(), mode, size))
        pos += 20 + namelen
    assert buf[pos:] == b"DONE" + bytes(16)
    assert names == [("one", 0o100644, 1), ("sub", 0o040755, 4096), ("two", 0o100644, 2)]
    await s.write(req(b"LIS2", "/sdcard/d"))
    buf = b""
    while not buf.endswith(b"DONE" + bytes(72)):
        buf += await s.read_exactly(1)
    assert buf.count(b"DNT2") == 3 and len(buf) == 3 * 76 + 3 + 3 + 3 + 76
    await s.write(req(b"LIST", "/does/not/exist"))
    assert await s.read_exactly(20) == b"DONE" + bytes(16)
    await s.close()  # adbutils style: no QUIT


async def test_sync_send_then_recv_roundtrip(client: RawAdbClient, backend: FakeBackend) -> None:
    payload = backend.blob[:300_000]
    body = bytearray(req(b"SEND", "/sdcard/new/dir/f.bin,33188"))
    for i in range(0, len(payload), 65536):
        chunk = payload[i : i + 65536]
        body += b"DATA" + struct.pack("<I", len(chunk)) + chunk
    body += b"DONE" + struct.pack("<I", 1_600_000_000)
    s = await client.open("sync:")
    assert s is not None
    for i in range(0, len(body), 7777):  # frames straddle WRTEs
        await s.write(bytes(body[i : i + 7777]))
    assert await s.read_exactly(8) == b"OKAY" + bytes(4)
    st = backend.vfs.stat("/sdcard/new/dir/f.bin")
    assert st is not None and st.size == len(payload) and st.mtime == 1_600_000_000
    assert backend.vfs.read("/sdcard/new/dir/f.bin") == payload

    await s.write(req(b"RECV", "/sdcard/new/dir/f.bin"))
    out = bytearray()
    buf = b""
    while True:
        while len(buf) < 8:
            buf += (await s.next()).payload
            await s.ack()
        ident, n = struct.unpack("<4sI", buf[:8])
        if ident == b"DONE":
            assert buf == b"DONE" + bytes(4)
            break
        assert ident == b"DATA" and n <= 65536
        while len(buf) < 8 + n:
            buf += (await s.next()).payload
            await s.ack()
        out += buf[8 : 8 + n]
        buf = buf[8 + n :]
    assert hashlib.sha256(out).digest() == hashlib.sha256(payload).digest()
    await s.write(req(b"QUIT", b""))
    assert (await s.next()).command == A_CLSE


@pytest.mark.parametrize(("body", "message"), [
    (req(b"RECV", "/nope"), b"open failed: No such file or directory"),
    (req(b"RECV", "/sdcard"), b"open failed: Is a directory"),
    (b"STAT" + struct.pack("<I", 5000) + b"x" * 5000, b"path too long"),
    (b"STAT" + struct.pack("<I", 0xFFFFFFFF), b"path too long"),
    (req(b"SEND", "/sdcard/x,33188") + b"DATA" + struct.pack("<I", 0x7FFFFFFF),
     b"oversize data message"),
    (req(b"SEND", "/sdcard/x,33188") + b"WHAT" + bytes(4), b"invalid data message"),
    (req(b"SEND", "/sdcard,33188") + b"DONE" + bytes(4), b"couldn't create file: Is a directory"),
    (req(b"NOPE", "/"), b"unknown command"),
])
async def test_sync_errors_fail_then_close(client: RawAdbClient, body: bytes,
                                           message: bytes) -> None:
    s = await client.open("sync:")
    assert s is not None
    await s.write(body)
    data = await s.read_until_close()
    assert data[:4] == b"FAIL"
    (length,) = struct.unpack_from("<I", data, 4)
    assert data[8:] .startswith(message) and len(data) == 8 + length
    assert await client.run("shell:echo alive") == b"alive\n"


async def test_sync_send_enospc() -> None:
    backend = FakeBackend(vfs=VirtualFS(capacity=100_000))
    async with AdbdServer(backend) as srv:
        c = await RawAdbClient.connected(srv.port)
        try:
            s = await c.open("sync:")
            assert s is not None
            await s.write(req(b"SEND", "/sdcard/big,33188"))
            for _ in range(3):
                await s.write(b"DATA" + struct.pack("<I", 65536) + bytes(65536))
            await s.write(b"DONE" + bytes(4))
            data = await s.read_until_close()
            assert data.startswith(b"FAIL") and b"No space left on device" in data
            assert not backend.vfs.exists("/sdcard/big")
        finally:
            await c.close()


# -- robustness -------------------------------------------------------------------------------

@pytest.mark.parametrize("garbage", [
    struct.pack("<6I", A_OPEN, 1, 0, 0, 0, 0),  # bad magic
    pack_header(A_WRTE, 1, 1, 64 << 20),  # oversize: dropped on the header
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    bytes(range(256)) * 4,
])
async def test_malformed_input_drops_only_that_connection(server: AdbdServer,
                                                          client: RawAdbClient,
                                                          garbage: bytes) -> None:
    bad = await RawAdbClient.connected(server.port, maxdata=4096)
    try:
        await bad.send_raw(garbage)
        await bad.wait_closed()
    finally:
        await bad.close()
    assert await client.run("shell:echo fine") == b"fine\n"
    c2 = await RawAdbClient.connected(server.port)
    await c2.close()


async def test_oversize_after_negotiation_drops(server: AdbdServer) -> None:
    c = await RawAdbClient.connected(server.port, maxdata=4096)
    try:
        await c.send(A_WRTE, 1, 1, bytes(4097))  # more than the maxdata we agreed
        await c.wait_closed()
    finally:
        await c.close()


async def test_many_concurrent_streams_with_a_big_transfer(client: RawAdbClient,
                                                           backend: FakeBackend) -> None:
    size = 10 * 1024 * 1024

    async def shell(i: int) -> bytes:
        return await client.run(f"shell:echo n{i}")

    async def pull() -> bytes:
        s = await client.open("sync:")
        assert s is not None
        await s.write(req(b"RECV", "/sdcard/big.bin"))
        data = await s.read_exactly(size + 8 * (size // 65536) + 8)
        await s.close()
        return data

    backend.vfs.write("/sdcard/big.bin", backend.blob[:size])
    results = await asyncio.gather(client.run("exec:blob " + str(size)), pull(),
                                   *(shell(i) for i in range(50)))
    assert hashlib.sha256(results[0]).digest() == hashlib.sha256(backend.blob[:size]).digest()
    pulled = results[1]
    body = b"".join(pulled[i + 8 : i + 8 + 65536] for i in range(0, size // 65536 * 65544, 65544))
    assert body == backend.blob[:size] and pulled.endswith(b"DONE" + bytes(4))
    assert list(results[2:]) == [f"n{i}\n".encode() for i in range(50)]


async def test_many_connections(server: AdbdServer) -> None:
    clients = await asyncio.gather(*(RawAdbClient.connected(server.port) for _ in range(20)))
    try:
        outs = await asyncio.gather(*(c.run(f"shell:echo c{i}") for i, c in enumerate(clients)))
        assert outs == [f"c{i}\n".encode() for i in range(20)]
    finally:
        await asyncio.gather(*(c.close() for c in clients))


# -- faults ---------------------------------------------------------------------------------

async def test_hang_holds_everything_then_resumes(server: AdbdServer, client: RawAdbClient,
                                                  backend: FakeBackend) -> None:
    backend.faults.apply(FaultKind.HANG, seconds=0.6)
    stream = client.new_stream()
    await client.send(A_OPEN, stream.local_id, 0, b"shell:echo after\0")
    with pytest.raises(asyncio.TimeoutError):
        await stream.next(secs=0.3)
    assert server.connection_count == 1  # TCP stays up
    okay = await stream.next(secs=2)
    assert okay.command == A_OKAY
    stream.remote_id = okay.arg0
    assert await stream.read_until_close() == b"after\n"


async def test_hang_cleared_early(client: RawAdbClient, backend: FakeBackend) -> None:
    backend.faults.apply(FaultKind.HANG, seconds=60)
    task = asyncio.create_task(client.run("shell:echo x"))
    await asyncio.sleep(0.2)
    assert not task.done()
    backend.faults.clear()
    assert await asyncio.wait_for(task, 2) == b"x\n"


async def test_disconnect_drops_and_refuses(server: AdbdServer, client: RawAdbClient,
                                            backend: FakeBackend) -> None:
    backend.faults.apply(FaultKind.DISCONNECT, seconds=60)
    await client.wait_closed(secs=1)
    late = await RawAdbClient.open_connection(server.port)
    try:
        await late.send(A_CNXN, A_VERSION, 4096, b"host::")
        await late.wait_closed(secs=1)
        assert late.other.empty()
    finally:
        await late.close()
    backend.faults.clear()
    c = await RawAdbClient.connected(server.port)
    try:
        assert await c.run("shell:echo back") == b"back\n"
    finally:
        await c.close()


async def test_stop_leaves_no_tasks(backend: FakeBackend) -> None:
    srv = AdbdServer(backend)
    await srv.start()
    c = await RawAdbClient.connected(srv.port)
    slow = await c.open("shell:sleep 30")
    assert slow is not None
    before = asyncio.all_tasks()
    await srv.stop()
    await c.wait_closed()
    await c.close()
    leftover = [t for t in asyncio.all_tasks() - before if not t.done()]
    assert leftover == []
    assert [t for t in before if not t.done() and t is not asyncio.current_task()] == []
    assert srv.connection_count == 0
    assert backend.faults.on_disconnect == []
    with pytest.raises(RuntimeError):
        _ = srv.port


async def test_backend_crash_becomes_exit_255(client: RawAdbClient, backend: FakeBackend,
                                              caplog: pytest.LogCaptureFixture) -> None:
    async def boom(command: str, stdin: bytes = b"",
                   result: ShellResult | None = None) -> ShellResult:
        raise RuntimeError("kaput")

    backend.run_shell = boom  # type: ignore[method-assign]
    out = v2_decode(await client.run("shell,v2:anything"))
    assert out[-1] == (3, b"\xff") and b"kaput" in out[0][1]
    assert b"kaput" in await client.run("exec:anything")


async def test_restart_keeps_port(backend: FakeBackend) -> None:
    srv = AdbdServer(backend)
    await srv.start()
    port = srv.port
    await srv.stop()
    await srv.start()
    try:
        assert srv.port == port
        c = await RawAdbClient.connected(port)
        assert await c.run("shell:echo again") == b"again\n"
        await c.close()
    finally:
        await srv.stop()


async def test_fuzzed_packets_never_break_the_server(server: AdbdServer, client: RawAdbClient,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    """Well-framed but random packets (and random sync/shell bytes inside streams)."""
    import random

    rng = random.Random(1234)
    commands = [A_CNXN, A_OPEN, A_OKAY, A_WRTE, A_CLSE, 0x434E5953, 0x48545541, 0x12345678]
    services = [b"sync:\0", b"shell,v2:echo f\0", b"exec:blob 100\0", b"framebuffer:\0",
                b"exec:cmd package install -S 50\0", b"nope\0"]
    for round_ in range(30):
        fuzz = await RawAdbClient.connected(server.port, maxdata=4096)
        try:
            for _ in range(60):
                cmd = rng.choice(commands)
                if cmd == A_OPEN:
                    payload = rng.choice(services)
                elif cmd == A_WRTE:
                    payload = rng.choice([b"STAT", b"SEND", b"RECV", b"LIS2", b"DATA", b"\x00",
                                          b"\x04", b"QUIT"]) + rng.randbytes(rng.randrange(12))
                else:
                    payload = rng.randbytes(rng.randrange(8))
                arg0 = rng.choice([0, 1, 2, 100, 101, rng.getrandbits(32)])
                arg1 = rng.choice([0, 1, 2, 3, rng.getrandbits(32)])
                if cmd == A_CNXN:
                    arg1 = rng.choice([0, 1, 4096, 1 << 30])
                await fuzz.send(cmd, arg0, arg1, payload)
            await asyncio.sleep(0)
        finally:
            await fuzz.close()
        assert await client.run(f"shell:echo r{round_}") == f"r{round_}\n".encode()
    await asyncio.sleep(0.1)
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
