"""``cmd SERVICE …``: the binder shell-command entry point behind pm, am, wm, settings."""

from __future__ import annotations

from collections.abc import Sequence

from farm.sim.profiles import CommandKind
from farm.sim.shell.commands.dumpsys import battery
from farm.sim.shell.commands.registry import REGISTRY, command
from farm.sim.shell.context import Proc

# cmd service name → the standalone command that handles the same arguments
_ALIASES = {"package": "pm", "activity": "am", "window": "wm", "settings": "settings",
            "input": "input", "uimode": None, "statusbar": None, "notification": None,
            "appops": None, "deviceidle": None, "jobscheduler": None, "power": None,
            "connectivity": None, "netpolicy": None, "overlay": None, "role": None}


def _kind(argv: Sequence[str]) -> CommandKind:
    target = _ALIASES.get(argv[1]) if len(argv) > 1 else None
    spec = REGISTRY.get(target) if target else None
    return spec.kind([target, *argv[2:]]) if spec and target else CommandKind.SHELL


@command("cmd", kind=_kind)
async def cmd(p: Proc) -> int:
    if not p.args:
        p.error("cmd: No service specified; use -l to list all running services. "
                "Use -w to start and wait for a service.\n")
        return 20
    if p.args[0] == "-l":
        names = sorted(set(_ALIASES) | {"battery", "wifi"})
        p.write("Currently running services:\n" + "".join(f"  {n}\n" for n in names))
        return 0
    service, rest = p.args[0], p.args[1:]
    if service == "battery":
        text, code = battery(p.phone, rest or ["help"])
        p.write(text)
        return code
    if service == "wifi":
        return _wifi(p, rest)
    if service == "statusbar":
        return _statusbar(p, rest)
    if service == "notification" and rest[:1] == ["post"]:
        return _post_notification(p, rest[1:])
    if service not in _ALIASES:
        p.error(f"cmd: Can't find service: {service}\n")
        return 20
    target = _ALIASES[service]
    if target is None:
        return 0  # accepted: statusbar expand-notifications, uimode night yes, …
    spec = REGISTRY[target]
    return await spec.handler(Proc(p.session, [target, *rest], p.stdin, p.out, p.err))


def _wifi(p: Proc, args: list[str]) -> int:
    settings = p.phone.world.settings
    if args[:1] == ["status"]:
        on = settings.get("global", "wifi_on") != "0"
        p.write("Wifi is enabled\n" if on else "Wifi is disabled\n")
        return 0
    if args[:1] == ["set-wifi-enabled"] and len(args) > 1:
        settings.put("global", "wifi_on", "1" if args[1] == "enabled" else "0")
        return 0
    return 0


def _statusbar(p: Proc, args: list[str]) -> int:
    """StatusBarShellCommand: pull the shade down (notifications or Quick Settings) or up."""
    world = p.phone.world
    op = args[0] if args else ""
    if op in ("expand-notifications", "expand-settings"):
        world.expand_shade()
    elif op == "collapse":
        world.collapse_shade()
    elif op in ("", "help", "-h"):
        p.write("Status bar commands:\n  help\n    Print this help text.\n\n"
                "  expand-notifications\n    Open the notifications panel.\n\n"
                "  expand-settings\n    Open the notifications panel and expand quick "
                "settings if present.\n\n  collapse\n    Collapse the notifications and "
                "settings panel.\n")
    return 0  # the other subcommands (click-tile, icon, …) are accepted


_POST_USAGE = "usage: cmd notification post [flags] <tag> <text>\n"


def _post_notification(p: Proc, args: list[str]) -> int:
    """``cmd notification post [-t TITLE] TAG TEXT``: posted as com.android.shell."""
    title = ""
    rest: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-t", "--title") and i + 1 < len(args):
            title, i = args[i + 1], i + 2
        elif a in ("-S", "--style", "-c", "--content-intent", "-I", "--large-icon",
                   "-i", "--icon") and i + 1 < len(args):
            i += 2  # flags with a value this model does not draw
        elif a.startswith("-") and a not in ("-", "--"):
            i += 1  # -v verbose, -b/--big, -h…
        else:
            rest.append(a)
            i += 1
    if len(rest) < 2:
        p.error(_POST_USAGE)
        return 255
    tag, text = rest[0], " ".join(rest[1:])
    p.phone.world.post_notification("com.android.shell", title or tag, text, tag=tag)
    return 0
