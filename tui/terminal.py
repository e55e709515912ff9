"""What the terminal can show: its colour system (detected, or forced with ``--color``)
and whether it draws real images (Kitty graphics / Sixel / iTerm, via textual-image).

Why detection needs help: Rich trusts ``COLORTERM``, and tmux does not pass it on by
default, so inside tmux every colour was downgraded to the 256-colour cube (a blue
launcher bands into purple, grey and teal) even where the outer terminal has 24-bit
colour. tmux itself knows (``client_termfeatures`` lists ``RGB``), and so does a user:
``--color truecolor`` forces it."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping

from rich.color import ColorSystem
from rich.console import Console

__all__ = ["COLOR_CHOICES", "IMAGE_CHOICES", "detect_color", "detect_image",
           "force_color_system"]

COLOR_CHOICES = ("auto", "truecolor", "256")
IMAGE_CHOICES = ("auto", "halfblock", "native")
_SYSTEMS = {"truecolor": ColorSystem.TRUECOLOR, "256": ColorSystem.EIGHT_BIT}
#: terminals that draw 24-bit colour without saying so in COLORTERM
_TRUECOLOR_PROGRAMS = ("iTerm.app", "WezTerm", "vscode", "ghostty", "Apple_Terminal")


def _tmux_has_rgb(env: Mapping[str, str]) -> bool:
    """Inside tmux ≥ 3.2: does the attached client's terminal have 24-bit colour?"""
    if not env.get("TMUX") or shutil.which("tmux") is None:
        return False
    try:
        out = subprocess.run(["tmux", "display-message", "-p", "#{client_termfeatures}"],
                             capture_output=True, text=True, timeout=2, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return "RGB" in out.stdout.split(",")


def detect_color(env: Mapping[str, str] | None = None) -> str:
    """``truecolor`` where the terminal says (COLORTERM, a known TERM_PROGRAM, a tmux
    client with RGB, a ``*-direct`` TERM), else ``auto`` (Rich decides from TERM)."""
    env = os.environ if env is None else env
    if env.get("COLORTERM", "").strip().lower() in ("truecolor", "24bit"):
        return "truecolor"
    if env.get("TERM_PROGRAM") in _TRUECOLOR_PROGRAMS or env.get("TERM", "").endswith(
            "-direct") or _tmux_has_rgb(env):
        return "truecolor"
    return "auto"


def force_color_system(console: Console, color: str) -> str:
    """Make ``console`` (the app's) draw in ``color``; returns the system in use. Textual
    renders every strip with ``console._color_system`` (textual/strip.py), and builds
    that console in ``App.__init__`` from an environment variable it read at import, so
    setting it here is the one place that works after import."""
    if color not in COLOR_CHOICES:
        raise ValueError(f"color must be one of {', '.join(COLOR_CHOICES)}, not {color!r}")
    if color in _SYSTEMS:
        console._color_system = _SYSTEMS[color]
    cs = console._color_system
    return {ColorSystem.TRUECOLOR: "truecolor", ColorSystem.EIGHT_BIT: "256",
            ColorSystem.STANDARD: "16"}.get(cs, "none") if cs is not None else "none"


def detect_image(env: Mapping[str, str] | None = None) -> str:
    """``native`` where textual-image finds Kitty graphics or Sixel on this terminal,
    else ``halfblock``. Not inside tmux or screen: they do not pass graphics through
    by default. Queries the terminal, so call it before the app starts, on a TTY."""
    env = os.environ if env is None else env
    if env.get("TMUX") or env.get("TERM", "").startswith("screen"):
        return "halfblock"
    if env.get("TERM_PROGRAM") == "iTerm.app":
        return "native"  # iTerm2 draws Sixel; textual-image's query is not needed
    try:
        from textual_image.renderable import sixel, tgp
    except Exception:  # no textual-image, or no terminal to ask
        return "halfblock"
    try:
        return "native" if sixel.query_terminal_support() or tgp.query_terminal_support() \
            else "halfblock"
    except Exception:
        return "halfblock"
