"""What every ``distrl`` command shares."""

from __future__ import annotations

__all__ = ["CONTEXT"]

#: click context settings of every command: -h as well as --help, help 100 columns wide
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
