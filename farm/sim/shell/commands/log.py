"""``log [-p PRIORITY] [-t TAG] MESSAGE…``: write to the log buffer, as an app's Log.x would."""

from __future__ import annotations

from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import Proc

_PRIORITIES = {"v": "V", "d": "D", "i": "I", "w": "W", "e": "E", "f": "F", "a": "F"}
_USAGE = "usage: log [-p priorityChar] [-t tag] message\n"


@command("log")
async def log_(p: Proc) -> int:
    args = list(p.args)
    priority, tag = "I", "log"
    while args and args[0].startswith("-") and len(args[0]) == 2:
        flag = args.pop(0)
        if flag not in ("-p", "-t") or not args:
            p.error(_USAGE)
            return 1
        value = args.pop(0)
        if flag == "-p":
            if value[:1].lower() not in _PRIORITIES:
                p.error(_USAGE)
                return 1
            priority = _PRIORITIES[value[:1].lower()]
        else:
            tag = value
    if not args:
        p.error(_USAGE)
        return 1
    p.phone.logcat.log(priority, tag, " ".join(args))
    return 0
