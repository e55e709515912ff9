"""File commands on the virtual filesystem: echo, cat, ls, rm, mkdir, touch, cp, mv, test.

Error texts follow toybox, Android's coreutils.
"""

from __future__ import annotations

import posixpath
import stat as st
import time

from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import Proc
from farm.sim.vfs import Stat

_ECHO_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "a": "\a", "b": "\b", "r": "\r",
                 "v": "\v", "f": "\f", "e": "\x1b"}


def _unescape(s: str) -> tuple[str, bool]:
    """echo -e: returns (text, stop) where stop means ``\\c`` cut the output."""
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n == "c":
                return "".join(out), True
            if n in _ECHO_ESCAPES:
                out.append(_ECHO_ESCAPES[n])
                i += 2
                continue
        out.append(c)
        i += 1
    return "".join(out), False


@command("echo")
async def echo(p: Proc) -> int:
    args = p.args
    newline = True
    escapes = False
    while args and len(args[0]) > 1 and args[0][0] == "-" and set(args[0][1:]) <= set("neE"):
        newline = newline and "n" not in args[0]
        escapes = "e" in args[0] or (escapes and "E" not in args[0])
        args = args[1:]
    text = " ".join(args)
    if escapes:
        text, stop = _unescape(text)
        if stop:
            newline = False
    p.write(text + ("\n" if newline else ""))
    return 0


@command("cat")
async def cat(p: Proc) -> int:
    files = [a for a in p.args if a == "-" or not a.startswith("-")]
    if not files:
        p.write(p.stdin)
        return 0
    code = 0
    for f in files:
        if f == "-":
            p.write(p.stdin)
            continue
        try:
            p.write(p.phone.vfs.read(p.path(f)))
        except OSError as e:
            p.error(f"cat: {f}: {e.strerror}\n")
            code = 1
    return code


def _flags(args: list[str], known: str) -> tuple[set[str], list[str]]:
    flags: set[str] = set()
    rest: list[str] = []
    for i, a in enumerate(args):
        if a == "--":
            rest.extend(args[i + 1:])
            break
        if len(a) > 1 and a[0] == "-" and not rest:
            flags.update(c for c in a[1:] if c in known)
        else:
            rest.append(a)
    return flags, rest


@command("rm")
async def rm(p: Proc) -> int:
    flags, files = _flags(p.args, "frRdiv")
    force, recursive = "f" in flags, bool(flags & {"r", "R"})
    if not files:
        if force:
            return 0
        p.error("rm: Needs 1 argument (see \"rm --help\")\n")
        return 1
    code = 0
    vfs = p.phone.vfs
    for f in files:
        path = p.path(f)
        if not vfs.exists(path):
            if not force:
                p.error(f"rm: {f}: No such file or directory\n")
                code = 1
            continue
        if vfs.is_dir(path) and not recursive:
            p.error(f"rm: {f}: Is a directory\n")
            code = 1
            continue
        try:
            vfs.remove(path, recursive=recursive)
        except OSError as e:
            p.error(f"rm: {f}: {e.strerror}\n")
            code = 1
    return code


@command("mkdir")
async def mkdir(p: Proc) -> int:
    flags, dirs = _flags(p.args, "pv")
    if not dirs:
        p.error("mkdir: Needs 1 argument (see \"mkdir --help\")\n")
        return 1
    code = 0
    for d in dirs:
        try:
            p.phone.vfs.mkdir(p.path(d), parents="p" in flags)
        except OSError as e:
            p.error(f"mkdir: '{d}': {e.strerror}\n")
            code = 1
    return code


@command("touch")
async def touch(p: Proc) -> int:
    _, files = _flags(p.args, "acm")
    code = 0
    vfs = p.phone.vfs
    for f in files:
        path = p.path(f)
        try:
            if vfs.exists(path):
                if not vfs.is_dir(path):
                    vfs.write(path, b"", append=True)
            else:
                vfs.write(path, b"")
        except OSError as e:
            p.error(f"touch: '{f}': {e.strerror}\n")
            code = 1
    return code


async def _copy(p: Proc, move: bool) -> int:
    name = "mv" if move else "cp"
    _, args = _flags(p.args, "rRfpainv")
    if len(args) < 2:
        p.error(f"{name}: Needs 2 arguments (see \"{name} --help\")\n")
        return 1
    vfs = p.phone.vfs
    *srcs, dst = args
    dst_path = p.path(dst)
    code = 0
    for s in srcs:
        src_path = p.path(s)
        target = posixpath.join(dst_path, posixpath.basename(src_path)) if vfs.is_dir(
            dst_path) else dst_path
        try:
            if vfs.is_dir(src_path):
                for f in list(vfs.walk_files(src_path)):
                    rel = posixpath.relpath(f, src_path)
                    vfs.write(posixpath.join(target, rel), vfs.read(f), make_parents=True)
                vfs.mkdir(target, parents=True)
            else:
                vfs.write(target, vfs.read(src_path))
            if move:
                vfs.remove(src_path, recursive=True)
        except OSError as e:
            p.error(f"{name}: '{s}': {e.strerror}\n")
            code = 1
    return code


@command("cp")
async def cp(p: Proc) -> int:
    return await _copy(p, move=False)


@command("mv")
async def mv(p: Proc) -> int:
    return await _copy(p, move=True)


def _mode_string(s: Stat) -> str:
    return st.filemode(s.mode)


def _long(name: str, s: Stat) -> str:
    owner = "root" if s.is_dir else "shell"
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(s.mtime))
    return f"{_mode_string(s)} {2 if s.is_dir else 1} {owner} {owner} {s.size:>5} {when} {name}"


@command("ls")
async def ls(p: Proc) -> int:
    flags, paths = _flags(p.args, "laA1RdhtrsSn")
    paths = paths or ["."]
    vfs = p.phone.vfs
    code = 0
    multi = len(paths) > 1
    for n, arg in enumerate(paths):
        path = p.path(arg)
        s = vfs.stat(path)
        if s is None:
            p.error(f"ls: {arg}: No such file or directory\n")
            code = 1
            continue
        if not s.is_dir or "d" in flags:
            p.write((_long(arg, s) if "l" in flags else arg) + "\n")
            continue
        entries = vfs.listdir(path)
        if "a" not in flags and "A" not in flags:
            entries = [(nm, es) for nm, es in entries if not nm.startswith(".")]
        if multi:
            p.write(("\n" if n else "") + f"{arg}:\n")
        if "l" in flags:
            total = sum((es.size + 1023) // 1024 for _, es in entries)
            p.write(f"total {total}\n")
            if "a" in flags:
                p.write(_long(".", s) + "\n" + _long("..", s) + "\n")
            for nm, es in entries:
                p.write(_long(nm, es) + "\n")
        else:
            names = ([".", ".."] if "a" in flags else []) + [nm for nm, _ in entries]
            p.write("".join(nm + "\n" for nm in names))
    return code


@command("chmod", "chown", "chgrp", "sync", "restorecon")
async def accept(p: Proc) -> int:
    return 0


def _owner(path: str, s: Stat) -> tuple[str, int]:
    """Who owns a path, as ``ls -l`` shows it (files the shell made are shell's)."""
    if path.startswith(("/sdcard", "/storage")):
        return "root", 0
    return ("root", 0) if s.is_dir else ("shell", 2000)


def _stat_format(fmt: str, shown: str, path: str, s: Stat) -> str:
    """``stat -c``: toybox's %-sequences (unknown ones are printed as ``?``)."""
    owner, uid = _owner(path, s)
    group, gid = ("everybody", 9997) if path.startswith(("/sdcard", "/storage")) else (
        owner, uid)
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(s.mtime)) + ".000000000 +0000"
    kind = "directory" if s.is_dir else ("regular file" if s.size else "regular empty file")
    table = {
        "n": shown, "N": f"'{shown}'", "s": str(s.size), "a": f"{s.mode & 0o7777:o}",
        "A": _mode_string(s), "F": kind, "U": owner, "G": group, "u": str(uid),
        "g": str(gid), "i": str(s.ino), "h": "2" if s.is_dir else "1",
        "b": str((s.size + 511) // 512), "B": "512", "o": "4096", "Y": str(s.mtime),
        "X": str(s.mtime), "Z": str(s.mtime), "y": when, "x": when, "z": when, "t": "0",
        "T": "0", "d": "64821", "D": "fd35", "f": f"{s.mode:x}", "%": "%",
    }
    out: list[str] = []
    i = 0
    while i < len(fmt):
        c = fmt[i]
        if c == "%" and i + 1 < len(fmt):
            out.append(table.get(fmt[i + 1], "?"))
            i += 2
            continue
        if c == "\\" and i + 1 < len(fmt):
            out.append({"n": "\n", "t": "\t", "\\": "\\"}.get(fmt[i + 1], fmt[i + 1]))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


@command("stat")
async def stat_cmd(p: Proc) -> int:
    code = 0
    fmt: str | None = None
    names: list[str] = []
    args = p.args
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-c", "--format") and i + 1 < len(args):
            fmt = args[i + 1]
            i += 2
            continue
        if a.startswith("-c") and len(a) > 2:
            fmt = a[2:]
        elif a.startswith("--format="):
            fmt = a[len("--format="):]
        elif a == "-c":
            p.error("stat: -c needs 1 arg\n")
            return 1
        elif not a.startswith("-"):
            names.append(a)
        i += 1
    if not names:
        p.error("stat: Need 1 argument\n")
        return 1
    for f in names:
        path = p.path(f)
        s = p.phone.vfs.stat(path)
        if s is None:
            p.error(f"stat: '{f}': No such file or directory\n")
            code = 1
            continue
        if fmt is not None:
            p.write(_stat_format(fmt, f, path, s) + "\n")
            continue
        kind = "directory" if s.is_dir else "regular file"
        p.write(f"  File: {f}\n  Size: {s.size}\t Blocks: {(s.size + 511) // 512}\t "
                f"IO Blocks: 512\t{kind}\nAccess: ({s.mode & 0o7777:04o}/{_mode_string(s)})\n")
    return code


def _test(p: Proc, args: list[str]) -> bool:
    vfs = p.phone.vfs
    if not args:
        return False
    if args[0] == "!":
        return not _test(p, args[1:])
    if len(args) == 1:
        return args[0] != ""
    if len(args) == 2:
        op, a = args
        if op == "-n":
            return a != ""
        if op == "-z":
            return a == ""
        s = vfs.stat(p.path(a))
        if op == "-e":
            return s is not None
        if op == "-f":
            return s is not None and s.is_file
        if op == "-d":
            return s is not None and s.is_dir
        if op == "-s":
            return s is not None and s.size > 0
        if op in ("-r", "-w", "-x"):
            return s is not None
        return False
    a, op, b = args[0], args[1], args[2]
    if op in ("=", "=="):
        return a == b
    if op == "!=":
        return a != b
    try:
        x, y = int(a), int(b)
    except ValueError:
        return False
    return {"-eq": x == y, "-ne": x != y, "-gt": x > y, "-ge": x >= y, "-lt": x < y,
            "-le": x <= y}.get(op, False)


@command("test", "[")
async def test(p: Proc) -> int:
    args = list(p.args)
    if p.name == "[":
        if not args or args[-1] != "]":
            p.error("[: missing ]\n")
            return 2
        args = args[:-1]
    return 0 if _test(p, args) else 1
