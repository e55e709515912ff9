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
