"""Command palette (``ctrl+p``): every device action on every device, the screens, and
help. In read-only mode the mutations are left out."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from tui.host import TuiHost

__all__ = ["FarmCommands"]


class FarmCommands(Provider):
    @property
    def tui(self) -> TuiHost:
        return cast("TuiHost", self.app)

    async def discover(self) -> Hits:
        for text, help_text, callback in self.tui.palette_commands(current_only=True):
            yield DiscoveryHit(text, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, help_text, callback in self.tui.palette_commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(callback), help=help_text)
