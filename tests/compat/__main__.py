"""``python -m tests.compat [--adb PATH] [-v]``: run every stack's cases and print coverage."""

from __future__ import annotations

import argparse

from farm.sim.adbhost import bundled_adb, system_adb
from tests.compat.harness import rig, run_cases
from tests.compat.stacks import EMULATOR_STACKS, STACKS, USES_ADB_BINARY


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--adb", help="adb binary for the subprocess-based stacks "
                                  "(default: Debian's if installed, else adbutils')")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every failing case")
    args = ap.parse_args()
    binary = args.adb or system_adb() or bundled_adb()
    total = passed = 0
    regressions = 0
    for stack, cases in STACKS.items():
        path = binary if stack in USES_ADB_BINARY else bundled_adb()
        with rig(path, as_emulator=stack in EMULATOR_STACKS) as r:
            report = run_cases(stack, cases, r)
        print(report.line(), flush=True)
        total += report.total
        passed += report.passed
        regressions += len(report.regressions())
        for o in report.outcomes:
            if not o.passed and (args.verbose or o.case.gap is None):
                print(f"    {'gap' if o.case.gap else 'FAIL'}: {o.case.name} — "
                      f"{o.case.gap or o.error}")
    print(f"{'all':<14} {passed:3d}/{total:<3d} ({100 * passed / total:5.1f}%)")
    return 1 if regressions else 0


if __name__ == "__main__":
    raise SystemExit(main())
