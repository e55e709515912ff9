"""The interpreter subset: operators, quoting, $?, redirects, pipes, errors, fuzz."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from farm.sim.shell.parser import ShellSyntaxError, parse
from tests.sim.shell_fixtures import Rig, make_rig


@pytest.fixture
def rig() -> Rig:
    return make_rig()


async def test_sequence_and_status(rig: Rig) -> None:
    assert await rig.out("echo a; echo b") == "a\nb\n"
    assert await rig.out("false; echo $?") == "1\n"
    assert await rig.out("true && echo yes || echo no") == "yes\n"
    assert await rig.out("false && echo yes || echo no") == "no\n"
    assert await rig.out("false || false || echo third") == "third\n"
    assert await rig.out("! false && echo negated") == "negated\n"
    r = await rig.run("false")
    assert r.exit_code == 1


async def test_adbutils_shell2_magic(rig: Rig) -> None:
    r = await rig.run("getprop ro.serialno; echo X4EXIT:$?")
    assert r.stdout_bytes == b"SIM0000000\nX4EXIT:0\n"
    r = await rig.run("nosuchcmd --flag; echo X4EXIT:$?")
    assert r.stdout_bytes.endswith(b"X4EXIT:127\n")
    assert r.stderr_bytes == b"/system/bin/sh: nosuchcmd: not found\n"
    assert r.exit_code == 0


async def test_not_found_exit_127(rig: Rig) -> None:
    r = await rig.run("frobnicate 1 2")
    assert r.exit_code == 127
    assert r.stderr_bytes == b"/system/bin/sh: frobnicate: not found\n"
    assert r.stdout_bytes == b""


async def test_quoting(rig: Rig) -> None:
    assert await rig.out("echo 'a  b' \"c  d\" e\\ f") == "a  b c  d e f\n"
    assert await rig.out("echo 'it'\\''s'") == "it's\n"  # host escape_arg style
    assert await rig.out('echo "a\\"b\\\\c\\$d\\x"') == 'a"b\\c$d\\x\n'
    assert await rig.out("echo \"$?\" '$?'") == "0 $?\n"
    assert await rig.out("echo a#b # a comment") == "a#b\n"
    assert await rig.out("echo ''") == "\n"
    assert await rig.out("X='a  b'; echo $X; echo \"$X\"") == "a b\na  b\n"
    assert await rig.out("echo ${HOME}x $HOSTNAME") == "/x sim\n"
    assert await rig.out("echo $(echo inner) `echo tick`") == "inner tick\n"
    assert await rig.out("echo line1 \\\n  continued") == "line1 continued\n"


async def test_exec_quoting_and_dev_null(rig: Rig) -> None:
    # what `adb exec-out screencap -p` and the pm/rm helpers send
    r = await rig.run("screencap '-p'")
    assert r.stdout_bytes.startswith(b"\x89PNG")
    rig.vfs.write("/data/local/tmp/app.apk", b"x")
    r = await rig.run("rm '/data/local/tmp/app.apk' </dev/null")
    assert r.exit_code == 0 and not rig.vfs.exists("/data/local/tmp/app.apk")


async def test_redirects(rig: Rig) -> None:
    assert await rig.out("echo one > /sdcard/f.txt; echo two >> /sdcard/f.txt") == ""
    assert rig.vfs.read("/sdcard/f.txt") == b"one\ntwo\n"
    assert await rig.out("cat < /sdcard/f.txt") == "one\ntwo\n"
    r = await rig.run("cat /nope 2>/dev/null; echo $?")
    assert r.stdout_bytes == b"1\n" and r.stderr_bytes == b""
    r = await rig.run("cat /nope 2>&1")
    assert r.stdout_bytes == b"cat: /nope: No such file or directory\n"
    r = await rig.run("cat /nope > /sdcard/both.txt 2>&1")
    assert rig.vfs.read("/sdcard/both.txt") == b"cat: /nope: No such file or directory\n"
    r = await rig.run("echo hidden >/dev/null")
    assert r.stdout_bytes == b""
    r = await rig.run("echo x > /no/such/dir/f")
    assert r.exit_code == 1
    assert r.stderr_bytes == (
        b"/system/bin/sh: can't create /no/such/dir/f: No such file or directory\n")
    r = await rig.run("cat < /missing")
    assert r.exit_code == 1 and b"can't open /missing" in r.stderr_bytes
    r = await rig.run("nosuch 2>/sdcard/err.txt")
    assert r.exit_code == 127 and r.stderr_bytes == b""
    assert rig.vfs.read("/sdcard/err.txt") == b"/system/bin/sh: nosuch: not found\n"
    await rig.run("echo both &> /sdcard/amp.txt")
    assert rig.vfs.read("/sdcard/amp.txt") == b"both\n"


async def test_pipes_to_filters(rig: Rig) -> None:
    out = await rig.out("dumpsys window | grep mCurrentFocus")
    assert out.count("mCurrentFocus=") >= 1 and all(
        "mCurrentFocus" in ln for ln in out.splitlines())
    assert await rig.out("printf 'a\\nB\\nc\\n' | grep -i b") == "B\n"
    assert await rig.out("printf 'a\\nb\\nc\\n' | grep -v b") == "a\nc\n"
    assert await rig.out("printf 'ab\\nac\\nbd\\n' | grep -E 'b|c' | wc -l") == "3\n"
    assert await rig.out("printf 'ab\\nac\\nbd\\n' | grep 'a\\(b\\|c\\)'") == "ab\nac\n"
    assert await rig.out("printf '1\\n2\\n3\\n' | head -n 2") == "1\n2\n"
    assert await rig.out("printf '1\\n2\\n3\\n' | tail -n 1") == "3\n"
    r = await rig.run("echo abc | grep zzz")
    assert r.exit_code == 1 and r.stdout_bytes == b""
    assert await rig.out("pm list packages | grep settings") == "package:com.android.settings\n"


async def test_syntax_errors(rig: Rig) -> None:
    cases = {
        "echo 'abc": "/system/bin/sh: no closing quote\n",
        "ls &&": "/system/bin/sh: syntax error: unexpected EOF\n",
        "; ls": "/system/bin/sh: syntax error: ';' unexpected\n",
        "ls ;; ls": "/system/bin/sh: syntax error: ';;' unexpected\n",
        "| grep x": "/system/bin/sh: syntax error: '|' unexpected\n",
        "(echo a": "/system/bin/sh: syntax error: '(' unmatched\n",
        "echo >": "/system/bin/sh: syntax error: unexpected EOF\n",
    }
    for cmd, err in cases.items():
        r = await rig.run(cmd)
        assert (r.exit_code, r.stderr_bytes.decode()) == (2, err), cmd


async def test_empty_and_comment_lines(rig: Rig) -> None:
    for cmd in ("", "   ", "# only a comment", "\n\n"):
        r = await rig.run(cmd)
        assert (r.exit_code, r.stdout_bytes, r.stderr_bytes) == (0, b"", b"")


async def test_subshell_cd_sh_c_and_exit(rig: Rig) -> None:
    assert await rig.out("cd /sdcard && pwd; (cd /data; pwd); pwd") == "/sdcard\n/data\n/sdcard\n"
    assert await rig.out("sh -c 'echo inner; exit 3'; echo $?") == "inner\n3\n"
    r = await rig.run("echo before; exit 5; echo after")
    assert (r.stdout_bytes, r.exit_code) == (b"before\n", 5)
    assert await rig.out("/system/bin/echo full path") == "full path\n"
    assert await rig.out("[ -d /sdcard ] && echo dir") == "dir\n"


async def test_glob(rig: Rig) -> None:
    rig.vfs.write("/sdcard/Download/a.png", b"1")
    rig.vfs.write("/sdcard/Download/b.png", b"2")
    assert await rig.out("ls /sdcard/Download/*.png") == (
        "/sdcard/Download/a.png\n/sdcard/Download/b.png\n")
    assert await rig.out("echo '/sdcard/*.png'") == "/sdcard/*.png\n"


def test_parse_is_cached_and_immutable() -> None:
    assert parse("echo hi") is parse("echo hi")
    with pytest.raises(ShellSyntaxError):
        parse("echo 'x")


async def test_deep_nesting_never_raises(rig: Rig) -> None:
    for cmd in ("(" * 5000 + "echo" + ")" * 5000, "$(" * 3000 + ")" * 3000,
                "echo " + "$(echo " * 40 + "x" + ")" * 40, "x" * 200_000,
                "echo " + "'a'" * 10_000, "a|" * 3000 + "a"):
        r = await rig.run(cmd)
        assert isinstance(r.exit_code, int)


_shell_chars = st.sampled_from(list(" \t\n;&|()<>'\"\\$`#*?[]{}!=-~%0123456789abcxyzEX/."))
_words = st.sampled_from(["echo", "input", "tap", "getprop", "dumpsys", "grep", "&&", "||",
                          ";", "|", "2>&1", ">", "<", "/dev/null", "$?", "'", '"', "$(",
                          ")", "screencap", "-p", "wm", "size", "cat", "pm", "am", "start",
                          "-n", "settings", "get", "logcat", "-d", "uiautomator", "dump"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    st.text(max_size=200),
    st.text(alphabet=_shell_chars, max_size=120),
    st.lists(_words, max_size=25).map(" ".join),
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
))
def test_fuzz_run_never_raises(cmd: str) -> None:
    rig = make_rig()

    async def go() -> None:
        r = await asyncio.wait_for(rig.run(cmd, stdin=b"stdin data\n"), timeout=30)
        assert 0 <= r.exit_code <= 255
        assert all(isinstance(c, bytes | memoryview) for c in r.stdout)
        assert all(isinstance(c, bytes) for c in r.stderr)
        # sleep is capped; nothing may block for long
    asyncio.run(go())
