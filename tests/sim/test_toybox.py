"""The toybox subset (sed awk find ps pidof md5sum stat -c df top timeout tr cut xargs
kill pkill) and AOSP's default settings keys, on a whole SimPhone's shell."""

from __future__ import annotations

import hashlib
import re

import pytest

from farm.sim.phone import SimPhone
from farm.sim.shell.commands.procs import system_server_pid
from farm.sim.spec import PhoneSpec

PS_HEADER = ("USER           PID  PPID        VSZ    RSS WCHAN            ADDR S NAME"
             + " " * 23)


@pytest.fixture
async def phone() -> SimPhone:
    p = SimPhone(PhoneSpec(name="toybox", seed=7))
    await p.run_shell("mkdir -p /sdcard/t/sub; echo hello > /sdcard/t/a.txt; "
                      "echo log > /sdcard/t/sub/b.log; printf 'x:1\\ny:2\\nz:3\\n' > /sdcard/t/kv")
    return p


async def run(phone: SimPhone, command: str) -> tuple[int, str, str]:
    r = await phone.run_shell(command)
    return r.exit_code, r.stdout_bytes.decode(), r.stderr_bytes.decode()


async def out(phone: SimPhone, command: str) -> str:
    code, text, err = await run(phone, command)
    assert (code, err) == (0, ""), (command, code, err)
    return text


@pytest.mark.parametrize(("command", "expected"), [
    ("sed 's/l/L/g' /sdcard/t/a.txt", "heLLo\n"),
    ("sed -n '2p' /sdcard/t/kv", "y:2\n"),
    ("sed '1d;$s/z/Z/' /sdcard/t/kv", "y:2\nZ:3\n"),
    ("sed -E 's/([a-z]):([0-9])/\\2=\\1/' /sdcard/t/kv", "1=x\n2=y\n3=z\n"),
    ("sed 's/\\(.\\):/\\1 /' /sdcard/t/kv | head -n 1", "x 1\n"),
    ("sed -n '/y/,$p' /sdcard/t/kv", "y:2\nz:3\n"),
    ("awk -F: '{print $2}' /sdcard/t/kv", "1\n2\n3\n"),
    ("awk -F: '$2 >= 2 {print $1, NR}' /sdcard/t/kv", "y 2\nz 3\n"),
    ("awk 'END {print NR}' /sdcard/t/kv", "3\n"),
    ("echo 'a b c' | awk '{print $NF; printf \"%s-%d\\n\", $1, 7}'", "c\na-7\n"),
    ("awk -F: '/z/' /sdcard/t/kv", "z:3\n"),
    ("cut -d: -f1 /sdcard/t/kv", "x\ny\nz\n"),
    ("echo abcdef | cut -c2-4", "bcd\n"),
    ("echo Hello | tr '[:lower:]' '[:upper:]'", "HELLO\n"),
    ("echo 'a--b' | tr -d -", "ab\n"),
    ("find /sdcard/t -name '*.log'", "/sdcard/t/sub/b.log\n"),
    ("find /sdcard/t -type d", "/sdcard/t\n/sdcard/t/sub\n"),
    ("find /sdcard/t -maxdepth 1 -type f", "/sdcard/t/a.txt\n/sdcard/t/kv\n"),
    ("echo /sdcard/t/a.txt /sdcard/t/sub/b.log | xargs cat", "hello\nlog\n"),
    ("printf 'a\\nb\\n' | xargs -n 1 echo x", "x a\nx b\n"),
    ("stat -c '%n %s %a %F' /sdcard/t/a.txt", "/sdcard/t/a.txt 6 644 regular file\n"),
    ("timeout 5 echo done", "done\n"),
    ("kill -l 15", "TERM\n"),
])
async def test_text_and_file_tools(phone: SimPhone, command: str, expected: str) -> None:
    assert await out(phone, command) == expected


async def test_md5sum_matches_hashlib(phone: SimPhone) -> None:
    digest = hashlib.md5(b"hello\n").hexdigest()
    assert await out(phone, "md5sum /sdcard/t/a.txt") == f"{digest}  /sdcard/t/a.txt\n"
    assert await out(phone, "cat /sdcard/t/a.txt | md5sum") == f"{digest}  -\n"
    assert await run(phone, "md5sum /nope") == (
        1, "", "md5sum: /nope: No such file or directory\n")


async def test_ps_lists_the_system_and_running_apps(phone: SimPhone) -> None:
    await out(phone, "am start -n com.android.settings/.Settings")
    text = await out(phone, "ps -A")
    lines = text.splitlines()
    assert lines[0] == PS_HEADER
    names = {ln.split()[-1]: ln.split() for ln in lines[1:]}
    assert {"init", "zygote64", "system_server", "surfaceflinger", "com.android.systemui",
            "adbd", "com.android.settings", "com.google.android.apps.nexuslauncher"} <= set(names)
    assert names["system_server"][:3] == ["system", str(system_server_pid(phone.shell.phone)),
                                          "565"]
    settings_pid = names["com.android.settings"][1]
    assert await out(phone, "pidof com.android.settings") == f"{settings_pid}\n"
    assert await out(phone, "pidof system_server") == f"{system_server_pid(phone.shell.phone)}\n"
    assert (await run(phone, "pidof com.nope"))[0] == 1
    # -o picks columns; the world and ps agree on pids
    rows = (await out(phone, "ps -A -o PID,NAME")).splitlines()
    assert rows[0].split() == ["PID", "NAME"]
    assert f"{settings_pid} com.android.settings" in [r.strip() for r in rows]
    await out(phone, "am force-stop com.android.settings")
    assert (await run(phone, "pidof com.android.settings"))[0] == 1


async def test_kill_and_pkill_are_refused_for_other_users(phone: SimPhone) -> None:
    ss = system_server_pid(phone.shell.phone)
    assert await run(phone, f"kill {ss}") == (1, "", f"kill: pid {ss}: Operation not permitted\n")
    assert await run(phone, "kill 99999") == (1, "", "kill: pid 99999: No such process\n")
    assert await run(phone, "kill -s NOPE 1") == (1, "", "kill: unknown signal 'NOPE'\n")
    assert await run(phone, "pkill -9 system_server") == (
        1, "", f"pkill: KILL->{ss}: Operation not permitted\n")
    assert await run(phone, "pkill nothing_like_this") == (1, "", "")
    assert await run(phone, "kill $$; echo not reached") == (143, "", "")


async def test_timeout_cuts_a_command_off(phone: SimPhone) -> None:
    assert await run(phone, "timeout 0.1 sleep 5; echo $?") == (0, "124\n", "")
    assert (await run(phone, "timeout 1 false"))[0] == 1
    assert (await run(phone, "timeout x echo"))[0] == 125


async def test_df_and_top_layouts(phone: SimPhone) -> None:
    text = await out(phone, "df")
    assert text.splitlines()[0] == "Filesystem        1K-blocks    Used Available Use% Mounted on"
    assert re.search(r"^/dev/fuse +\d+ +\d+ +\d+ +\d+% /storage/emulated$", text, re.M)
    assert (await out(phone, "df /sdcard")).splitlines()[1].endswith(" /storage/emulated")
    top = (await out(phone, "top -b -n 1")).splitlines()
    assert re.match(r"Tasks: \d+ total, +\d+ running, +\d+ sleeping, +0 stopped, +0 zombie",
                    top[0])
    assert top[4].split() == ["PID", "USER", "PR", "NI", "VIRT", "RES", "SHR", "S[%CPU]",
                              "%MEM", "TIME+", "ARGS"]


@pytest.mark.parametrize(("command", "code", "err"), [
    ("sed 's/a/b/q' /sdcard/t/kv", 1, "sed: bad option 'q'\n"),
    ("sed -E 's/(/x/' /sdcard/t/kv", 1, None),
    ("awk '{print' /sdcard/t/kv", 2, "awk: syntax error: unexpected end of program\n"),
    ("find /nope", 1, "find: /nope: No such file or directory\n"),
    ("cut -f1 -d:: /sdcard/t/kv", 1, "cut: -d 'x' must be 1 character\n"),
    ("xargs -n 0 echo", 1, "xargs: bad -n '0'\n"),
])
async def test_bad_usage_errors(phone: SimPhone, command: str, code: int,
                                err: str | None) -> None:
    rc, _, text = await run(phone, command)
    assert rc == code
    if err is not None:
        assert text == err
    else:
        assert text.startswith("sed: bad regex")


async def test_settings_list_has_aosp_defaults(phone: SimPhone) -> None:
    counts = {}
    for ns in ("system", "secure", "global"):
        lines = (await out(phone, f"settings list {ns}")).splitlines()
        assert lines == sorted(lines)
        counts[ns] = len(lines)
    assert sum(counts.values()) >= 230
    for ns, key in (("global", "wifi_sleep_policy"), ("global", "stay_on_while_plugged_in"),
                    ("secure", "long_press_timeout"), ("secure", "sms_default_application"),
                    ("system", "user_rotation"), ("system", "volume_ring")):
        assert (await out(phone, f"settings get {ns} {key}")).strip() != "null", (ns, key)
    # the sim's own values win over the generic defaults
    assert await out(phone, "settings get system screen_off_timeout") == "60000\n"
