"""Runs each stack's cases on a fresh sim phone and checks the coverage is as recorded.

Green means: every case without a ``gap`` passes, and no case marked as a gap passes
(the mark would be stale). The per-stack coverage (passing / tried) is printed at
the end of the run (see conftest.py) and with ``python -m tests.compat``.
"""

from __future__ import annotations

from typing import Any

import pytest

from farm.sim.adbhost import bundled_adb
from tests.compat.harness import Report, rig, run_cases
from tests.compat.stacks import EMULATOR_STACKS, STACKS, USES_ADB_BINARY
from tests.sim.adb_helpers import adb_binary_params

# a fresh phone and adb server per stack and binary: ~20 s in all
pytestmark = pytest.mark.slow

REPORTS: list[tuple[str, Report]] = []


def _params() -> list[Any]:
    out = []
    for stack in STACKS:
        if stack in USES_ADB_BINARY:
            for p in adb_binary_params():
                out.append(pytest.param(stack, p.values[0], id=f"{stack}-{p.id}",
                                        marks=p.marks))
        else:
            out.append(pytest.param(stack, bundled_adb(), id=f"{stack}-adbutils-client"))
    return out


@pytest.mark.parametrize(("stack", "adb_path"), _params())
def test_stack(stack: str, adb_path: str | None) -> None:
    if adb_path is None:
        pytest.fail("DISTRL_REQUIRE_SYSTEM_ADB=1 but Debian's adb is missing")
    with rig(adb_path, as_emulator=stack in EMULATOR_STACKS) as r:
        report = run_cases(stack, STACKS[stack], r)
    REPORTS.append((adb_path, report))
    broken = [f"{o.case.name}: {o.error}" for o in report.regressions()]
    stale = [o.case.name for o in report.closed_gaps()]
    assert not broken, "cases that must pass failed:\n" + "\n".join(broken)
    assert not stale, "marked as gaps but passing now (update the mark):\n" + "\n".join(stale)
