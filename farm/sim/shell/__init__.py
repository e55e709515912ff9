"""The shell of a simulated Android phone: a small mksh subset plus Android's commands.

    shell = Shell(spec, world, vfs, faults, profile, rng, logcat)
    result = await shell.run("dumpsys window | grep mCurrentFocus")

New commands go in ``farm/sim/shell/commands/`` with the ``@command`` decorator.
"""

from farm.sim.shell.apk import ApkError, ApkInfo, build_test_apk, parse_apk
from farm.sim.shell.commands.registry import REGISTRY, command
from farm.sim.shell.core import Shell

__all__ = ["REGISTRY", "ApkError", "ApkInfo", "Shell", "build_test_apk", "command", "parse_apk"]
