"""``python -m tui`` is ``distrl tui``."""

from tui.cli import main

if __name__ == "__main__":
    main()
