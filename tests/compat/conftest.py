"""Prints each stack's coverage after the compatibility suite ran."""

from __future__ import annotations

import pytest

from tests.compat.test_compat import REPORTS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not REPORTS:
        return
    terminalreporter.section("sim compatibility: commands passing / tried, per stack")
    for adb_path, report in REPORTS:
        terminalreporter.write_line(f"{report.line()}  [{adb_path}]")
        for o in report.outcomes:
            if not o.passed:
                terminalreporter.write_line(f"    gap: {o.case.name} — {o.case.gap or o.error}")
