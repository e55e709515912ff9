"""The simulated adbd driven by the real programs: adb 29 (Debian), adb 36 (adbutils'
wheel) and adbutils 2.x, each through a private adb server on a port of its own."""

from __future__ import annotations

import hashlib
import os
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from farm.sim.faults import FaultKind
from tests.sim.adb_helpers import (
    FakeBackend,
    PrivateAdb,
    ThreadedAdbd,
    adb_binary_params,
    adbd_in_thread,
    private_adb_server,
)

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module", params=adb_binary_params())
def adb(request: pytest.FixtureRequest) -> Iterator[PrivateAdb]:
    with private_adb_server(request.param) as server:
        yield server


@pytest.fixture(scope="module")
def phone(adb: PrivateAdb) -> Iterator[ThreadedAdbd]:
    with adbd_in_thread(FakeBackend()) as p:
        adb.connect(p.serial)
        yield p
        adb.run("disconnect", p.serial)


@pytest.fixture
def spare_phone(adb: PrivateAdb) -> Iterator[ThreadedAdbd]:
    """A phone of its own for tests that break it."""
    with adbd_in_thread(FakeBackend()) as p:
        yield p
        p.backend.faults.clear()
    adb.run("disconnect", p.serial)


def test_connect_and_devices_l(adb: PrivateAdb, phone: ThreadedAdbd) -> None:
    assert "already connected" in adb.text("connect", phone.serial)
    line = next(ln for ln in adb.text("devices", "-l").splitlines()
                if ln.startswith(phone.serial))
    assert " device " in line
    assert "product:fakeprod" in line and "model:Fake_Model_X" in line
    assert "device:fakedev" in line
    features = adb.text("-s", phone.serial, "features").split()
    assert set(features) == {"shell_v2", "cmd", "stat_v2", "ls_v2", "fixed_push_mkdir"}


def test_shell_exit_codes_and_output(adb: PrivateAdb, phone: ThreadedAdbd) -> None:
    ok = adb.run("-s", phone.serial, "shell", "echo", "hi")
    assert (ok.returncode, ok.stdout) == (0, b"hi\n")
    assert adb.run("-s", phone.serial, "shell", "false").returncode == 1
    assert adb.run("-s", phone.serial, "shell", "exit", "42").returncode == 42
    err = adb.run("-s", phone.serial, "shell", "err", "to-stderr")
    assert (err.returncode, err.stdout, err.stderr) == (2, b"", b"to-stderr\n")
    v1 = adb.run("-s", phone.serial, "shell", "-x", "echo", "v1")  # -x: plain shell: service
    assert v1.stdout == b"v1\n"


def test_exec_out_binary_intact(adb: PrivateAdb, phone: ThreadedAdbd) -> None:
    size = 5_000_000
    proc = adb.run("-s", phone.serial, "exec-out", "blob", str(size))
    assert proc.returncode == 0
    assert hashlib.sha256(proc.stdout).digest() == hashlib.sha256(
        phone.backend.blob[:size]).digest()


def test_exec_out_10mb_sim_cpu(adb: PrivateAdb, phone: ThreadedAdbd) -> None:
    size = 10 * 1024 * 1024
    adb.run("-s", phone.serial, "exec-out", "blob", "1")  # warm up
    best = float("inf")
    for _ in range(3):
        cpu0 = phone.cpu_time()
        proc = adb.run("-s", phone.serial, "exec-out", "blob", str(size))
        best = min(best, phone.cpu_time() - cpu0)
        assert len(proc.stdout) == size
    print(f"sim CPU for a 10 MiB exec-out: {best * 1000:.1f} ms")
    assert best < 0.05  # generous for noisy CI machines


def test_push_pull_roundtrip(adb: PrivateAdb, phone: ThreadedAdbd, tmp_path: Path) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)
    src = tmp_path / "up.bin"
    src.write_bytes(data)
    push = adb.run("-s", phone.serial, "push", str(src), "/sdcard/Download/")
    assert push.returncode == 0, push.stderr
    assert phone.backend.vfs.read("/sdcard/Download/up.bin") == data
    dst = tmp_path / "down.bin"
    pull = adb.run("-s", phone.serial, "pull", "/sdcard/Download/up.bin", str(dst))
    assert pull.returncode == 0, pull.stderr
    assert hashlib.sha256(dst.read_bytes()).hexdigest() == hashlib.sha256(data).hexdigest()
    # into a directory that does not exist yet (fixed_push_mkdir: SEND makes parents)
    assert adb.run("-s", phone.serial, "push", str(src), "/sdcard/new/deep/x.bin").returncode == 0
    assert phone.backend.vfs.stat("/sdcard/new/deep/x.bin") is not None
    # whole directories: one SEND per file, then a recursive pull (LIS2 walk)
    tree = tmp_path / "tree"
    (tree / "sub" / "deeper").mkdir(parents=True)
    files = {"a.txt": b"A" * 10, "sub/b.bin": os.urandom(70_000), "sub/deeper/c": b""}
    for rel, content in files.items():
        (tree / rel).write_bytes(content)
    phone.backend.vfs.mkdir("/sdcard/trees", parents=True)  # exists: push copies *into* it
    assert adb.run("-s", phone.serial, "push", str(tree), "/sdcard/trees/").returncode == 0
    for rel, content in files.items():
        assert phone.backend.vfs.read(f"/sdcard/trees/tree/{rel}") == content
    back = tmp_path / "back"
    back.mkdir()
    pulled = adb.run("-s", phone.serial, "pull", "/sdcard/trees/tree", str(back))
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    for rel, content in files.items():
        assert (back / "tree" / rel).read_bytes() == content
    missing = adb.run("-s", phone.serial, "pull", "/sdcard/nope.bin", str(dst))
    assert missing.returncode != 0
    msg = missing.stdout + missing.stderr
    assert b"does not exist" in msg or b"No such file" in msg


def test_install_streams_the_apk(adb: PrivateAdb, phone: ThreadedAdbd, tmp_path: Path) -> None:
    apk = tmp_path / "tiny.apk"
    apk.write_bytes(b"PK\x03\x04" + os.urandom(200_000))
    proc = adb.run("-s", phone.serial, "install", "-r", str(apk), timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert b"Success" in proc.stdout
    data, args = phone.backend.installs[-1]
    assert data == apk.read_bytes()
    assert "-S" in args and "-r" in args


def test_root_and_ls(adb: PrivateAdb, phone: ThreadedAdbd) -> None:
    root = adb.run("-s", phone.serial, "root", timeout=20)
    assert root.returncode == 0
    assert b"already running as root" in root.stdout + root.stderr
    phone.backend.vfs.write("/sdcard/Pictures/p.png", b"123", mtime=1_700_000_000)
    ls = adb.text("-s", phone.serial, "ls", "/sdcard/Pictures")
    assert "p.png" in ls
    assert adb.state(phone.serial) == "device"


def test_adbutils_shell_and_sync(adb: PrivateAdb, phone: ThreadedAdbd, tmp_path: Path) -> None:
    d = adb.client().device(phone.serial)
    assert d.shell("echo hello") == "hello"
    assert d.shell(["echo", "a  b"]) == "a  b"  # list args arrive shlex-quoted
    r1 = d.shell2("false")
    assert r1.returncode == 1
    r2 = d.shell2("echo out; err bad", v2=True)
    assert (r2.returncode, r2.stdout, r2.stderr) == (2, "out\n", "bad\n")
    assert d.shell2("exit 7", v2=True).returncode == 7

    payload = os.urandom(500_000)
    assert d.sync.push(payload, "/data/local/tmp/a.bin") == len(payload)
    st = d.sync.stat("/data/local/tmp/a.bin")
    assert st.size == len(payload) and st.mode & 0o170000 == 0o100000
    assert not d.sync.exists("/data/local/tmp/none")
    assert d.sync.read_bytes("/data/local/tmp/a.bin") == payload
    out = tmp_path / "a.bin"
    assert d.sync.pull("/data/local/tmp/a.bin", out) == len(payload)
    assert out.read_bytes() == payload
    names = [f.path for f in d.sync.list("/data/local/tmp")]
    assert "a.bin" in names
    # push into a directory: adbutils stats it and appends the name
    src = tmp_path / "named.txt"
    src.write_bytes(b"x")
    d.sync.push(str(src), "/sdcard/Download")
    assert phone.backend.vfs.read("/sdcard/Download/named.txt") == b"x"
    assert d.root() == "adbd is already running as root\n"
    assert d.tcpip(5555) == "restarting in TCP mode port: 5555\n"
    w, h, pixels = phone.backend.frame
    img = d.framebuffer()
    assert img.size == (w, h) and img.tobytes() == pixels


def _track(client: Any, events: queue.Queue[Any]) -> None:
    try:
        for event in client.track_devices():
            events.put(event)
    except Exception as exc:  # the adb server went away, or the socket timed out
        events.put(exc)


def _wait_event(events: queue.Queue[Any], serial: str, statuses: set[str],
                timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no {statuses} event for {serial}")
        try:
            event = events.get(timeout=left)
        except queue.Empty:
            continue
        if isinstance(event, Exception):
            raise event
        if event.serial == serial and event.status in statuses:
            return event


@pytest.mark.slow
def test_track_devices_sees_phone_come_and_go(adb: PrivateAdb,
                                              spare_phone: ThreadedAdbd) -> None:
    events: queue.Queue[Any] = queue.Queue()
    threading.Thread(target=_track, args=(adb.client(socket_timeout=60), events),
                     daemon=True).start()
    time.sleep(0.2)
    serial = spare_phone.serial
    adb.connect(serial)
    assert _wait_event(events, serial, {"device"}).present
    spare_phone.stop()
    if adb.major_version >= 30:
        gone = _wait_event(events, serial, {"offline", "absent"})
        assert gone.status in ("offline", "absent")
        return
    # adb 29 pushes no track-devices update when an `adb connect` transport drops: it keeps
    # the serial, offline, while it redials (checked: nothing arrives for 25 s). Polling
    # sees it offline, and removing it shows up in the stream.
    assert adb.wait_state(serial, "offline", timeout=5) == "offline"
    adb.run("disconnect", serial)
    assert not _wait_event(events, serial, {"absent"}).present


@pytest.mark.slow
def test_disconnect_fault_goes_offline(adb: PrivateAdb, spare_phone: ThreadedAdbd) -> None:
    adb.connect(spare_phone.serial)
    spare_phone.backend.faults.apply(FaultKind.DISCONNECT, seconds=30)  # from another thread
    assert adb.wait_state(spare_phone.serial, "offline", timeout=5) == "offline"
    assert spare_phone.server.connection_count == 0
    failed = adb.run("-s", spare_phone.serial, "shell", "echo", "x")
    assert failed.returncode != 0


@pytest.mark.slow
def test_hang_fault_times_out_while_other_phone_answers(adb: PrivateAdb, phone: ThreadedAdbd,
                                                        spare_phone: ThreadedAdbd) -> None:
    import adbutils

    adb.connect(spare_phone.serial)
    client = adb.client()
    hung = client.device(spare_phone.serial)
    healthy = client.device(phone.serial)
    assert hung.shell("echo pre") == "pre"
    spare_phone.backend.faults.apply(FaultKind.HANG, seconds=30)
    outcome: queue.Queue[Any] = queue.Queue()

    def call_hung() -> None:
        try:
            outcome.put(hung.shell2("echo never", timeout=1.5, v2=True))
        except Exception as exc:
            outcome.put(exc)

    t = threading.Thread(target=call_hung, daemon=True)
    t.start()
    time.sleep(0.2)
    t0 = time.monotonic()
    assert healthy.shell("echo alive") == "alive"
    assert time.monotonic() - t0 < 1.0
    assert t.is_alive()
    result = outcome.get(timeout=10)
    assert isinstance(result, adbutils.AdbTimeout), result
    assert adb.state(spare_phone.serial) == "device"  # TCP stays up while hung
    spare_phone.backend.faults.clear()
    assert hung.shell("echo post", timeout=5) == "post"
