"""The Learner screen: one sparkline per learner scalar (success rate, returns, losses,
entropy, policy lag, replay size, trajectories/min …) with its latest value and range,
plus the published policy pointer and each farm's own metrics."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime

from rich.markup import escape
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Footer, Label, Sparkline, Static

from tui.base import AppScreen
from tui.model import LEARNER_SERIES

__all__ = ["LearnerScreen"]


def _fmt(v: float) -> str:
    return f"{v:.4g}" if abs(v) < 1e5 else f"{v:.3e}"


def series_widget_id(name: str) -> str:
    """A valid, unique Textual id for any metric name.

    Producers name metrics freely (``train/actor_loss``, ``rejected/bad json``); Textual
    ids allow only letters, digits, ``-`` and ``_``. The readable part is sanitised and
    a short hash of the exact name keeps two names that sanitise alike apart.
    """
    readable = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:48]
    digest = hashlib.blake2s(name.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    return f"series-{readable}-{digest}"


class SeriesRow(Horizontal):
    """Name and numbers on the left, the sparkline on the right."""

    DEFAULT_CSS = """
    SeriesRow { height: 3; }
    SeriesRow Label { width: 40; padding: 1 1 0 1; }
    SeriesRow Sparkline { width: 1fr; height: 3; }
    """

    def __init__(self, name: str, title: str, data: list[float] | None = None) -> None:
        super().__init__(id=series_widget_id(name))
        self.series = name
        self.title = title
        self.initial = data or []

    def compose(self) -> ComposeResult:
        yield Label(f"{escape(self.title)}: no data yet")
        yield Sparkline([], summary_function=max)

    def on_mount(self) -> None:
        self.show(self.initial)

    def show(self, data: list[float]) -> None:
        if not data:
            return
        self.query_one(Label).update(
            f"[b]{escape(self.title)}[/b] {_fmt(data[-1])}  [dim]min {_fmt(min(data))} "
            f"max {_fmt(max(data))}[/]")
        self.query_one(Sparkline).data = data


class LearnerScreen(AppScreen):
    DEFAULT_CSS = """
    LearnerScreen #title { height: 1; background: $primary; padding: 0 1; }
    LearnerScreen #summary { height: auto; padding: 0 1; border: round $primary; }
    """

    def __init__(self) -> None:
        super().__init__()
        self._rev = -1

    def compose(self) -> ComposeResult:
        yield Static("[b]DistRL[/b] learner", id="title")
        yield Static(id="summary")
        with VerticalScroll(id="series"):
            for name, title in LEARNER_SERIES:
                yield SeriesRow(name, title)
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_from_model()

    def refresh_from_model(self) -> None:
        if not self.is_mounted:
            return
        m = self.tui.model
        if m.learner_rev == self._rev:
            return
        self._rev = m.learner_rev
        rows = {r.series: r for r in self.query(SeriesRow)}
        box = self.query_one("#series", VerticalScroll)
        for name in sorted(m.series):
            if name not in rows:
                rows[name] = SeriesRow(name, name.replace("_", " "), list(m.series[name]))
                box.mount(rows[name])
                continue
            rows[name].show(list(m.series[name]))
        parts = []
        head = m.headline()
        if head is not None:
            note = "" if head[0].startswith("held-out") else \
                " [dim](training window: no held-out evaluation yet)[/]"
            parts.append(f"[b]{head[0]} {escape(head[1])}[/b]{note}")
        if m.learner_seen is None:
            parts.append("[dim]no learner metrics yet (topic distrl/v1/learner/metrics)[/]")
        else:
            parts.append(f"learner step {m.learner_step if m.learner_step is not None else '-'}"
                         f" · last update {datetime.fromtimestamp(m.learner_seen, UTC):%H:%M:%S}Z")
        if m.pointer is not None:
            p = m.pointer
            parts.append(f"published policy [b]v{p.version}[/b] ({p.kind}, {p.size} B, "
                         f"sha256 {p.sha256[:12]}…)")
        for farm, sc in sorted(m.farm_metrics.items()):
            vals = "  ".join(f"{k} {_fmt(v)}" for k, v in sorted(sc.items())[:8])
            parts.append(f"farm [b]{escape(farm)}[/b]: {escape(vals)}")
        self.query_one("#summary", Static).update("\n".join(parts))
