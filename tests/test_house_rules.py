"""docs/design.md §2 import contracts: the SDK is free of the farm and the UI, and only
`tui` may import textual. Checked on the source (AST), so lazy imports count too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN = {
    "distrl_sdk": {"farm", "tui", "textual"},
    "farm": {"tui", "textual"},
    "plugins": {"textual"},
    "sample_tasks": {"textual"},
}


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_import_contract(package: str) -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {sorted(bad)}"
        for path in sorted((ROOT / package).rglob("*.py"))
        if (bad := imported_roots(path) & FORBIDDEN[package])
    ]
    assert not offenders, "\n".join(offenders)


def test_contract_checker_catches_violations(tmp_path: Path) -> None:
    bad = tmp_path / "m.py"
    bad.write_text("def f():\n    from farm.sim import SimFarm\n    import textual.app\n")
    assert {"farm", "textual"} <= imported_roots(bad)
