"""What every ``distrl`` command shares."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console
from rich.markup import escape

__all__ = ["CONTEXT", "KEY_FILE", "fail"]

#: click context settings of every command: -h as well as --help, help 100 columns wide
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

#: a key file (`distrl keys`) given on the command line: it must exist, and be a file
KEY_FILE = click.Path(dir_okay=False, exists=True, path_type=Path)

_stderr = Console(stderr=True, soft_wrap=True, highlight=False)


def fail(message: str, code: int = 2) -> NoReturn:
    """A one-line ``error: …`` on stderr (the message is text, never markup) and exit
    ``code``: 2 for a user's mistake, as every command promises."""
    _stderr.print(f"[bold red]error:[/] {escape(message)}")
    sys.exit(code)
