"""Small commands: true/false/sleep/id/whoami/date/uname/printf/which/pidof …"""

from __future__ import annotations

import asyncio
import re
import time

from farm.sim.shell.commands.registry import command, lookup
from farm.sim.shell.context import Proc

MAX_SLEEP_S = 10.0  # a sim must never wedge a caller on `sleep 3600`

ID = ("uid=2000(shell) gid=2000(shell) groups=2000(shell),1004(input),1007(log),1011(adb),"
      "1015(sdcard_rw),1028(sdcard_r),1078(ext_data_rw),1079(ext_obb_rw),3001(net_bt_admin),"
      "3002(net_bt),3003(inet),3006(net_bw_stats),3009(readproc),3011(uhid),3012(readtracefs)"
      " context=u:r:shell:s0")


@command("true")
async def true(p: Proc) -> int:
    return 0


@command("false")
async def false(p: Proc) -> int:
    return 1


_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)")


@command("sleep")
async def sleep(p: Proc) -> int:
    if not p.args:
        p.error("sleep: Needs 1 argument (see \"sleep --help\")\n")
        return 1
    total = 0.0
    for a in p.args:
        m = _DURATION.fullmatch(a)
        if not m:
            p.error(f"sleep: Not a number '{a}'\n")
            return 1
        total += float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    if total > 0:
        await asyncio.sleep(min(total, MAX_SLEEP_S))
    return 0


@command("id")
async def id_(p: Proc) -> int:
    if "-un" in p.args or ("-u" in p.args and "-n" in p.args):
        p.write("shell\n")
    elif "-u" in p.args:
        p.write("2000\n")
    else:
        p.write(ID + "\n")
    return 0


@command("whoami")
async def whoami(p: Proc) -> int:
    p.write("shell\n")
    return 0


@command("date")
async def date(p: Proc) -> int:
    now = time.time()
    fmt = "%a %b %e %H:%M:%S %Z %Y"
    for a in p.args:
        if a.startswith("+"):
            fmt = a[1:]
    text = time.strftime(fmt.replace("%s", str(int(now))).replace("%N", "000000000"),
                         time.gmtime(now)).replace("GMT", "UTC")
    p.write(text + "\n")
    return 0


@command("uname")
async def uname(p: Proc) -> int:
    if "-a" in p.args:
        p.write(f"Linux {p.phone.spec.name} 5.10.198-android13-4 #1 SMP PREEMPT "
                "Mon Jan 1 00:00:00 UTC 2024 aarch64 Toybox\n")
    elif "-m" in p.args:
        p.write("aarch64\n")
    elif "-r" in p.args:
        p.write("5.10.198-android13-4\n")
    else:
        p.write("Linux\n")
    return 0


@command("hostname")
async def hostname(p: Proc) -> int:
    p.write("localhost\n")
    return 0


@command("getenforce")
async def getenforce(p: Proc) -> int:
    p.write("Enforcing\n")
    return 0


@command("which")
async def which(p: Proc) -> int:
    code = 0
    for name in p.args:
        if lookup(name) is not None:
            p.write(f"/system/bin/{name.rsplit('/', 1)[-1]}\n")
        else:
            code = 1
    return code


@command("uptime")
async def uptime(p: Proc) -> int:
    up = int(time.time() - p.phone.boot_time)
    p.write(f" {time.strftime('%H:%M:%S', time.gmtime())} up {up // 86400} days, "
            f"{up % 86400 // 3600:2d}:{up % 3600 // 60:02d},  0 users,  "
            "load average: 0.10, 0.12, 0.09\n")
    return 0


@command("env", "printenv")
async def env(p: Proc) -> int:
    vars_ = p.session.vars
    if p.name == "printenv" and p.args:
        if p.args[0] in vars_:
            p.write(vars_[p.args[0]] + "\n")
            return 0
        return 1
    p.write("".join(f"{k}={v}\n" for k, v in sorted(vars_.items()) if k != "IFS"))
    return 0


_PRINTF_SPEC = re.compile(r"%([-+ #0]*\d*(?:\.\d+)?)([sdiouxXfFeEgGc%])")
_PRINTF_ESC = {"n": "\n", "t": "\t", "\\": "\\", "r": "\r", "a": "\a", "b": "\b",
               "f": "\f", "v": "\v", '"': '"'}


@command("printf")
async def printf(p: Proc) -> int:
    if not p.args:
        p.error("printf: Needs 1 argument (see \"printf --help\")\n")
        return 1
    fmt = re.sub(r"\\(.)", lambda m: _PRINTF_ESC.get(m.group(1), "\\" + m.group(1)), p.args[0])
    args = list(p.args[1:])
    out: list[str] = []
    code = 0
    while True:
        used = False

        def sub(m: re.Match[str]) -> str:
            nonlocal used, code
            flags, conv = m.group(1), m.group(2)
            if conv == "%":
                return "%"
            used = True
            a = args.pop(0) if args else ""
            if conv in "sc":
                return ("%" + flags + "s") % (a[:1] if conv == "c" else a)
            try:
                if conv in "fFeEgG":
                    return ("%" + flags + conv) % float(a or 0)
                num = int(a, 0) if a else 0
                return ("%" + flags + ("d" if conv in "iu" else conv)) % num
            except (ValueError, TypeError, OverflowError):
                p.error(f"printf: invalid number '{a}'\n")
                code = 1
                return "0"

        out.append(_PRINTF_SPEC.sub(sub, fmt))
        if not args or not used:
            break
    p.write("".join(out))
    return code
