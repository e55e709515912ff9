"""``settings`` and ``svc``: the system/secure/global settings tables."""

from __future__ import annotations

from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import Proc

NAMESPACES = ("system", "secure", "global")

USAGE = """Settings provider (settings) commands:
  help
      Print this help text.
  get [--user <USER_ID> | current] NAMESPACE KEY
      Retrieve the current value of KEY.
  put [--user <USER_ID> | current] NAMESPACE KEY VALUE [TAG] [default]
      Change the contents of KEY to VALUE.
  delete [--user <USER_ID> | current] NAMESPACE KEY
      Delete the entry for KEY.
  reset [--user <USER_ID> | current] NAMESPACE {PACKAGE_NAME | RESET_MODE}
      Reset the global/secure table for a package with mode.
  list [--user <USER_ID> | current] NAMESPACE
      Print all defined keys.

NAMESPACE is one of {system, secure, global}, case-insensitive
"""


@command("settings")
async def settings(p: Proc) -> int:
    args: list[str] = []
    it = iter(p.args)
    for a in it:
        if a == "--user":
            next(it, None)
        elif a not in ("--lineage",):
            args.append(a)
    if not args or args[0] in ("help", "-h"):
        p.write(USAGE)
        return 0
    verb = args[0]
    if verb not in ("get", "put", "delete", "list", "reset"):
        p.error(f"Invalid command: {verb}\n")
        return 255
    if len(args) < 2:
        p.error("Invalid arguments: namespace not specified\n")
        return 255
    ns = args[1].lower()
    if ns not in NAMESPACES:
        p.error(f"Invalid namespace '{args[1]}'\n")
        return 255
    table = p.phone.world.settings
    rest = args[2:]
    if verb == "list":
        for k, v in sorted(table.list(ns)):
            p.write(f"{k}={v}\n")
        return 0
    if verb == "reset":
        return 0
    if not rest:
        p.error("Invalid arguments: key not specified\n")
        return 255
    key = rest[0]
    if verb == "get":
        value = table.get(ns, key)
        p.write(("null" if value is None else value) + "\n")
        return 0
    if verb == "delete":
        p.write(f"Deleted {1 if table.delete(ns, key) else 0} rows\n")
        return 0
    if len(rest) < 2:
        p.error("Invalid arguments: no value specified\n")
        return 255
    table.put(ns, key, rest[1])
    return 0


SVC_USAGE = """Available commands:
    help     Show information about the subcommands
    power    Control the power manager
    data     Control mobile data connectivity
    wifi     Control the Wi-Fi manager
    usb      Control Usb state
    nfc      Control NFC functions
    bluetooth Control Bluetooth service
"""

# svc SERVICE enable|disable → the global setting it flips
_SVC_SETTINGS = {"wifi": "wifi_on", "data": "mobile_data", "bluetooth": "bluetooth_on"}


@command("svc")
async def svc(p: Proc) -> int:
    if not p.args or p.args[0] == "help":
        p.write(SVC_USAGE)
        return 0
    service = p.args[0]
    action = p.args[1] if len(p.args) > 1 else ""
    if service in _SVC_SETTINGS:
        if action in ("enable", "disable"):
            p.phone.world.settings.put("global", _SVC_SETTINGS[service],
                                       "1" if action == "enable" else "0")
            return 0
        p.write(f"Control the {service} service\n\nusage: svc {service} [enable|disable]\n")
        return 0
    if service in ("power", "usb", "nfc"):
        return 0
    p.write(f"Unknown command: {service}\n")
    return 1
