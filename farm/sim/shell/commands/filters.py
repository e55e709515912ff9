"""Pipe filters seen in the wild: grep, head, tail, wc, sort."""

from __future__ import annotations

import re

from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import Proc


def _bre_to_python(pattern: str) -> str:
    """POSIX basic regex → Python: in BRE ( ) { } | + ? are literal unless escaped."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            n = pattern[i + 1]
            out.append(n if n in "(){}|+?" else "\\" + n)
            i += 2
            continue
        out.append("\\" + c if c in "(){}|+?" else c)
        i += 1
    return "".join(out)


def _input_lines(p: Proc, files: list[str], name: str) -> tuple[list[tuple[str, bytes]], int]:
    if not files:
        return [("", p.stdin)], 0
    out: list[tuple[str, bytes]] = []
    code = 0
    for f in files:
        if f == "-":
            out.append(("(standard input)", p.stdin))
            continue
        try:
            out.append((f, p.phone.vfs.read(p.path(f))))
        except OSError as e:
            p.error(f"{name}: {f}: {e.strerror}\n")
            code = 2
    return out, code


@command("grep", "egrep", "fgrep")
async def grep(p: Proc) -> int:
    flags: set[str] = set("E" if p.name == "egrep" else "F" if p.name == "fgrep" else "")
    patterns: list[str] = []
    rest: list[str] = []
    max_count = -1
    args = p.args
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-e", "-m") and i + 1 < len(args):
            if a == "-e":
                patterns.append(args[i + 1])
            else:
                max_count = int(args[i + 1]) if args[i + 1].isdecimal() else -1
            i += 2
            continue
        if a.startswith("--"):
            if a == "--color=never" or a.startswith("--color"):
                pass
            i += 1
            continue
        if len(a) > 1 and a[0] == "-" and not rest:
            flags.update(a[1:])
        else:
            rest.append(a)
        i += 1
    if not patterns:
        if not rest:
            p.error("usage: grep [-EFHIabcilnoqrsvwxz] [-ABC NUM] [-m MAX] [-e REGEX]... "
                    "[-f REGFILE] [FILE]...\n")
            return 2
        patterns.append(rest.pop(0))
    try:
        parts = []
        for pat in patterns:
            if "F" in flags:
                parts.append(re.escape(pat))
            elif "E" in flags:
                parts.append(pat)
            else:
                parts.append(_bre_to_python(pat))
        if "w" in flags:
            parts = [rf"\b(?:{x})\b" for x in parts]
        if "x" in flags:
            parts = [rf"(?:{x})" for x in parts]
        rx = re.compile("|".join(f"(?:{x})" for x in parts), re.I if "i" in flags else 0)
    except (re.error, RecursionError, OverflowError):
        p.error("grep: bad regex\n")
        return 2
    sources, code = _input_lines(p, rest, "grep")
    invert, count_only, quiet = "v" in flags, "c" in flags, "q" in flags
    show_names = len(rest) > 1 and "h" not in flags
    found = 0
    for fname, data in sources:
        n = 0
        for lineno, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            m = rx.fullmatch(line) if "x" in flags else rx.search(line)
            if bool(m) == invert:
                continue
            n += 1
            if quiet:
                return 0
            if not count_only:
                prefix = f"{fname}:" if show_names else ""
                if "n" in flags:
                    prefix += f"{lineno}:"
                if "o" in flags and m is not None and not invert:
                    for mm in rx.finditer(line):
                        p.write(f"{prefix}{mm.group()}\n")
                else:
                    p.write(f"{prefix}{line}\n")
            if n == max_count:
                break
        if count_only:
            p.write((f"{fname}:" if show_names else "") + f"{n}\n")
        found += n
    if code:
        return code
    return 0 if found else 1


def _count_arg(p: Proc, default: int) -> tuple[int, list[str]]:
    n = default
    rest: list[str] = []
    args = p.args
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-n" and i + 1 < len(args):
            v = args[i + 1]
            n = int(v.lstrip("+-")) if v.lstrip("+-").isdecimal() else n
            i += 2
            continue
        if a.startswith("-n") and a[2:].isdecimal():
            n = int(a[2:])
        elif len(a) > 1 and a[0] == "-" and a[1:].isdecimal():
            n = int(a[1:])
        else:
            rest.append(a)
        i += 1
    return n, rest


def _split_keep(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _bytes_arg(args: list[str]) -> tuple[int | None, list[str]]:
    """``-c N`` (byte count) for head/tail; the rest of the arguments."""
    for i, a in enumerate(args):
        if a == "-c" and i + 1 < len(args) and args[i + 1].lstrip("+-").isdecimal():
            return int(args[i + 1].lstrip("+-")), args[:i] + args[i + 2:]
        if a.startswith("-c") and a[2:].isdecimal():
            return int(a[2:]), args[:i] + args[i + 1:]
    return None, args


@command("head")
async def head(p: Proc) -> int:
    nbytes, args = _bytes_arg(p.args)
    n, files = _count_arg(Proc(p.session, [p.name, *args], p.stdin, p.out, p.err), 10)
    sources, code = _input_lines(p, files, "head")
    for _, data in sources:
        p.write(data[:nbytes] if nbytes is not None else b"".join(_split_keep(data)[:n]))
    return 1 if code else 0


@command("tail")
async def tail(p: Proc) -> int:
    nbytes, args = _bytes_arg(p.args)
    n, files = _count_arg(Proc(p.session, [p.name, *args], p.stdin, p.out, p.err), 10)
    sources, code = _input_lines(p, files, "tail")
    for _, data in sources:
        if nbytes is not None:
            p.write(data[-nbytes:] if nbytes else b"")
            continue
        lines = _split_keep(data)
        p.write(b"".join(lines[-n:] if n else []))
    return 1 if code else 0


@command("wc")
async def wc(p: Proc) -> int:
    flags = set("".join(a[1:] for a in p.args if a.startswith("-") and len(a) > 1))
    files = [a for a in p.args if not a.startswith("-") or a == "-"]
    sources, code = _input_lines(p, files, "wc")
    for fname, data in sources:
        counts = []
        if not flags or "l" in flags:
            counts.append(data.count(b"\n"))
        if not flags or "w" in flags:
            counts.append(len(data.split()))
        if not flags or "c" in flags or "m" in flags:
            counts.append(len(data))
        if len(counts) == 1 and not fname:
            p.write(f"{counts[0]}\n")
        else:
            p.write(" ".join(f"{c:>7}" for c in counts) + (f" {fname}" if fname else "") + "\n")
    return 1 if code else 0


@command("sort")
async def sort(p: Proc) -> int:
    flags = set("".join(a[1:] for a in p.args if a.startswith("-") and len(a) > 1))
    files = [a for a in p.args if not a.startswith("-")]
    sources, code = _input_lines(p, files, "sort")
    lines = [ln for _, d in sources for ln in d.decode("utf-8", "replace").splitlines()]
    if "n" in flags:
        def key(s: str) -> float:
            m = re.match(r"\s*-?\d+(\.\d+)?", s)
            return float(m.group()) if m else 0.0
        lines.sort(key=key, reverse="r" in flags)
    else:
        lines.sort(reverse="r" in flags)
    if "u" in flags:
        lines = list(dict.fromkeys(lines))
    p.write("".join(ln + "\n" for ln in lines))
    return 1 if code else 0
