"""APK install: pm install from the vfs, streamed installs, sessions, failures."""

from __future__ import annotations

import io
import re
import struct
import zipfile

import pytest

from farm.sim.shell import ApkError, build_test_apk, parse_apk
from tests.sim.shell_fixtures import Rig, make_rig


@pytest.fixture
def rig() -> Rig:
    return make_rig()


def _axml(strings: list[str], attrs: list[tuple[int, int]]) -> bytes:
    """A minimal binary manifest: string pool + one <manifest> start element."""
    data = b""
    offsets = []
    for s in strings:
        offsets.append(len(data))
        data += struct.pack("<H", len(s)) + s.encode("utf-16-le") + b"\x00\x00"
    data += b"\x00" * (-len(data) % 4)
    header = 28
    start = header + 4 * len(strings)
    pool = struct.pack("<HHIIIIII", 0x0001, header, start + len(data), len(strings), 0, 0,
                       start, 0) + struct.pack(f"<{len(strings)}I", *offsets) + data
    attr_bytes = b"".join(struct.pack("<IIIHBBI", 0xFFFFFFFF, name, raw, 8, 0, 3, raw)
                          for name, raw in attrs)
    elem_body = struct.pack("<IIIIHHHHHH", 1, 0xFFFFFFFF, 0xFFFFFFFF, strings.index("manifest"),
                            20, 20, len(attrs), 0, 0, 0) + attr_bytes
    elem = struct.pack("<HHI", 0x0102, 16, 8 + len(elem_body)) + elem_body
    body = pool + elem
    return struct.pack("<HHI", 0x0003, 8, 8 + len(body)) + body


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            # a fixed timestamp: the bytes (and so the test ids) must not depend on the
            # clock, or pytest-xdist workers collecting a second apart disagree
            z.writestr(zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0)), data)
    return buf.getvalue()


def test_build_test_apk_is_deterministic_and_parses() -> None:
    apk = build_test_apk("com.example.notes", "Notes")
    assert apk == build_test_apk("com.example.notes", "Notes")
    info = parse_apk(apk, "/x/base.apk")
    assert (info.package, info.label) == ("com.example.notes", "Notes")
    assert info.launcher_activity == "com.example.notes.MainActivity"


def test_binary_manifest_package_is_read() -> None:
    strings = ["manifest", "package", "com.example.binary", "versionName", "2.5"]
    manifest = _axml(strings, [(1, 2), (3, 4)])
    info = parse_apk(_zip({"AndroidManifest.xml": manifest}), "/x/base.apk")
    assert (info.package, info.version_name) == ("com.example.binary", "2.5")


@pytest.mark.parametrize(("data", "code"), [
    (b"not a zip at all", "INSTALL_PARSE_FAILED_NOT_APK"),
    (b"", "INSTALL_PARSE_FAILED_NOT_APK"),
    (_zip({"classes.dex": b"dex"}), "INSTALL_PARSE_FAILED_BAD_MANIFEST"),
    (_zip({"AndroidManifest.xml": b"<manifest/>"}), "INSTALL_PARSE_FAILED_MANIFEST_MALFORMED"),
    (_zip({"AndroidManifest.xml": b'<manifest package="nodots"/>'}),
     "INSTALL_PARSE_FAILED_MANIFEST_MALFORMED"),
    (_zip({"AndroidManifest.xml": b"\x03\x00\x08\x00garbage"}),
     "INSTALL_PARSE_FAILED_MANIFEST_MALFORMED"),
])
def test_bad_apks(data: bytes, code: str) -> None:
    with pytest.raises(ApkError) as e:
        parse_apk(data, "/data/app/vmdl1.tmp/base.apk")
    assert e.value.code == code


async def test_pm_install_from_vfs(rig: Rig) -> None:
    rig.vfs.write("/data/local/tmp/notes.apk", build_test_apk("com.example.notes", "Notes"))
    r = await rig.run("pm install -r -t -g /data/local/tmp/notes.apk")
    assert (r.stdout_bytes, r.exit_code) == (b"Success\n", 0)
    assert "package:com.example.notes\n" in await rig.out("pm list packages -3")
    path = (await rig.out("pm path com.example.notes")).strip()
    assert re.fullmatch(r"package:/data/app/~~[\w=-]+/com\.example\.notes-[\w=-]+/base\.apk", path)
    assert rig.vfs.exists(path.removeprefix("package:"))
    # reinstall replaces the old copy
    r = await rig.run("pm 'install' '/data/local/tmp/notes.apk'")
    assert r.stdout_bytes == b"Success\n"
    assert len([f for f in rig.vfs.walk_files("/data/app") if "notes" in f]) == 1
    assert await rig.out("pm uninstall com.example.notes") == "Success\n"
    assert await rig.out("pm list packages -3") == ""
    assert not any("notes" in f for f in rig.vfs.walk_files("/data/app"))
    r = await rig.run("pm uninstall com.example.notes")
    assert (r.stdout_bytes, r.exit_code) == (b"Failure [DELETE_FAILED_INTERNAL_ERROR]\n", 1)


async def test_pm_install_failures(rig: Rig) -> None:
    rig.vfs.write("/data/local/tmp/bad.apk", b"garbage")
    r = await rig.run("pm install /data/local/tmp/bad.apk")
    assert r.exit_code == 1
    assert re.fullmatch(
        rb"Failure \[INSTALL_PARSE_FAILED_NOT_APK: Failed to parse /data/app/vmdl\d+\.tmp/"
        rb"base\.apk: Failed to load asset path /data/app/vmdl\d+\.tmp/base\.apk\]\n",
        r.stdout_bytes)
    r = await rig.run("pm install /data/local/tmp/missing.apk")
    assert r.exit_code != 0 and b"Can't open file" in r.stderr_bytes
    rig.vfs.write("/data/local/tmp/sys.apk", build_test_apk("com.android.settings", "X"))
    r = await rig.run("pm install /data/local/tmp/sys.apk")
    assert r.stdout_bytes.startswith(b"Failure [INSTALL_FAILED_UPDATE_INCOMPATIBLE")


async def test_streamed_install(rig: Rig) -> None:
    apk = build_test_apk("com.example.stream", "Stream")
    assert await rig.shell.install_apk_bytes(apk, ["-S", str(len(apk))]) == "Success\n"
    assert "package:com.example.stream\n" in await rig.out("pm list packages")
    status = await rig.shell.install_apk_bytes(b"PK\x03\x04broken", ["-S", "10"])
    assert status.startswith("Failure [INSTALL_PARSE_FAILED_NOT_APK: ") and status.endswith("]\n")
    # the same path through the shell, with stdin
    apk2 = build_test_apk("com.example.stdin")
    r = await rig.run(f"cmd package 'install' -S {len(apk2)}", stdin=apk2)
    assert r.stdout_bytes == b"Success\n"


async def test_install_sessions(rig: Rig) -> None:
    out = await rig.out("pm install-create -S 100")
    sid = re.fullmatch(r"Success: created install session \[(\d+)\]\n", out)
    assert sid
    apk = build_test_apk("com.example.multi")
    r = await rig.run(f"pm install-write -S {len(apk)} {sid[1]} base.apk -", stdin=apk)
    assert r.exit_code == 0
    assert await rig.out(f"pm install-commit {sid[1]}") == "Success\n"
    assert "com.example.multi" in await rig.out("pm list packages")
