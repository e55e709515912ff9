"""Android's commands, one module per family; importing this package registers them."""

from farm.sim.shell.commands import (  # noqa: F401  (imported for their @command side effect)
    am,
    cmd,
    content,
    dumpsys,
    filters,
    findutils,
    fs,
    ime,
    input,
    log,
    logcat,
    misc,
    pm,
    procs,
    props,
    receivers,
    runas,
    screen,
    screenrecord,
    settings,
    sqlite,
    text,
    uiautomator,
    wm,
)
from farm.sim.shell.commands.registry import REGISTRY, CommandSpec, command, lookup

__all__ = ["REGISTRY", "CommandSpec", "command", "lookup"]
