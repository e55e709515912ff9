"""``logcat``: dump (or clear) the phone's LogBuffer in liblog's formats."""

from __future__ import annotations

import time

from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import Proc

PRIORITIES = "VDIWEFS"
_FORMATS = {"threadtime", "epoch", "brief", "time", "raw", "tag", "process", "long",
            "thread", "monotonic"}


def _parse_filters(specs: list[str]) -> tuple[dict[str, int], int]:
    """``Tag:P`` specs → per-tag minimum priority and the default for other tags."""
    tags: dict[str, int] = {}
    default = 0
    for spec in specs:
        tag, _, pri = spec.rpartition(":") if ":" in spec else (spec, "", "V")
        level = PRIORITIES.find(pri.upper()[:1]) if pri else 0
        if level < 0:
            continue
        if tag == "*":
            default = level
        else:
            tags[tag] = level
    return tags, default


def format_line(fmt: str, entry: tuple[float, int, int, str, str, str]) -> str:
    ts, pid, tid, pri, tag, msg = entry
    ms = int((ts % 1) * 1000)
    if fmt == "epoch":
        return f"{int(ts):>19}.{ms:03d} {pid:5d} {tid:5d} {pri} {tag:<8}: {msg}"
    stamp = time.strftime("%m-%d %H:%M:%S", time.gmtime(ts)) + f".{ms:03d}"
    if fmt == "brief":
        return f"{pri}/{tag:<8}({pid:5d}): {msg}"
    if fmt == "time":
        return f"{stamp} {pri}/{tag:<8}({pid:5d}): {msg}"
    if fmt == "raw":
        return msg
    if fmt == "tag":
        return f"{pri}/{tag:<8}: {msg}"
    if fmt == "process":
        return f"{pri}({pid:5d}) {msg}  ({tag})"
    if fmt == "thread":
        return f"{pri}({pid:5d}:{tid:5d}) {msg}"
    return f"{stamp} {pid:5d} {tid:5d} {pri} {tag:<8}: {msg}"


@command("logcat")
async def logcat(p: Proc) -> int:
    buf = p.phone.logcat
    fmt = "threadtime"
    specs: list[str] = []
    clear = False
    silent = False
    tail: int | None = None
    args = p.args
    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else ""
        if a == "-c" or a == "--clear":
            clear = True
        elif a in ("-d", "-D", "--dividers"):
            pass
        elif a == "-s":
            silent = True
        elif a in ("-v", "--format"):
            if nxt in _FORMATS:
                fmt = nxt
            i += 1
        elif a.startswith("-v") and a[2:] in _FORMATS:
            fmt = a[2:]
        elif a in ("-t", "-T", "-m", "--max-count"):
            if nxt.isdecimal():
                tail = int(nxt)
            i += 1
        elif a in ("-b", "--buffer", "-f", "--file", "-r", "-n", "-e", "--regex", "--pid",
                   "-g", "-G"):
            i += 1
        elif a.startswith("-"):
            pass
        else:
            specs.append(a)
        i += 1
    if clear:
        buf.clear()
        return 0
    if silent:
        specs.append("*:S")
    tags, default = _parse_filters(specs)
    entries = [e for e in buf.lines
               if PRIORITIES.find(e[3]) >= tags.get(e[4], default)]
    if tail is not None:
        entries = entries[-tail:] if tail else []
    # logcat without -d would stream forever; the sim dumps and exits either way.
    if entries:
        lines = ["--------- beginning of main"]
        lines += [format_line(fmt, e) for e in entries]
        p.write("\n".join(lines) + "\n")
    return 0
