"""Modal screens: confirm a destructive action, ask for a task name / instruction, and
the ``?`` help that lists every key."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Button, Input, Label, Static

__all__ = ["ConfirmScreen", "HelpScreen", "PromptScreen"]

_MODAL_CSS = """
ConfirmScreen, PromptScreen, HelpScreen { align: center middle; }
#dialog {
    width: 64; height: auto; max-height: 90%; padding: 1 2;
    border: thick $warning; background: $surface;
}
#dialog Label { width: 100%; margin-bottom: 1; }
#dialog Horizontal { height: auto; align-horizontal: right; }
#dialog Button { margin-left: 2; }
HelpScreen #dialog { width: 76; border: thick $primary; }
"""


class ConfirmScreen(ModalScreen[bool]):
    """Yes/no; ``y``/``enter`` confirm, ``n``/``esc`` cancel."""

    DEFAULT_CSS = _MODAL_CSS
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.question, id="question")
            with Horizontal():
                yield Button("No", id="no")
                yield Button("Yes", id="yes", variant="error")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class PromptScreen(ModalScreen[str | None]):
    """One line of input; ``enter`` submits (empty input is refused), ``esc`` cancels."""

    DEFAULT_CSS = _MODAL_CSS
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, question: str, placeholder: str = "", value: str = "",
                 choices: Sequence[str] = ()) -> None:
        super().__init__()
        self.question = question
        self.placeholder = placeholder
        self.value = value
        # with choices: typing completes to one of them (→ accepts) and nothing else is
        # sent, so a typo is caught here rather than refused by the farm
        self.choices = list(choices)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.question)
            suggester = SuggestFromList(self.choices) if self.choices else None
            yield Input(self.value, placeholder=self.placeholder, id="answer",
                        suggester=suggester)
            yield Label("enter: send   → complete   esc: cancel" if self.choices
                        else "enter: send   esc: cancel", classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            self.notify("type something first (esc cancels)", severity="warning")
            return
        if self.choices and text not in self.choices:
            near = [c for c in self.choices if text.lower() in c.lower()][:6]
            self.notify(f"{text!r} is not one of them" + (
                f"; did you mean {', '.join(near)}?" if near else ""), severity="warning")
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """Every key of the app, by section (built from the live bindings, so complete)."""

    DEFAULT_CSS = _MODAL_CSS
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def __init__(self, sections: Iterable[tuple[str, list[tuple[str, str]]]],
                 note: str = "") -> None:
        super().__init__()
        self.sections = list(sections)
        self.note = note

    def compose(self) -> ComposeResult:
        lines: list[str] = []
        for title, keys in self.sections:
            lines.append(f"[b]{title}[/b]")
            lines += [f"  [reverse] {k} [/reverse]  {desc}" for k, desc in keys]
            lines.append("")
        if self.note:
            lines.append(self.note)
        with Vertical(id="dialog"):
            yield Label("[b]DistRL TUI: keys[/b]   (esc closes)")
            with VerticalScroll():
                yield Static("\n".join(lines), id="keys")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
