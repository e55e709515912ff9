"""``python -m farm.cli``: the ``distrl`` command (what child processes run)."""

from farm.cli import main

main()
