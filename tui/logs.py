"""The Logs screen: everything the TUI noticed (state changes, commands and their
results, connection changes, rejected messages) and the counts of rejected messages by
reason. Bounded: the newest 2000 lines."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Footer, RichLog, Static

from tui.base import AppScreen

__all__ = ["LogsScreen"]

_LEVEL_STYLE = {"info": "", "warning": "yellow", "error": "red"}


class LogsScreen(AppScreen):
    DEFAULT_CSS = """
    LogsScreen #title { height: 1; background: $primary; padding: 0 1; }
    LogsScreen #garbage { height: auto; padding: 0 1; }
    LogsScreen #log { height: 1fr; }
    """

    def __init__(self) -> None:
        super().__init__()
        self._shown = 0
        self._garbage_line = ""

    def compose(self) -> ComposeResult:
        yield Static("[b]DistRL[/b] logs", id="title")
        yield Static(id="garbage")
        yield RichLog(id="log", max_lines=2000, wrap=False, markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_from_model()

    def refresh_from_model(self) -> None:
        if not self.is_mounted:
            return
        m = self.tui.model
        new = m.log_total - self._shown
        if new > 0:
            log = self.query_one("#log", RichLog)
            for ln in list(m.logs)[-min(new, len(m.logs)):]:
                line = Text(f"{datetime.fromtimestamp(ln.at, UTC):%H:%M:%S} ", style="dim")
                line.append(f"{ln.level:<8}", style=_LEVEL_STYLE.get(ln.level, ""))
                line.append(ln.text)
                log.write(line)
            self._shown = m.log_total
        counts = ", ".join(f"{r} {n}" for r, n in sorted(m.garbage.items()))
        text = (f"rejected messages: {sum(m.garbage.values())}" + (f" ({counts})" if counts
                else "") + f" · messages received: {m.messages}")
        if text != self._garbage_line:
            self._garbage_line = text
            self.query_one("#garbage", Static).update(text)
