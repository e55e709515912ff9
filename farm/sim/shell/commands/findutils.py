"""toybox ``find``, ``xargs``, ``timeout`` and ``df``.

``xargs`` and ``timeout`` run other commands through the same dispatch the shell
uses (builtins included), so ``timeout 5 sh -c …`` and ``… | xargs rm`` behave as
on a phone; ``timeout`` answers 124 when the limit cuts the command off.
"""

from __future__ import annotations

import asyncio
import fnmatch
import posixpath
import re

from farm.sim.shell.commands.registry import command, lookup
from farm.sim.shell.context import ExitShell, Proc

MAX_TIMEOUT_S = 60.0  # longer limits are clamped; sim commands never need more
MAX_XARGS_RUNS = 10_000


# -- find ------------------------------------------------------------------------------
class _FindError(Exception):
    pass


def _find_tests(expr: list[str]) -> tuple[list[tuple[str, str]], int | None, int]:
    """(tests, maxdepth, mindepth); tests are (op, arg) ANDed together."""
    tests: list[tuple[str, str]] = []
    maxdepth: int | None = None
    mindepth = 0
    i = 0
    while i < len(expr):
        op = expr[i]
        if op in ("-print", "-print0", "-a", "-and"):
            if op == "-print0":
                tests.append(("print0", ""))
            i += 1
            continue
        if op in ("-name", "-iname", "-type", "-path", "-maxdepth", "-mindepth", "-size",
                  "-newer", "-user", "-perm"):
            if i + 1 >= len(expr):
                raise _FindError(f"'{op}' needs 1 arg")
            arg = expr[i + 1]
            if op in ("-maxdepth", "-mindepth"):
                if not arg.isdecimal():
                    raise _FindError(f"not integer '{arg}'")
                if op == "-maxdepth":
                    maxdepth = int(arg)
                else:
                    mindepth = int(arg)
            elif op == "-type" and arg not in ("f", "d", "l", "b", "c", "p", "s"):
                raise _FindError(f"bad -type '{arg}'")
            else:
                tests.append((op[1:], arg))
            i += 2
            continue
        if op in ("-o", "-or", "!", "-not", "(", ")", "-exec", "-delete"):
            raise _FindError(f"'{op}' is not supported here")
        raise _FindError(f"bad arg '{op}'")
    return tests, maxdepth, mindepth


def _size_ok(size: int, spec: str) -> bool:
    m = re.fullmatch(r"([+-]?)(\d+)([ckMG]?)", spec)
    if m is None:
        raise _FindError(f"bad -size '{spec}'")
    unit = {"": 512, "c": 1, "k": 1024, "M": 1 << 20, "G": 1 << 30}[m.group(3)]
    n = int(m.group(2))
    blocks = -(-size // unit)
    return blocks > n if m.group(1) == "+" else blocks < n if m.group(1) == "-" else blocks == n


@command("find")
async def find(p: Proc) -> int:
    args = p.args
    split = next((i for i, a in enumerate(args) if a.startswith("-") or a in ("!", "(")),
                 len(args))
    roots = args[:split] or ["."]
    try:
        tests, maxdepth, mindepth = _find_tests(args[split:])
    except _FindError as e:
        p.error(f"find: {e}\n")
        return 1
    vfs = p.phone.vfs
    sep = "\0" if any(op == "print0" for op, _ in tests) else "\n"
    code = 0
    out: list[str] = []
    for root in roots:
        top = p.path(root)
        if not vfs.exists(top):
            p.error(f"find: {root}: No such file or directory\n")
            code = 1
            continue
        stack: list[tuple[str, str, int]] = [(top, root, 0)]
        while stack:
            path, shown, depth = stack.pop()
            s = vfs.stat(path)
            if s is None:
                continue
            try:
                ok = depth >= mindepth and all(_find_match(op, arg, path, shown, s.is_dir,
                                                           s.size, p) for op, arg in tests)
            except _FindError as e:
                p.error(f"find: {e}\n")
                return 1
            if ok:
                out.append(shown + sep)
            if s.is_dir and (maxdepth is None or depth < maxdepth):
                children = vfs.listdir(path)
                for name, _ in reversed(children):
                    stack.append((posixpath.join(path, name),
                                  shown.rstrip("/") + "/" + name if shown != "/" else "/" + name,
                                  depth + 1))
    p.write("".join(out))
    return code


def _find_match(op: str, arg: str, path: str, shown: str, is_dir: bool, size: int,
                p: Proc) -> bool:
    base = posixpath.basename(shown.rstrip("/")) or shown
    if op == "name":
        return fnmatch.fnmatchcase(base, arg)
    if op == "iname":
        return fnmatch.fnmatchcase(base.lower(), arg.lower())
    if op == "path":
        return fnmatch.fnmatchcase(shown, arg)
    if op == "type":
        return (arg == "d") == is_dir and arg in ("f", "d")
    if op == "size":
        return _size_ok(size, arg)
    if op == "newer":
        ref = p.phone.vfs.stat(p.path(arg))
        if ref is None:
            raise _FindError(f"{arg}: No such file or directory")
        s = p.phone.vfs.stat(path)
        return s is not None and s.mtime > ref.mtime
    if op == "user":
        return True
    return op in ("print0", "perm")


# -- running other commands -------------------------------------------------------------
async def run_argv(p: Proc, argv: list[str], stdin: bytes) -> int:
    """Run ``argv`` as the shell would (builtin or registered command) into p's sinks."""
    from farm.sim.shell.interp import BUILTINS  # the interpreter imports the commands

    name = argv[0]
    handler = BUILTINS.get(name)
    if handler is None:
        spec = lookup(name)
        if spec is None:
            p.error(f"{p.name}: {name}: No such file or directory\n")
            return 127
        handler = spec.handler
    sub = Proc(p.session, argv, stdin, p.out, p.err)
    try:
        return (await handler(sub)) & 0xFF
    except ExitShell as e:
        return e.code & 0xFF


def _duration(text: str) -> float | None:
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)", text)
    if m is None:
        return None
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


@command("timeout")
async def timeout(p: Proc) -> int:
    args = list(p.args)
    preserve = False
    while args and args[0].startswith("-") and len(args[0]) > 1:
        opt = args.pop(0)
        if opt in ("-s", "-k") and args:
            args.pop(0)
        elif opt == "--preserve-status":
            preserve = True
        elif opt not in ("-v", "--foreground"):
            p.error(f"timeout: Unknown option '{opt.lstrip('-')}'\n")
            return 125
    if len(args) < 2:
        p.error("timeout: Need 2 arguments\n")
        return 125
    limit = _duration(args[0])
    if limit is None:
        p.error(f"timeout: bad duration '{args[0]}'\n")
        return 125
    try:
        return await asyncio.wait_for(run_argv(p, args[1:], p.stdin),
                                      min(limit, MAX_TIMEOUT_S) if limit else None)
    except TimeoutError:
        return 143 if preserve else 124


@command("xargs")
async def xargs(p: Proc) -> int:
    args = list(p.args)
    per_run = 0
    replace: str | None = None
    delim: str | None = None
    skip_empty = False
    while args and args[0].startswith("-") and len(args[0]) > 1:
        opt = args.pop(0)
        if opt in ("-n", "-I", "-d", "-s", "-P", "-L") and args:
            value = args.pop(0)
            if opt in ("-n", "-L"):
                if not value.isdecimal() or int(value) < 1:
                    p.error(f"xargs: bad {opt} '{value}'\n")
                    return 1
                per_run = int(value)
            elif opt == "-I":
                replace = value
            elif opt == "-d":
                delim = value.encode().decode("unicode_escape") if value else None
        elif opt.startswith("-n") and opt[2:].isdecimal():
            per_run = int(opt[2:])
        elif opt == "-0":
            delim = "\0"
        elif opt in ("-r", "--no-run-if-empty"):
            skip_empty = True
        elif opt in ("-t", "-x", "-p"):
            pass
        else:
            p.error(f"xargs: Unknown option '{opt.lstrip('-')}'\n")
            return 1
    command_argv = args or ["echo"]
    text = p.stdin.decode("utf-8", "replace")
    if replace is not None:
        items = [ln for ln in text.split("\n") if ln]
    elif delim is not None:
        items = [x for x in text.split(delim) if x]
    else:
        items = text.split()
    if not items and skip_empty:
        return 0
    runs: list[list[str]]
    if replace is not None:
        runs = [[a.replace(replace, item) for a in command_argv] for item in items]
    elif per_run:
        runs = [command_argv + items[i:i + per_run] for i in range(0, len(items), per_run)]
    else:
        runs = [command_argv + items]
    if not runs:
        runs = [list(command_argv)]
    code = 0
    for argv in runs[:MAX_XARGS_RUNS]:
        rc = await run_argv(p, argv, b"")
        if rc == 127:
            return 127
        if rc == 255:
            p.error(f"xargs: {argv[0]}: exited with status 255; aborting\n")
            return 124
        if rc:
            code = 123
    return code


# -- df ----------------------------------------------------------------------------------
@command("df")
async def df(p: Proc) -> int:
    """toybox df: the mounts adb users look at; /data (and /sdcard on it) is the VFS."""
    human = any(a.startswith("-") and "h" in a for a in p.args)
    paths = [a for a in p.args if not a.startswith("-")]
    vfs = p.phone.vfs
    data_total = vfs.capacity // 1024
    data_used = vfs.used_bytes // 1024
    mounts = [
        ("/dev/block/dm-4", 2_916_900, 2_906_932, "/"),
        ("tmpfs", 3_941_176, 1_204, "/dev"),
        ("tmpfs", 3_941_176, 0, "/mnt"),
        ("/dev/block/dm-5", 243_068, 242_308, "/system_ext"),
        ("/dev/block/dm-6", 3_244_352, 3_233_992, "/product"),
        ("/dev/block/dm-7", 675_200, 672_924, "/vendor"),
        ("/dev/block/dm-40", data_total, data_used, "/data"),
        ("/dev/fuse", data_total, data_used, "/storage/emulated"),
    ]
    if paths:
        picked = []
        for a in paths:
            path = p.path(a)
            if not vfs.exists(path) and path != "/":
                p.error(f"df: {a}: No such file or directory\n")
                continue
            if path.startswith(("/sdcard", "/storage")):
                mount = "/storage/emulated"
            else:
                mount = max((m[3] for m in mounts if path == m[3] or path.startswith(
                    m[3].rstrip("/") + "/")), key=len, default="/")
            picked += [m for m in mounts if m[3] == mount]
        mounts = picked
    if human:
        p.write("Filesystem        Size  Used Avail Use% Mounted on\n")
    else:
        p.write("Filesystem        1K-blocks    Used Available Use% Mounted on\n")
    for fs, total, used, where in mounts:
        avail = max(total - used, 0)
        pct = f"{-(-used * 100 // total) if total else 0}%"
        if human:
            p.write(f"{fs:<16} {_h(total):>5} {_h(used):>5} {_h(avail):>5} {pct:>4} {where}\n")
        else:
            p.write(f"{fs:<16} {total:>10} {used:>7} {avail:>9} {pct:>4} {where}\n")
    return 0 if mounts or not paths else 1


def _h(kib: int) -> str:
    size = float(kib)
    for unit in ("K", "M", "G", "T"):
        if size < 1024 or unit == "T":
            return f"{size:.1f}{unit}" if size < 10 and unit != "K" else f"{size:.0f}{unit}"
        size /= 1024
    return f"{size:.0f}T"
