"""``distrl deploy``: run a trained agent on one connected phone, behind a safety guard.

    guard   = Guard(load_guard_config("guard.toml"))
    device  = await connect_device("R58M123ABC")
    result  = await run_deploy(device, policy, DeployOptions("Turn off Wi-Fi", out, guard))

:mod:`~farm.deploy.guard` decides what may run, :mod:`~farm.deploy.runner` runs the
episode, :mod:`~farm.deploy.record` writes the GIF/MP4 and feeds the TUI.
"""

from farm.deploy.guard import (
    Guard,
    GuardConfig,
    GuardContext,
    TextRule,
    Verdict,
    describe_action,
    load_guard_config,
)
from farm.deploy.record import LiveFeed, Recorder, annotate
from farm.deploy.runner import (
    DeployOptions,
    DeployResult,
    StepReport,
    connect_device,
    run_deploy,
)

__all__ = [
    "DeployOptions",
    "DeployResult",
    "Guard",
    "GuardConfig",
    "GuardContext",
    "LiveFeed",
    "Recorder",
    "StepReport",
    "TextRule",
    "Verdict",
    "annotate",
    "connect_device",
    "describe_action",
    "load_guard_config",
    "run_deploy",
]
