"""``am`` (activity manager) and ``monkey``: starting and stopping apps."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from farm.sim.intents import IntentQuery
from farm.sim.profiles import CommandKind
from farm.sim.shell.commands.names import (
    full_class,
    ident_hash,
    long_component,
    short_component,
)
from farm.sim.shell.commands.receivers import deliver_broadcast
from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import Proc

# am options that take one value / two values (extras: --es key value)
_ONE_ARG = frozenset({
    "-a", "-d", "-t", "-c", "-n", "-f", "-p", "-i", "--user", "-R", "-P", "--start-profiler",
    "--sampling", "--streaming", "--attach-agent", "--attach-agent-bind", "--display",
    "--windowingMode", "--activityType", "--task", "--receiver-permission", "--esn",
    "--selector", "--splashscreen-show-icon", "--dismiss-keyguard-if-insecure",
})
_TWO_ARGS = frozenset({
    "-e", "--es", "--ez", "--ei", "--el", "--ef", "--ed", "--eu", "--ecn", "--eia", "--eial",
    "--ela", "--elal", "--efa", "--efal", "--eda", "--edal", "--esa", "--esal",
})


@dataclass(slots=True)
class Intent:
    action: str = ""
    categories: list[str] = field(default_factory=list)
    data: str = ""
    mime: str = ""
    flags: str = ""
    package: str = ""
    component: str = ""
    extras: bool = False
    # the values of --es/-e (strings), --ei (ints) and --eia (int arrays), by key
    values: dict[str, str | int | list[int]] = field(default_factory=dict)
    wait: bool = False
    stop_first: bool = False

    def short(self) -> str:
        """Intent.toShortString as ``am`` prints it."""
        parts = []
        if self.action:
            parts.append(f"act={self.action}")
        if self.categories:
            parts.append(f"cat=[{','.join(self.categories)}]")
        if self.data:
            parts.append(f"dat={safe_uri(self.data)}")
        if self.mime:
            parts.append(f"typ={self.mime}")
        if self.flags:
            parts.append(f"flg={self.flags}")
        if self.package:
            parts.append(f"pkg={self.package}")
        if self.component:
            pkg, _, cls = self.component.partition("/")
            parts.append(f"cmp={short_component(pkg, cls)}")
        if self.extras:
            parts.append("(has extras)")
        return "Intent { " + " ".join(parts) + " }"


_INT = re.compile(r"-?\d{1,10}")
_LAUNCH_CATEGORIES = {"android.intent.category.LAUNCHER", "android.intent.category.DEFAULT"}
_REDACTED_SCHEMES = ("tel", "sip", "sms", "smsto", "mailto", "nfc")
_HOST_ONLY_SCHEMES = ("http", "https", "ftp", "rtsp")


def safe_uri(data: str) -> str:
    """Uri.toSafeString, what Intent.toString prints for ``dat=``: phone numbers and
    addresses masked, web URLs cut to their host."""
    scheme, colon, ssp = data.partition(":")
    if not colon or "/" in scheme:
        return data
    ssp = ssp.partition("#")[0]
    low = scheme.lower()
    if low in _REDACTED_SCHEMES:
        return scheme + ":" + "".join(c if c in "-@." else "x" for c in ssp)
    if low in _HOST_ONLY_SCHEMES:
        parts = urlsplit(data)
        host = parts.hostname or ""
        try:
            port = f":{parts.port}" if parts.port is not None else ""
        except ValueError:
            port = ""
        return f"{scheme}://{host}{port}/..."
    return f"{scheme}:{ssp}"


def parse_intent(args: Sequence[str]) -> Intent:
    it = Intent()
    i = 0
    while i < len(args):
        a = args[i]
        val = args[i + 1] if i + 1 < len(args) else ""
        if a == "-W":
            it.wait = True
        elif a == "-S":
            it.stop_first = True
        elif a in _TWO_ARGS:
            it.extras = True
            key, value = val, args[i + 2] if i + 2 < len(args) else ""
            if a in ("-e", "--es"):
                it.values[key] = value
            elif a == "--ei" and _INT.fullmatch(value):
                it.values[key] = int(value)
            elif a == "--eia" and all(_INT.fullmatch(v) for v in value.split(",")):
                it.values[key] = [int(v) for v in value.split(",")]
            i += 2
        elif a in _ONE_ARG:
            if a == "-a":
                it.action = val
            elif a == "-c":
                it.categories.append(val)
            elif a == "-d":
                it.data = val
            elif a == "-t":
                it.mime = val
            elif a == "-n":
                it.component = val
            elif a == "-f":
                it.flags = val
            elif a == "-p":
                it.package = val
            i += 1
        elif a.startswith("-"):
            pass  # flag options: -D -N --activity-clear-top --grant-read-uri-permission …
        elif ":" in a:
            it.data = a
        elif "/" in a:
            it.component = a
        else:
            it.package = a
        i += 1
    return it


def _am_kind(argv: Sequence[str]) -> CommandKind:
    if len(argv) > 1 and argv[1] in ("start", "start-activity"):
        return CommandKind.AM_START
    return CommandKind.SHELL


def query_of(it: Intent) -> IntentQuery:
    return IntentQuery(it.action, tuple(it.categories), it.data, it.mime, it.package)


def _not_resolved(p: Proc, it: Intent) -> int:
    flg = it.flags or "0x10000000"
    unresolved = Intent(it.action, it.categories, it.data, it.mime, flg, it.package,
                        extras=it.extras)
    p.error(f"Error: Activity not started, unable to resolve {unresolved.short()}\n")
    return 1


async def am_start(p: Proc, args: list[str]) -> int:
    it = parse_intent(args)
    world = p.phone.world
    packages = {pk.name: pk for pk in world.packages()}
    intent_args: dict[str, str] | None = None
    shown = it.short()  # am prints the intent as given, before resolution
    if not it.component and it.package in packages and not it.data and set(
            it.categories) <= _LAUNCH_CATEGORIES:
        launcher = packages[it.package].launcher_activity
        if launcher and (not it.action or it.action == "android.intent.action.MAIN"):
            it.component = f"{it.package}/{launcher}"
            shown = it.short()
    if not it.component:
        p.write(f"Starting: {shown}\n")
        if not it.action and not it.data and not it.categories and not it.mime:
            return _not_resolved(p, it)
        query = query_of(it)
        matches = world.resolve_intent(query)
        if not matches:
            return _not_resolved(p, it)
        best = matches[0]
        it.component = f"{best.package}/{best.activity}"
        intent_args = world.intent_args(best, query)
    pkg, _, cls = it.component.partition("/")
    if not pkg or not cls:
        p.error(f"Exception occurred while executing 'start':\njava.lang.IllegalArgumentException:"
                f" Bad component name: {it.component}\n")
        return 255
    was_running = any(r.package == pkg for r in world.activity_stack())
    if it.stop_first:
        world.force_stop(pkg)
        was_running = False
    if intent_args is None:
        p.write(f"Starting: {shown}\n")
    res = world.start_activity(it.component, intent_args)
    if res.outcome == "no_such_activity":
        full = res.activity or full_class(pkg, cls)
        p.error(f"Error type 3\nError: Activity class {{{res.package or pkg}/{full}}} "
                "does not exist.\n")
        return 1
    short = short_component(res.package or pkg, res.activity or cls)
    rng = p.phone.rng
    if res.outcome in ("brought_to_front", "delivered_to_top"):
        if res.outcome == "brought_to_front":
            p.write("Warning: Activity not started, its current task has been brought to the "
                    "front\n")
        else:
            p.write("Warning: Activity not started, intent has been delivered to currently "
                    "running top-most instance.\n")
        if it.wait:
            wait = rng.randint(3, 30)
            p.write(f"Status: ok\nLaunchState: UNKNOWN (0)\nActivity: {short}\n"
                    f"WaitTime: {wait}\nComplete\n")
        return 0
    if it.wait:
        total = rng.randint(250, 650) if not was_running else rng.randint(80, 250)
        state = "WARM" if was_running else "COLD"
        p.write(f"Status: ok\nLaunchState: {state}\nActivity: {short}\nTotalTime: {total}\n"
                f"WaitTime: {total + rng.randint(2, 8)}\nComplete\n")
    return 0


async def _stack_list(p: Proc) -> int:
    w, h = p.phone.spec.screen.width, p.phone.spec.screen.height
    tasks: dict[int, list[str]] = {}
    for r in p.phone.world.activity_stack():
        tasks.setdefault(r.task_id, []).append(long_component(r.package, r.activity))
    for i, (tid, comps) in enumerate(tasks.items()):
        p.write(f"RootTask id={tid} bounds=[0,0][{w},{h}] displayId=0 userId=0\n"
                f" configuration={{1.0 ?mcc?mnc [en_US] ldltr {p.phone.spec.screen.density}dpi"
                f" winConfig={{ mBounds=Rect(0, 0 - {w}, {h}) }}}}\n"
                f"  taskId={tid}: {comps[0]} bounds=[0,0][{w},{h}] userId=0 "
                f"visible={str(i == 0).lower()} topActivity=ComponentInfo{{{comps[0]}}}\n")
    return 0


@command("am", kind=_am_kind)
async def am(p: Proc) -> int:
    if not p.args:
        p.write("Activity manager (activity) commands:\n  help\n      Print this help text.\n"
                "  start-activity [-D] [-N] [-W] [-P <FILE>] [--start-profiler <FILE>] "
                "<INTENT>\n  force-stop [--user <USER_ID> | all | current] <PACKAGE>\n")
        return 0
    sub, rest = p.args[0], p.args[1:]
    world = p.phone.world
    if sub in ("start", "start-activity"):
        return await am_start(p, rest)
    if sub in ("force-stop", "kill", "stop-app"):
        names = [a for i, a in enumerate(rest) if not a.startswith("-")
                 and (i == 0 or rest[i - 1] != "--user")]
        if not names:
            p.error(f"Exception occurred while executing '{sub}':\n"
                    "java.lang.IllegalArgumentException: Argument expected after \"" +
                    (rest[-1] if rest else sub) + "\"\n")
            return 255
        if sub != "kill":
            world.force_stop(names[0])
        return 0
    if sub == "broadcast":
        it = parse_intent(rest)
        it.flags = it.flags or "0x400000"
        p.write(f"Broadcasting: {it.short()}\n")
        code, data = deliver_broadcast(p.phone, it.action, it.values)
        shown = "" if data is None else ', data="' + data + '"'
        p.write(f"Broadcast completed: result={code}{shown}\n")
        return 0
    if sub in ("startservice", "start-service", "start-foreground-service"):
        p.write(f"Starting service: {parse_intent(rest).short()}\n")
        return 0
    if sub == "stack" and rest[:1] == ["list"]:
        return await _stack_list(p)
    if sub in ("stack", "task") and rest[:1] == ["remove"]:
        if len(rest) < 2 or not rest[1].isdecimal():
            p.error(f"Exception occurred while executing '{sub}':\n"
                    "java.lang.NumberFormatException: For input string: \""
                    f"{rest[1] if len(rest) > 1 else ''}\"\n")
            return 255
        world.remove_task(int(rest[1]))
        return 0
    if sub == "task" and rest[:1] == ["lock"]:
        return 0
    if sub == "get-current-user":
        p.write("0\n")
        return 0
    if sub in ("kill-all", "set-debug-app", "clear-debug-app", "idle-maintenance"):
        return 0
    p.error(f"Unknown command: {sub}\n")
    return 255


@command("monkey", kind=CommandKind.AM_START)
async def monkey(p: Proc) -> int:
    for a in p.args:
        p.write(f"  bash arg: {a}\n")  # echoed by the /system/bin/monkey wrapper script
    p.error(f"args: [{', '.join(p.args)}]\n")
    for a in p.args:
        p.error(f' arg: "{a}"\n')
    pkgs: list[str] = []
    count = 0
    i = 0
    args = p.args
    while i < len(args):
        a = args[i]
        if a in ("-p", "-c"):
            if i + 1 < len(args):
                p.error(f'data="{args[i + 1]}"\n')
                if a == "-p":
                    pkgs.append(args[i + 1])
            i += 2
            continue
        if a in ("-s", "--throttle", "--pct-touch", "--pct-motion", "--pct-trackball",
                 "--pct-nav", "--pct-majornav", "--pct-syskeys", "--pct-appswitch",
                 "--pct-flip", "--pct-anyevent", "--pct-pinchzoom", "--pct-permission",
                 "-f", "--setup", "--port", "--pkg-blacklist-file", "--pkg-whitelist-file"):
            i += 2
            continue
        if a.isdecimal():
            count = int(a)
        i += 1
    world = p.phone.world
    known = {pk.name: pk for pk in world.packages()}
    runnable = [n for n in pkgs if n in known and known[n].launcher_activity]
    if not runnable:
        p.error("** No activities found to run, monkey aborted.\n")
        return 251
    launched = 0
    if count > 0 and world.launch_package(runnable[0]):
        launched = 1
    elapsed = p.phone.rng.randint(8, 40)
    p.write(f"Events injected: {count if launched else 0}\n"
            f"## Network stats: elapsed time={elapsed}ms (0ms mobile, 0ms wifi, "
            f"{elapsed}ms not connected)\n")
    return 0


__all__ = ["Intent", "am", "am_start", "ident_hash", "monkey", "parse_intent", "query_of",
           "safe_uri"]
