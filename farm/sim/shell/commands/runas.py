"""``run-as PKG [CMD…]``: run a command in a debuggable app's data directory.

As on Android the working directory is ``/data/data/PKG``; without a command it runs a
shell reading its script from stdin. System apps are not debuggable; an app is debuggable
when it says so (``debuggable`` class attribute), else when it is not a system app.
"""

from __future__ import annotations

import contextlib
import shlex

from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import ExitShell, Proc


def _debuggable(p: Proc, package: str) -> bool | None:
    """True/False for a known package, None for an unknown one."""
    world = p.phone.world
    info = next((i for i in world.packages() if i.name == package), None)
    if info is None:
        return None
    app_of = getattr(world, "app", None)
    app = app_of(package) if app_of is not None else None
    if app is None:
        return not info.system
    return bool(getattr(app, "debuggable", not info.system))


@command("run-as")
async def run_as(p: Proc) -> int:
    args = list(p.args)
    while args and args[0] in ("--user",):
        args = args[2:]
    if not args:
        p.error("usage: run-as <package-name> [--user <uid>] <command> [<args>]\n")
        return 1
    package, rest = args[0], args[1:]
    if len(rest) >= 2 and rest[0] == "--user":
        rest = rest[2:]
    ok = _debuggable(p, package)
    if ok is None:
        p.error(f"run-as: unknown package: {package}\n")
        return 1
    if not ok:
        p.error(f"run-as: package not debuggable: {package}\n")
        return 1
    home = f"/data/data/{package}"
    vfs = p.phone.vfs
    with contextlib.suppress(OSError):
        vfs.mkdir(home, parents=True)
    from farm.sim.shell.interp import run_source  # the interpreter imports the commands

    sub = p.session.subshell()
    sub.cwd = home
    sub.vars["PWD"] = home
    sub.vars["HOME"] = home
    src = " ".join(shlex.quote(a) for a in rest) if rest else p.stdin.decode("utf-8", "replace")
    stdin = b"" if not rest else p.stdin
    try:
        return await run_source(src, sub, stdin, p.out, p.err, name="run-as")
    except ExitShell as e:
        return e.code
