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


def _sdk_imports(path: Path) -> list[str]:
    """``distrl_sdk`` modules imported deeper than the public packages, or private names."""
    bad = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.ImportFrom) and node.module
                and node.module.startswith("distrl_sdk")):
            continue
        if node.module.count(".") > 1 or "._" in node.module \
                or any(a.name.startswith("_") for a in node.names):
            bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.module}")
    return bad


def test_the_worked_plugins_use_only_the_public_sdk() -> None:
    """A plugin author copies these: they import from ``distrl_sdk`` and its packages
    (``distrl_sdk.evaluators``, ``distrl_sdk.device`` …), never from the modules inside
    them or private names."""
    files = [p for p in (ROOT / "plugins").rglob("*.py") if "tests" not in p.parts]
    assert files
    assert [b for f in files for b in _sdk_imports(f)] == []
