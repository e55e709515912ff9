"""Every stack the suite covers, with the adb clients it runs them through.

Subprocess-based stacks run with both adb binaries (Debian's platform-tools 29 and
the one in adbutils' wheel); adbutils' own client talks to the wheel's server.
"""

from __future__ import annotations

from tests.compat import (
    stack_adbutils,
    stack_android_world,
    stack_appagent,
    stack_digirl,
    stack_mobile_agent,
)
from tests.compat.harness import Case

STACKS: dict[str, list[Case]] = {
    "android_world": stack_android_world.CASES,
    "AppAgent": stack_appagent.CASES,
    "Mobile-Agent": stack_mobile_agent.CASES,
    "DigiRL": stack_digirl.CASES,
    "adbutils": stack_adbutils.CASES,
}
USES_ADB_BINARY = {"android_world", "AppAgent", "Mobile-Agent", "DigiRL"}
#: stacks that start and manage emulators: their phone is an emulator-NNNN with a console
EMULATOR_STACKS = {"android_world", "DigiRL"}
