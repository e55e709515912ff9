#!/usr/bin/env python3
"""Set up DistRL in ./.venv (idempotently) and run the demo or the tests.

    python3 dev.py demo [DEMO OPTIONS]    # the main job: `distrl demo`
    python3 dev.py test [PYTEST OPTIONS]  # ruff, mypy and the whole test suite

Needs only Python 3.11+. The first run creates .venv and installs DistRL, its
first-party plugins and (for the learner) the CPU build of torch 2.13.0 unless a
torch is already there; later runs reinstall only when a pyproject changed.
GPU users: install your CUDA torch into .venv first (`.venv/bin/pip install torch`);
an existing torch is never replaced. Set DISTRL_TORCH_INDEX to a package index
(e.g. PyTorch's CPU index) to choose where torch comes from.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".distrl-installed"
TORCH = "torch==2.13.0"


def say(msg: str) -> None:
    print(f"[dev] {msg}", flush=True)


def venv_bin(name: str) -> Path:
    return VENV / ("Scripts" if os.name == "nt" else "bin") / name


def run(*cmd: str | Path, check: bool = True) -> int:
    return subprocess.run([str(c) for c in cmd], cwd=ROOT, check=check).returncode


def plugin_dirs() -> list[Path]:
    """First-party plugins and the sample task suite: each its own distribution."""
    found = [p.parent for p in (ROOT / "plugins").glob("*/pyproject.toml")]
    found += [p.parent for p in ROOT.glob("sample_tasks/pyproject.toml")]
    return sorted(found)


def wanted_stamp() -> str:
    h = hashlib.sha256()
    files = [ROOT / "pyproject.toml", Path(__file__)]
    for f in files + [d / "pyproject.toml" for d in plugin_dirs()]:
        h.update(f.read_bytes())
    return h.hexdigest()


def ensure_env() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - dev.py may be started by an older python
        sys.exit(f"DistRL needs Python 3.11 or newer; this is {sys.version.split()[0]}")
    if not venv_bin("python").exists():
        say(f"creating {VENV}")
        venv.EnvBuilder(with_pip=True).create(VENV)
    py = venv_bin("python")
    stamp = wanted_stamp()
    if STAMP.exists() and STAMP.read_text() == stamp:
        return
    pip = [py, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    if not _has_torch(py):
        extra = ["--extra-index-url", os.environ["DISTRL_TORCH_INDEX"]] \
            if os.environ.get("DISTRL_TORCH_INDEX") else []
        say(f"installing {TORCH} (CPU build where one is available) …")
        run(*pip, TORCH, *extra)
    say("installing distrl and its plugins (editable) …")
    run(*pip, "-e", f"{ROOT}[dev,learn]", *[a for d in plugin_dirs() for a in ("-e", str(d))])
    STAMP.write_text(stamp)


def _has_torch(py: Path) -> bool:
    return subprocess.run([str(py), "-c", "import torch"], cwd=ROOT,
                          capture_output=True).returncode == 0


def cmd_test(args: list[str]) -> int:
    ensure_env()
    if {"-h", "--help"} & set(args):  # pytest's own help: no lint run first
        return run(venv_bin("python"), "-m", "pytest", "--help", check=False)
    say("ruff check")
    run(venv_bin("ruff"), "check", ".")
    say("mypy")
    run(venv_bin("mypy"))
    say("pytest")
    if not any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in args):
        # one worker per core, whole files per worker (module-scoped sim farms start once)
        args = ["-n", "auto", "--dist", "loadfile", *args]
    return run(venv_bin("python"), "-m", "pytest", *args, check=False)


def cmd_demo(args: list[str]) -> int:
    ensure_env()
    return run(venv_bin("distrl"), "demo", *args, check=False)


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if not argv or argv[0] not in ("demo", "test"):
        print(__doc__)
        return 2
    try:
        return {"demo": cmd_demo, "test": cmd_test}[argv[0]](argv[1:])
    except subprocess.CalledProcessError as exc:
        say(f"failed: {' '.join(map(str, exc.cmd))} (exit {exc.returncode})")
        return exc.returncode or 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
