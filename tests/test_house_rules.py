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


def _tui_imports(path: Path) -> set[str]:
    """The tui.* modules ``path`` imports, TYPE_CHECKING blocks and function bodies
    included (a cycle there still ties the modules together for readers and tools)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tui."):
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("tui."))
    return out


def test_tui_modules_import_no_cycles() -> None:
    """app.py imports the screens; no screen (nor anything they import) imports the app
    back: they see it through tui.host.TuiHost."""
    root = Path(__file__).resolve().parents[1] / "tui"
    graph = {f"tui.{p.stem}": _tui_imports(p) for p in root.glob("*.py")}

    def cycle_from(start: str) -> list[str] | None:
        stack, seen = [(start, [start])], set()
        while stack:
            mod, path = stack.pop()
            for nxt in graph.get(mod, ()):
                if nxt == start:
                    return [*path, nxt]
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
        return None

    cycles = [c for m in graph if (c := cycle_from(m))]
    assert not cycles, cycles
    graph["tui.base"] = graph["tui.base"] | {"tui.app"}  # the checker sees a cycle
    assert cycle_from("tui.app") is not None
