"""``uiautomator dump``: the world's view tree as AOSP's one-line XML."""

from __future__ import annotations

from collections.abc import Sequence

from farm.sim.profiles import CommandKind
from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import Proc, enc

DEFAULT_FILE = "/sdcard/window_dump.xml"

USAGE = """Usage: uiautomator <subcommand> [options]

Available subcommands:

help: displays help message

runtest: executes UI automation tests
    runtest <class spec> [options]

dump: creates an XML dump of current UI hierarchy
    dump [--verbose][file]
      [--compressed]: dumps compressed layout information.
      [file]: the location where the dumped XML should be stored, default is
      /sdcard/window_dump.xml

events: prints out accessibility events until terminated
"""


def _kind(argv: Sequence[str]) -> CommandKind:
    return CommandKind.UI_DUMP if len(argv) > 1 and argv[1] == "dump" else CommandKind.SHELL


@command("uiautomator", kind=_kind)
async def uiautomator(p: Proc) -> int:
    args = p.args
    if not args or args[0] in ("help", "-h", "--help"):
        p.error(USAGE)
        return 1 if not args else 0
    if args[0] != "dump":
        p.error(USAGE)
        return 1
    file = DEFAULT_FILE
    for a in args[1:]:
        if a in ("--compressed", "--verbose", "-v"):
            continue  # the world already returns the compressed, visible-only tree
        file = a
    xml = enc(p.phone.world.ui_xml())
    # The typo "hierchary" is AOSP's (DumpCommand.java); parsers match it.
    if file in ("/dev/tty", "/dev/stdout"):
        # The XML has no trailing newline, so the message follows it on the same line.
        p.write(xml)
        p.write(f"UI hierchary dumped to: {file}\n")
        return 0
    try:
        p.phone.vfs.write(p.path(file), xml)
    except OSError as e:
        errno_name = {2: "ENOENT", 20: "ENOTDIR", 21: "EISDIR", 28: "ENOSPC"}.get(
            e.errno or 0, "EIO")
        p.error(f"java.io.FileNotFoundException: {file}: open failed: "
                f"{errno_name} ({e.strerror})\n")
        return 1
    p.write(f"UI hierchary dumped to: {file}\n")
    return 0
