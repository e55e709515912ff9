"""Runs a parsed command line: expansion, redirects, pipelines, ``&&``/``||``, builtins.

Every command's stdout is a list of chunks (``Sink``) so a 10 MB raw frame flows from
the world to the protocol layer without being copied, unless it is piped or
redirected to a file.
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from farm.sim.profiles import CommandKind
from farm.sim.shell.commands.registry import REGISTRY, Handler, lookup
from farm.sim.shell.context import ExitShell, Proc, Session, Sink, enc
from farm.sim.shell.parser import (
    CMDSUB,
    LIT,
    QCMDSUB,
    QVAR,
    VAR,
    AndOr,
    Group,
    Pipeline,
    Redirect,
    ShellSyntaxError,
    SimpleCommand,
    Word,
    parse,
)

log = logging.getLogger(__name__)

SH = "/system/bin/sh"
MAX_DEPTH = 16  # $(…), ( … ) and sh -c nesting at run time
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_FRAME_KINDS = (CommandKind.SCREENCAP_RAW, CommandKind.SCREENCAP_PNG)

# fd targets: stdout of the enclosing context, its stderr, /dev/null, or a file
_OUT, _ERR, _NULL = ("o", ""), ("e", ""), ("n", "")
Target = tuple[str, str]


# -- latency -----------------------------------------------------------------------
async def pay_latency(session: Session, kind: CommandKind) -> None:
    """Sleep what a real phone would take; cheap commands pay once per command line.

    With the ``instant`` profile and no slow-frames fault nothing is awaited at all.
    """
    if kind is CommandKind.SHELL and session.slept:
        return
    session.slept = True
    phone = session.phone
    delay = phone.profile.delay(kind, phone.rng)
    if kind in _FRAME_KINDS:
        delay += phone.faults.frame_delay()
    if delay > 0:
        await asyncio.sleep(delay)


# -- expansion ---------------------------------------------------------------------
def _var(session: Session, name: str) -> str:
    if name == "?":
        return str(session.status)
    if name == "$":
        return str(session.pid)
    if name == "!":
        return session.vars.get("!", "")
    if name == "#":
        return "0"
    if name == "0":
        return SH
    return session.vars.get(name, "")


async def _cmdsub(session: Session, src: str) -> str:
    if session.depth >= MAX_DEPTH:
        return ""
    sub = session.subshell()
    out: Sink = []
    err: list[bytes] = []
    try:
        script = parse(src)
        await run_script(script, sub, b"", out, err)
    except ShellSyntaxError:
        pass
    except ExitShell:
        pass
    text = b"".join(bytes(c) for c in out).decode("utf-8", "replace")
    return text.rstrip("\n")


async def expand(word: Word, session: Session) -> list[str]:
    """Fields of one word: quotes removed, variables and $(…) substituted and split."""
    lit = word.literal
    if lit is not None and not word.glob:
        return [lit]
    fields: list[str] = []
    cur = ""
    has = False
    for kind, text in word.parts:
        if kind in (VAR, CMDSUB):
            val = _var(session, text) if kind == VAR else await _cmdsub(session, text)
            if not val:
                continue
            toks = val.split()
            if val[0].isspace() and has:
                fields.append(cur)
                cur, has = "", False
            for j, tok in enumerate(toks):
                if j:
                    fields.append(cur)
                    cur = ""
                cur += tok
                has = True
            if val[-1].isspace() and has:
                fields.append(cur)
                cur, has = "", False
        else:
            if kind == QVAR:
                text = _var(session, text)
            elif kind == QCMDSUB:
                text = await _cmdsub(session, text)
            cur += text
            has = True
    if has:
        fields.append(cur)
    if word.glob:
        globbed: list[str] = []
        for f in fields:
            globbed.extend(_glob(f, session))
        return globbed
    return fields


async def expand_one(word: Word, session: Session) -> str:
    """A word that must stay one string (redirect targets, assignments)."""
    lit = word.literal
    if lit is not None:
        return lit
    parts: list[str] = []
    for kind, text in word.parts:
        if kind in (VAR, QVAR):
            parts.append(_var(session, text))
        elif kind in (CMDSUB, QCMDSUB):
            parts.append(await _cmdsub(session, text))
        else:
            parts.append(text)
    return "".join(parts)


def _glob(pattern: str, session: Session) -> list[str]:
    """Match ``pattern`` against the virtual filesystem; no match keeps it as-is."""
    if not any(c in pattern for c in "*?["):
        return [pattern]
    vfs = session.phone.vfs
    absolute = pattern.startswith("/")
    base = "/" if absolute else session.cwd
    comps = [c for c in pattern.split("/") if c]
    if len(comps) > 64:
        return [pattern]
    paths = [""]
    for i, comp in enumerate(comps):
        last = i == len(comps) - 1
        nxt: list[str] = []
        for p in paths:
            full = posixpath.join(base, p) if p else base
            if not any(c in comp for c in "*?["):
                cand = posixpath.join(p, comp) if p else comp
                if vfs.exists(posixpath.join(base, cand)):
                    nxt.append(cand)
                continue
            if not vfs.is_dir(full):
                continue
            for name, st in vfs.listdir(full):
                if name.startswith(".") and not comp.startswith("."):
                    continue
                if fnmatch.fnmatchcase(name, comp) and (last or st.is_dir):
                    nxt.append(posixpath.join(p, name) if p else name)
        paths = nxt
        if not paths:
            return [pattern]
    return sorted(("/" + p) if absolute else p for p in paths)


# -- redirects -----------------------------------------------------------------------
def _resolve(session: Session, path: str) -> str:
    if not path.startswith("/"):
        path = posixpath.join(session.cwd, path)
    return posixpath.normpath(path) if path != "/" else "/"


async def _setup_redirects(redirects: tuple[Redirect, ...], session: Session, stdin: bytes,
                           err: list[bytes]) -> tuple[bytes, dict[int, Target]] | None:
    """Open every redirect in order; None (after printing why) if one fails."""
    fds: dict[int, Target] = {1: _OUT, 2: _ERR}
    vfs = session.phone.vfs
    for r in redirects:
        text = await expand_one(r.target, session)
        if r.op == "<":
            path = _resolve(session, text)
            try:
                stdin = b"" if path == "/dev/null" else vfs.read(path)
            except OSError as e:
                err.append(enc(f"{SH}: can't open {text}: {e.strerror}\n"))
                return None
        elif r.op in (">", ">>"):
            path = _resolve(session, text)
            if path == "/dev/null":
                target = _NULL
            elif path in ("/dev/stdout", "/dev/tty"):
                target = _OUT
            elif path == "/dev/stderr":
                target = _ERR
            else:
                try:
                    vfs.write(path, b"", append=r.op == ">>")
                except OSError as e:
                    err.append(enc(f"{SH}: can't create {text}: {e.strerror}\n"))
                    return None
                target = ("f", path)
            fds[r.fd] = target
        elif r.op == ">&":
            if text == "-":
                fds[r.fd] = _NULL
            elif text.isdecimal() and int(text) in fds:
                fds[r.fd] = fds[int(text)]
            elif text.isdecimal():
                err.append(enc(f"{SH}: {text}: bad file descriptor\n"))
                return None
            else:
                err.append(enc(f"{SH}: {text}: illegal file descriptor name\n"))
                return None
        # '<&' (dup of an input fd) has nothing to do here
    return stdin, fds


def _route(chunks: Sequence[bytes | memoryview], target: Target, session: Session, out: Sink,
           err: list[bytes]) -> None:
    if not chunks:
        return
    kind = target[0]
    if kind == "o":
        out.extend(chunks)
    elif kind == "e":
        err.extend(bytes(c) for c in chunks)
    elif kind == "f":
        try:
            session.phone.vfs.write(target[1], b"".join(bytes(c) for c in chunks), append=True)
        except OSError as e:
            err.append(enc(f"{SH}: write error: {e.strerror}\n"))


class _Forward(list[Any]):
    """A write-through sink: each chunk goes to its redirect target as it is written.

    Commands only ever append to their sinks, so routing at write time (rather than
    when the command ends) keeps ``2>&1`` interleaved and lets output stream out.
    """

    __slots__ = ("_put",)

    def __init__(self, put: Callable[[bytes | memoryview], None]) -> None:
        super().__init__()
        self._put = put

    def append(self, chunk: bytes | memoryview) -> None:
        self._put(chunk)

    def extend(self, chunks: Iterable[bytes | memoryview]) -> None:
        for chunk in chunks:
            self._put(chunk)


def _drop(_chunk: bytes | memoryview) -> None:
    pass


def _sink(target: Target, session: Session, out: Sink, err: list[bytes]) -> list[Any]:
    """Where one redirected fd writes: the caller's stdout/stderr, nowhere, or a file."""
    kind = target[0]
    if kind == "o":
        return out
    if kind == "e":
        return err
    if kind == "n":
        return _Forward(_drop)
    path = target[1]
    vfs = session.phone.vfs

    def to_file(chunk: bytes | memoryview) -> None:
        try:
            vfs.write(path, bytes(chunk), append=True)
        except OSError as e:
            err.append(enc(f"{SH}: write error: {e.strerror}\n"))

    return _Forward(to_file)


def _sinks(fds: dict[int, Target], session: Session, out: Sink,
           err: list[bytes]) -> tuple[Sink, list[bytes]]:
    """stdout and stderr sinks for a command whose fds 1 and 2 were redirected."""
    pout, perr = _sink(fds[1], session, out, err), _sink(fds[2], session, out, err)
    if fds[1][0] == "e":  # stdout into stderr: stderr holds bytes only
        pout = _Forward(lambda c: err.append(bytes(c)))
    return pout, perr


# -- execution -----------------------------------------------------------------------
async def run_script(script: tuple[AndOr, ...], session: Session, stdin: bytes, out: Sink,
                     err: list[bytes]) -> int:
    code = session.status
    for item in script:
        if item.background:
            _start_job(item, session, out, err)
            code = 0
            continue
        code = await _run_and_or(item, session, stdin, out, err)
    return code


async def _run_and_or(item: AndOr, session: Session, stdin: bytes, out: Sink,
                      err: list[bytes]) -> int:
    code = await _run_pipeline(item.first, session, stdin, out, err)
    for op, pipeline in item.rest:
        if (op == "&&") == (code == 0):
            code = await _run_pipeline(pipeline, session, stdin, out, err)
    return code


def _start_job(item: AndOr, session: Session, out: Sink, err: list[bytes]) -> None:
    """``cmd &``: a job with its own pid (``$!``), in a subshell whose stdin is empty
    (a non-interactive shell's background job reads /dev/null); its output goes where
    the shell's does, as it is written."""
    pid = session.pid + 1
    while pid in session.jobs:
        pid += 1
    sub = session.subshell()
    sub.live_stdin = None

    async def job() -> int:
        try:
            return await _run_and_or(item, sub, b"", out, err)
        except ExitShell as e:
            return e.code & 0xFF

    session.jobs[pid] = (asyncio.get_running_loop().create_task(job()), sub)
    session.vars["!"] = str(pid)


async def wait_jobs(session: Session, pids: list[int] | None = None) -> int:
    """``wait``: until the jobs (all, or ``pids``) end; the last one's status (a job
    ended by a signal: 128 + its number, as sh reports)."""
    code = 0
    for pid in list(session.jobs) if pids is None else pids:
        job = session.jobs.get(pid)
        if job is None:
            code = 127
            continue
        task, sub = job
        try:
            code = await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.cancelled():
                raise  # this shell itself is being cancelled
            code = 128 + (sub.killed_by or 1)  # the signal that ended it (SIGHUP if unknown)
        session.jobs.pop(pid, None)
    return code


async def end_jobs(session: Session) -> None:
    """The command line ended: its jobs get SIGHUP and are waited for."""
    tasks = [task for task, _sub in session.jobs.values()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)
    session.jobs.clear()


async def _run_pipeline(p: Pipeline, session: Session, stdin: bytes, out: Sink,
                        err: list[bytes]) -> int:
    if len(p.commands) == 1:
        code = await _run_command(p.commands[0], session, stdin, out, err)
    else:
        data = stdin
        code = 0
        last = len(p.commands) - 1
        for i, cmd in enumerate(p.commands):
            sink: Sink = out if i == last else []
            try:  # each stage is its own process: exit only ends that stage
                code = await _run_command(cmd, session, data, sink, err)
            except ExitShell as e:
                code = e.code & 0xFF
            if i != last:
                data = b"".join(bytes(c) for c in sink)
    if p.negate:
        code = 0 if code else 1
    session.status = code
    return code


async def _run_command(cmd: SimpleCommand | Group, session: Session, stdin: bytes, out: Sink,
                       err: list[bytes]) -> int:
    if isinstance(cmd, Group):
        return await _run_group(cmd, session, stdin, out, err)
    argv: list[str] = []
    assigns: list[tuple[str, str]] = []
    for w in cmd.words:
        if not argv and w.parts and w.parts[0][0] == LIT and _ASSIGN.match(w.parts[0][1]):
            text = await expand_one(w, session)
            name, _, value = text.partition("=")
            assigns.append((name, value))
            continue
        argv.extend(await expand(w, session))
    opened = await _setup_redirects(cmd.redirects, session, stdin, err) if cmd.redirects else (
        stdin, None)
    if opened is None:
        return 1
    stdin, fds = opened
    if not argv:
        for name, value in assigns:
            session.vars[name] = value
        return 0
    name = argv[0]
    handler: Handler | None = BUILTINS.get(name)
    if handler is None:
        spec = lookup(name)
        await pay_latency(session, spec.kind(argv) if spec else CommandKind.SHELL)
        if spec is None:
            if "/" in name and session.phone.vfs.exists(_resolve(session, name)):
                msg, code = f"{SH}: {name}: can't execute: Permission denied\n", 126
            else:
                msg, code = f"{SH}: {name}: not found\n", 127
            if fds is None:
                err.append(enc(msg))
            else:
                _route([enc(msg)], fds[2], session, out, err)
            return code
        handler = spec.handler
    else:
        await pay_latency(session, CommandKind.SHELL)
    if fds is None:  # the common case: write straight into the caller's sinks
        return await _call(handler, Proc(session, argv, stdin, out, err))
    pout, perr = _sinks(fds, session, out, err)
    return await _call(handler, Proc(session, argv, stdin, pout, perr))


async def _call(handler: Handler, proc: Proc) -> int:
    try:
        return (await handler(proc)) & 0xFF
    except ExitShell:
        raise
    except Exception as e:  # a bug in one command must not take the shell down
        log.exception("shell command %r crashed", proc.argv)
        proc.error(f"{proc.name}: {type(e).__name__}: {e}\n")
        return 1


async def _run_group(g: Group, session: Session, stdin: bytes, out: Sink,
                     err: list[bytes]) -> int:
    opened = await _setup_redirects(g.redirects, session, stdin, err)
    if opened is None:
        return 1
    stdin, fds = opened
    if session.depth >= MAX_DEPTH:
        err.append(enc(f"{SH}: subshell nesting too deep\n"))
        return 2
    sub = session.subshell()
    pout, perr = _sinks(fds, session, out, err)
    try:
        code = await run_script(g.body, sub, stdin, pout, perr)
    except ExitShell as e:
        code = e.code & 0xFF
    return code


async def run_source(src: str, session: Session, stdin: bytes, out: Sink,
                     err: list[bytes], name: str = SH) -> int:
    """Parse and run ``src`` in ``session`` (``sh -c``, ``eval``, ``.``)."""
    if session.depth >= MAX_DEPTH:
        err.append(enc(f"{name}: nesting too deep\n"))
        return 2
    try:
        script = parse(src)
    except ShellSyntaxError as e:
        err.append(enc(f"{name}: {e.message}\n"))
        return 2
    return await run_script(script, session, stdin, out, err)


# -- builtins (need the session itself, not just a Proc's view of it) ----------------
async def _b_cd(p: Proc) -> int:
    target = p.args[0] if p.args else p.session.vars.get("HOME", "/")
    path = p.path(target)
    if not p.phone.vfs.exists(path):
        p.error(f"{SH}: cd: {target}: No such file or directory\n")
        return 2
    if not p.phone.vfs.is_dir(path):
        p.error(f"{SH}: cd: {target}: Not a directory\n")
        return 2
    p.session.cwd = path
    p.session.vars["PWD"] = path
    return 0


async def _b_pwd(p: Proc) -> int:
    p.write(p.session.cwd + "\n")
    return 0


async def _b_exit(p: Proc) -> int:
    code = p.session.status
    if p.args:
        try:
            code = int(p.args[0])
        except ValueError:
            p.error(f"{SH}: exit: {p.args[0]}: bad number\n")
            code = 2
    raise ExitShell(code & 0xFF)


async def _b_export(p: Proc) -> int:
    for a in p.args:
        name, eq, value = a.partition("=")
        if eq:
            p.session.vars[name] = value
    return 0


async def _b_unset(p: Proc) -> int:
    for a in p.args:
        p.session.vars.pop(a, None)
    return 0


async def _b_colon(p: Proc) -> int:
    return 0


async def _b_sh(p: Proc) -> int:
    args = p.args
    sub = p.session.subshell()
    try:
        if args and args[0] == "-c":
            if len(args) < 2:
                p.error(f"{SH}: -c: option requires an argument\n")
                return 1
            return await run_source(args[1], sub, p.stdin, p.out, p.err)
        if args and not args[0].startswith("-"):
            try:
                src = p.phone.vfs.read(p.path(args[0])).decode("utf-8", "replace")
            except OSError as e:
                p.error(f"{SH}: {args[0]}: {e.strerror}\n")
                return 127
            sub.vars.update({str(i): a for i, a in enumerate(args[1:], 1)})  # $1 …
            return await run_source(src, sub, b"", p.out, p.err)
        # `sh` reading its script from stdin, as `adb exec-in sh < script` does
        return await run_source(p.stdin.decode("utf-8", "replace"), sub, b"", p.out, p.err)
    except ExitShell as e:
        return e.code


async def _b_eval(p: Proc) -> int:
    return await run_source(" ".join(p.args), p.session.subshell(), p.stdin, p.out, p.err)


async def _b_source(p: Proc) -> int:
    if not p.args:
        return 0
    try:
        src = p.phone.vfs.read(p.path(p.args[0])).decode("utf-8", "replace")
    except OSError as e:
        p.error(f"{SH}: .: {p.args[0]}: {e.strerror}\n")
        return 1
    return await run_source(src, p.session, p.stdin, p.out, p.err)


async def _b_command(p: Proc) -> int:
    args = p.args
    if args and args[0] in ("-v", "-V"):
        code = 0
        for name in args[1:]:
            if name in BUILTINS:
                p.write(name + "\n")
            elif lookup(name) is not None:
                p.write(f"/system/bin/{posixpath.basename(name)}\n")
            else:
                code = 1
        return code
    if not args:
        return 0
    return await _dispatch(Proc(p.session, args, p.stdin, p.out, p.err))


async def _dispatch(p: Proc) -> int:
    spec = REGISTRY.get(p.name)
    if spec is None:
        p.error(f"{SH}: {p.name}: not found\n")
        return 127
    return await _call(spec.handler, p)


async def _b_wait(p: Proc) -> int:
    try:
        pids = [int(a) for a in p.args] or None
    except ValueError:
        p.error(f"{SH}: wait: {p.args[0]}: invalid pid\n")
        return 2
    return await wait_jobs(p.session, pids)


async def _b_read(p: Proc) -> int:
    """``read [-r] NAME…``: one line from stdin (a pipe's, else the stream's as it
    arrives), split on blanks into the names (the last takes the rest); 1 at EOF."""
    names = [a for a in p.args if a != "-r"] or ["REPLY"]
    if p.stdin:
        line = p.stdin.split(b"\n", 1)[0] + (b"\n" if b"\n" in p.stdin else b"")
    elif p.session.live_stdin is not None:
        line = await p.session.live_stdin.readline()
    else:
        line = b""
    if not line:
        return 1
    words = line.decode("utf-8", "replace").rstrip("\n").split(None, len(names) - 1)
    for i, name in enumerate(names):
        p.session.vars[name] = words[i] if i < len(words) else ""
    return 0


BUILTINS: dict[str, Handler] = {
    "cd": _b_cd,
    "pwd": _b_pwd,
    "exit": _b_exit,
    "export": _b_export,
    "unset": _b_unset,
    ":": _b_colon,
    "wait": _b_wait,
    "read": _b_read,
    "trap": _b_colon,
    "set": _b_colon,
    "sh": _b_sh,
    "/system/bin/sh": _b_sh,
    "eval": _b_eval,
    ".": _b_source,
    "source": _b_source,
    "command": _b_command,
}
