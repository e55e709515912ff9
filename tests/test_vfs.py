from __future__ import annotations

import errno

import pytest

from farm.sim.vfs import VirtualFS


def test_defaults_and_roundtrip() -> None:
    fs = VirtualFS()
    assert fs.is_dir("/sdcard/Download") and fs.is_dir("/data/local/tmp")
    fs.write("/sdcard/a.txt", b"hello")
    fs.write("/sdcard/a.txt", b" world", append=True)
    assert fs.read("/sdcard/a.txt") == b"hello world"
    st = fs.stat("/sdcard/a.txt")
    assert st is not None and st.is_file and st.size == 11
    assert [n for n, _ in fs.listdir("/sdcard")] == ["DCIM", "Download", "Pictures", "a.txt"]


def test_errors_carry_errno() -> None:
    fs = VirtualFS()
    with pytest.raises(OSError) as e:
        fs.read("/nope")
    assert e.value.errno == errno.ENOENT
    with pytest.raises(OSError) as e:
        fs.write("/no/such/dir/f", b"x")
    assert e.value.errno == errno.ENOENT
    with pytest.raises(OSError) as e:
        fs.read("/sdcard")
    assert e.value.errno == errno.EISDIR
    with pytest.raises(OSError) as e:
        fs.remove("/sdcard")
    assert e.value.errno == errno.EISDIR


def test_make_parents_normalises_and_removes() -> None:
    fs = VirtualFS()
    fs.write("//sdcard/./x/../y/z.bin", b"1", make_parents=True)
    assert fs.read("/sdcard/y/z.bin") == b"1"
    used = fs.used_bytes
    fs.remove("/sdcard/y", recursive=True)
    assert not fs.exists("/sdcard/y") and fs.used_bytes == used - 1


def test_capacity_is_enforced_without_partial_writes() -> None:
    fs = VirtualFS(capacity=1000)
    fs.write("/sdcard/a", b"x" * 600)
    with pytest.raises(OSError) as e:
        fs.write("/sdcard/b", b"x" * 600)
    assert e.value.errno == errno.ENOSPC
    assert not fs.exists("/sdcard/b")
    fs.write("/sdcard/a", b"x" * 900)  # replacing frees the old size first
    assert fs.used_bytes == 900


def test_dev_null_swallows_writes() -> None:
    fs = VirtualFS()
    fs.write("/dev/null", b"abc")
    assert fs.read("/dev/null") == b""
