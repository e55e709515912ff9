"""Processes: ``ps``, ``pidof``, ``top``, ``kill``, ``pkill`` over the phone's process table.

The table is the system's fixed daemons (init, zygote, system_server, …) plus every
app process the world has started, with the pids the world and logcat use. The shell
runs as uid 2000, so signalling anything but its own shell fails as it does on a
phone ("Operation not permitted"). Layouts follow toybox: Android's default ``ps``
columns are ``USER,PID,PPID,VSIZE:10,RSS,WCHAN:10,ADDR:10,S,NAME``.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

from farm.sim.shell.commands.names import pid_of, uid_of
from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import ExitShell, Phone, Proc

SIGNALS = ("HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV",
           "USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN",
           "TTOU", "URG", "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS")


@dataclass(frozen=True, slots=True)
class Process:
    user: str
    pid: int
    ppid: int
    vsz: int  # KiB
    rss: int  # KiB
    wchan: str
    state: str
    name: str

    @property
    def uid(self) -> int:
        return {"root": 0, "system": 1000, "shell": 2000, "logd": 1036, "radio": 1001,
                "media": 1013, "bluetooth": 1002, "nfc": 1027}.get(
            self.user, 10000 + int(self.user[4:]) if self.user.startswith("u0_a") and
            self.user[4:].isdecimal() else 9999)


# (user, pid, ppid, name) of the daemons every phone runs; pids as on a booted Pixel
_DAEMONS = (
    ("root", 1, 0, "init"), ("root", 2, 0, "[kthreadd]"), ("root", 140, 1, "ueventd"),
    ("logd", 296, 1, "logd"), ("system", 298, 1, "servicemanager"),
    ("system", 299, 1, "hwservicemanager"), ("root", 312, 1, "vold"),
    ("system", 420, 1, "surfaceflinger"), ("root", 565, 1, "zygote64"),
    ("root", 566, 1, "zygote"), ("radio", 640, 1, "rild"), ("media", 661, 1, "mediaserver"),
    ("root", 700, 1, "installd"), ("root", 701, 1, "netd"),
)


def system_server_pid(phone: Phone) -> int:
    """The pid the world logs ``ActivityManager`` lines from."""
    return 1000 + phone.spec.seed % 500


def _mem(name: str, base: int, spread: int) -> int:
    return base + zlib.crc32(name.encode()) % spread


def processes(phone: Phone, shell_pid: int = 0) -> list[Process]:
    """Every process on the phone, by pid (toybox lists /proc in pid order)."""
    kernel = {"[kthreadd]"}
    out = [Process(u, pid, ppid, 0 if n in kernel else _mem(n, 10_200_000, 2_000_000),
                   0 if n in kernel else _mem(n, 3_000, 9_000),
                   "0" if n in kernel else "do_epoll_wait", "S", n)
           for u, pid, ppid, n in _DAEMONS]
    sys_pid = system_server_pid(phone)
    out.append(Process("system", sys_pid, 565, _mem("ss", 15_500_000, 900_000),
                       _mem("ss", 280_000, 60_000), "do_epoll_wait", "S", "system_server"))
    out.append(Process("u0_a183", sys_pid + 211, 565, _mem("sysui", 15_000_000, 900_000),
                       _mem("sysui", 190_000, 50_000), "do_epoll_wait", "S",
                       "com.android.systemui"))
    out.append(Process("shell", sys_pid + 380, 1, _mem("adbd", 10_900_000, 400_000),
                       _mem("adbd", 4_000, 2_000), "do_epoll_wait", "S", "adbd"))
    world = phone.world
    getter = getattr(world, "pid", None)
    seen = {p.pid for p in out}
    for info in world.packages():
        pid = getter(info.name) if callable(getter) else None
        if pid is None and not callable(getter):
            if not any(r.package == info.name for r in world.activity_stack()):
                continue
            pid = pid_of(info.name, world)
        if not isinstance(pid, int) or pid in seen:
            continue
        seen.add(pid)
        uid = uid_of(info.name)
        user = "system" if uid == 1000 else f"u0_a{uid - 10000}"
        out.append(Process(user, pid, 565, _mem(info.name, 14_000_000, 2_500_000),
                           _mem(info.name, 90_000, 120_000), "do_epoll_wait", "S", info.name))
    if shell_pid:
        out.append(Process("shell", shell_pid, sys_pid + 380, 10_800_000, 3_200,
                           "do_wait", "S", "sh"))
    return sorted(out, key=lambda p: p.pid)


# -- ps --------------------------------------------------------------------------------
# field → (title, width; negative = left-aligned)
_FIELDS: dict[str, tuple[str, int]] = {
    "USER": ("USER", -12), "UID": ("UID", 5), "PID": ("PID", 5), "PPID": ("PPID", 5),
    "VSZ": ("VSZ", 10), "VSIZE": ("VSZ", 10), "RSS": ("RSS", 6), "WCHAN": ("WCHAN", -10),
    "ADDR": ("ADDR", 10), "S": ("S", 1), "NAME": ("NAME", -27), "CMD": ("CMD", -15),
    "ARGS": ("ARGS", -27), "CMDLINE": ("CMDLINE", -27), "COMM": ("COMM", -27),
    "STAT": ("STAT", -5), "PCY": ("PCY", 3), "TTY": ("TTY", -8), "TIME": ("TIME", 8),
}
DEFAULT_PS = ("USER", "PID", "PPID", "VSIZE", "RSS", "WCHAN", "ADDR", "S", "NAME")


def _value(p: Process, field: str) -> str:
    return {
        "USER": p.user, "UID": str(p.uid), "PID": str(p.pid), "PPID": str(p.ppid),
        "VSZ": str(p.vsz), "VSIZE": str(p.vsz), "RSS": str(p.rss), "WCHAN": p.wchan,
        "ADDR": "0", "S": p.state, "NAME": p.name, "CMD": p.name[:15], "ARGS": p.name,
        "CMDLINE": p.name, "COMM": p.name, "STAT": p.state, "PCY": "fg", "TTY": "?",
        "TIME": "00:00:00",
    }[field]


def _row(cells: list[tuple[str, int]]) -> str:
    """toybox's padding: each cell in its width; a cell that overflows takes the
    overflow out of the padding of the cells after it."""
    out: list[str] = []
    debt = 0
    for i, (text, width) in enumerate(cells):
        w = abs(width)
        last = i == len(cells) - 1
        room = max(w - debt, len(text))
        debt = max(0, debt + len(text) - w)
        if width < 0:
            out.append(text if last else text.ljust(room))
        else:
            out.append(text.rjust(room))
    return " ".join(out)


def _parse_fields(spec: str) -> list[tuple[str, str, int]] | None:
    fields = []
    for item in spec.split(","):
        name, _, width_s = item.partition(":")
        name, _, title = name.partition("=")
        key = name.upper()
        if key not in _FIELDS:
            return None
        default_title, width = _FIELDS[key]
        if width_s.isdecimal():
            width = int(width_s) * (-1 if width < 0 else 1)
        fields.append((key, title or default_title, width))
    return fields


@command("ps")
async def ps(p: Proc) -> int:
    args = list(p.args)
    everything = False
    spec = ",".join(DEFAULT_PS)
    pids: set[int] = set()
    names: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-o", "-O", "-p") and i + 1 < len(args):
            if a == "-p":
                pids.update(int(x) for x in args[i + 1].split(",") if x.isdecimal())
            else:
                spec = args[i + 1]
            i += 2
            continue
        if a.startswith("-") and len(a) > 1:
            everything = everything or any(c in a[1:] for c in "AeT")
        elif a.isdecimal():
            pids.add(int(a))
        else:
            names.append(a)
        i += 1
    fields = _parse_fields(spec)
    if fields is None:
        p.error(f"ps: bad -o {spec}\n")
        return 1
    table = processes(p.phone, p.session.pid)
    if pids:
        table = [t for t in table if t.pid in pids]
    elif not everything:  # the caller's session: its shell and ps itself
        table = [t for t in table if t.pid == p.session.pid]
        table.append(Process("shell", p.session.pid + 1, p.session.pid, 10_800_000, 3_300,
                             "0", "R", "ps"))
    if names:
        table = [t for t in table if t.name in names]
    # get_headers pads every title, the last one too (data rows leave the last unpadded)
    header = _row([(title, w) for _, title, w in fields])
    last_title, last_width = fields[-1][1], fields[-1][2]
    if last_width < 0:
        header += " " * max(0, -last_width - len(last_title))
    p.write(header + "\n")
    for t in table:
        p.write(_row([(_value(t, key), w) for key, _, w in fields]) + "\n")
    return 0 if table else 1


@command("pidof")
async def pidof(p: Proc) -> int:
    opts = [a for a in p.args if a.startswith("-")]
    names = [a for a in p.args if not a.startswith("-")]
    table = processes(p.phone, p.session.pid)
    found: list[str] = []
    for n in names:
        base = n.rsplit("/", 1)[-1]
        found += [str(t.pid) for t in reversed(table) if t.name in (n, base)]
        if "-s" in opts and found:
            break
    if not found:
        return 1
    p.write(" ".join(found) + "\n")
    return 0


# -- top -------------------------------------------------------------------------------
def _human(kib: int) -> str:
    for unit, size in (("G", 1 << 20), ("M", 1 << 10)):
        if kib >= size:
            v = kib / size
            return f"{v:.1f}{unit}" if v < 10 else f"{v:.0f}{unit}"
    return f"{kib}K"


@command("top")
async def top(p: Proc) -> int:
    """``top -b -n N [-m M]``: batch snapshots (the sim has no interactive terminal)."""
    args = p.args
    iterations, max_lines = 1, 0
    for i, a in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else ""
        if a == "-n" and nxt.isdecimal():
            iterations = max(1, min(int(nxt), 5))
        elif a == "-m" and nxt.isdecimal():
            max_lines = int(nxt)
    table = processes(p.phone, p.session.pid)
    table.append(Process("shell", p.session.pid + 1, p.session.pid, 10_900_000, 4_100, "0",
                         "R", "top"))
    total_kib = 8_000_000
    used = sum(t.rss for t in table) + 2_500_000
    for _ in range(iterations):
        running = sum(1 for t in table if t.state == "R")
        lines = [
            f"Tasks: {len(table)} total, {running:3d} running, {len(table) - running:3d} "
            f"sleeping,   0 stopped,   0 zombie",
            f"  Mem: {total_kib:8d}K total, {used:8d}K used, {total_kib - used:8d}K free, "
            f"{12_288:8d}K buffers",
            f" Swap: {4_194_300:8d}K total, {0:8d}K used, {4_194_300:8d}K free, "
            f"{3_100_000:8d}K cached",
            "800%cpu   2%user   0%nice   3%sys 795%idle   0%iow   0%irq   0%sirq   0%host",
            "  PID USER         PR  NI VIRT  RES  SHR S[%CPU] %MEM     TIME+ ARGS",
        ]
        rows = sorted(table, key=lambda t: (t.state != "R", -t.rss))
        if max_lines:
            rows = rows[:max_lines]
        for t in rows:
            cpu = 3.3 if t.state == "R" else 0.0
            lines.append(f"{t.pid:5d} {t.user:<12} 20   0 {_human(t.vsz):>4} "
                         f"{_human(t.rss):>4} {_human(t.rss * 3 // 4):>4} {t.state} "
                         f"{cpu:5.1f} {t.rss * 100 / total_kib:5.1f}   0:00.{t.pid % 97:02d} "
                         f"{t.name}")
        p.write("".join(ln + "\n" for ln in lines))
    return 0


# -- kill / pkill ----------------------------------------------------------------------
def signal_number(text: str) -> int | None:
    t = text.upper().removeprefix("SIG")
    if t.isdecimal():
        n = int(t)
        return n if 0 <= n <= 64 else None
    return SIGNALS.index(t) + 1 if t in SIGNALS else None


def signal_name(number: int) -> str:
    """num_to_sig: the name without SIG, or the number for real-time signals."""
    return SIGNALS[number - 1] if 0 < number <= len(SIGNALS) else str(number)


def _signal(p: Proc, number: int, pid: int, table: dict[int, Process]) -> str | None:
    """Deliver ``number`` to ``pid`` as uid 2000; the errno text on failure."""
    target = table.get(pid)
    if target is None:
        return "No such process"
    if pid == p.session.pid:
        if number:
            raise ExitShell(128 + number)
        return None
    if target.user != "shell":
        return "Operation not permitted"
    return None


@command("kill")
async def kill(p: Proc) -> int:
    args = list(p.args)
    number = 15
    if args[:1] == ["-l"]:
        if len(args) > 1:
            n = signal_number(args[1])
            if n is None or n == 0 or n > len(SIGNALS):
                p.error(f"kill: unknown signal '{args[1]}'\n")
                return 1
            p.write(SIGNALS[n - 1] + "\n")
        else:
            p.write("".join(f"{i:2d}) SIG{s:<7}" + ("\n" if i % 4 == 0 else "\t")
                            for i, s in enumerate(SIGNALS, 1)) + "\n")
        return 0
    if args[:1] == ["-s"] and len(args) > 1:
        raw, args = args[1], args[2:]
    elif args and args[0].startswith("-") and len(args[0]) > 1:
        raw, args = args[0][1:], args[1:]
    else:
        raw = "TERM"
    sig = signal_number(raw)
    if sig is None:
        p.error(f"kill: unknown signal '{raw}'\n")
        return 1
    number = sig
    if not args:
        p.error("kill: Need 1 argument\n")
        return 1
    table = {t.pid: t for t in processes(p.phone, p.session.pid)}
    code = 0
    for a in args:
        if not a.lstrip("-").isdecimal():
            p.error(f"kill: not a number '{a}'\n")
            code = 1
            continue
        if int(a) in p.session.jobs:  # one of this shell's background jobs (`cmd &`)
            if number:  # signal 0 only asks whether it exists
                p.session.signal_job(int(a), number)
            continue
        err = _signal(p, number, int(a), table)
        if err is not None:
            p.error(f"kill: pid {a}: {err}\n")
            code = 1
    return code


@command("pkill", "pgrep")
async def pkill(p: Proc) -> int:
    args = list(p.args)
    number = 15
    full = exact = listing = False
    patterns: list[str] = []
    for a in args:
        if a.startswith("-") and len(a) > 1:
            flags = a[1:]
            n = signal_number(flags)
            if p.name == "pkill" and n is not None and not set(flags) <= set("fxl"):
                number = n
                continue
            full = full or "f" in flags
            exact = exact or "x" in flags
            listing = listing or "l" in flags
        else:
            patterns.append(a)
    if not patterns:
        p.error(f"{p.name}: Need 1 argument\n")
        return 2
    try:
        regexes = [re.compile(pat) for pat in patterns]
    except re.error:
        p.error(f"{p.name}: bad regex '{patterns[0]}'\n")
        return 2
    table = processes(p.phone, p.session.pid)
    hits = [t for t in table if t.pid != p.session.pid and any(
        (r.fullmatch(t.name) if exact else r.search(t.name)) for r in regexes)]
    if p.name == "pgrep":
        for t in hits:
            p.write(f"{t.pid} {t.name}\n" if listing else f"{t.pid}\n")
        return 0 if hits else 1
    byid = {t.pid: t for t in table}
    failed = False
    for t in hits:
        err = _signal(p, number, t.pid, byid)
        if err is not None:
            failed = True
            p.error(f"pkill: {signal_name(number)}->{t.pid}: {err}\n")
    return 0 if hits and not failed else 1


__all__ = ["Process", "kill", "pidof", "pkill", "processes", "ps",
           "signal_number", "system_server_pid", "top"]
