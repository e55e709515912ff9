"""The one view tree: every screen is a tree of ``View`` nodes with absolute bounds.

Apps build the tree from their state on demand; ``finalize`` then clips it to what is
visible. The renderer paints exactly these nodes and the uiautomator dump serialises
exactly these nodes, so the bounds an agent reads are the pixels it sees. Behaviour
(click, scroll, drag, text entry) hangs off the same nodes so hit-testing uses them too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

Rect = tuple[int, int, int, int]  # left, top, right, bottom in physical pixels

EMPTY: Rect = (0, 0, 0, 0)


def intersect(a: Rect, b: Rect) -> Rect | None:
    left, top = max(a[0], b[0]), max(a[1], b[1])
    right, bottom = min(a[2], b[2]), min(a[3], b[3])
    if right <= left or bottom <= top:
        return None
    return (left, top, right, bottom)


def contains(outer: Rect, inner: Rect) -> bool:
    return (outer[0] <= inner[0] and outer[1] <= inner[1]
            and inner[2] <= outer[2] and inner[3] <= outer[3])


def hit(r: Rect, x: float, y: float) -> bool:
    return r[0] <= x < r[2] and r[1] <= y < r[3]


@dataclass(frozen=True, slots=True)
class Paint:
    """What the renderer draws for a node (its own box; children draw themselves).

    ``kind`` picks a drawing routine in render.py; colours are theme roles so one tree
    renders in light and dark theme. Sizes are in dp/sp, converted with the density.
    """

    kind: str  # fill | text | icon | switch | slider | card | button | edit | divider | ...
    color: str = ""  # theme role of the main ink
    size: float = 0.0  # text size in sp, icon size in dp
    icon: str = ""
    text: str = ""  # text to draw when it differs from the node's text (e.g. hint)
    align: str = "left"  # left | center | right
    radius: float = 0.0  # corner radius in dp
    value: float = 0.0  # slider fraction, battery level, ...
    bg: str = ""  # theme role of a background fill
    bold: bool = False
    extra: tuple[str, ...] = ()


class TextField:
    """State of one EditText: what was typed and where the caret is (always the end)."""

    def __init__(self, hint: str = "", text: str = "",
                 on_change: Callable[[str], None] | None = None,
                 on_submit: Callable[[str], None] | None = None) -> None:
        self.hint = hint
        self.text = text
        self.on_change = on_change
        self.on_submit = on_submit
        self.all_selected = False  # Ctrl+A: the next key replaces or deletes it all

    def select_all(self) -> None:
        self.all_selected = bool(self.text)

    def insert(self, s: str) -> None:
        self.text = s if self.all_selected else self.text + s
        self.all_selected = False
        if self.on_change is not None:
            self.on_change(self.text)

    def delete(self) -> None:
        if self.text:
            self.text = "" if self.all_selected else self.text[:-1]
            self.all_selected = False
            if self.on_change is not None:
                self.on_change(self.text)

    def set(self, s: str) -> None:
        self.text = s
        self.all_selected = False
        if self.on_change is not None:
            self.on_change(s)


@dataclass(eq=False, slots=True)
class View:
    """One node: AccessibilityNodeInfo fields + how to draw it + how it reacts."""

    cls: str = "android.widget.FrameLayout"
    bounds: Rect = EMPTY
    text: str = ""
    rid: str = ""
    desc: str = ""
    checkable: bool = False
    checked: bool = False
    clickable: bool = False
    enabled: bool = True
    focusable: bool = False
    focused: bool = False
    scrollable: bool = False
    long_clickable: bool = False
    password: bool = False
    selected: bool = False
    package: str = ""  # empty: inherit from the parent (set by finalize)
    children: list[View] = field(default_factory=list)
    paint: Paint | None = None
    # behaviour, never serialised
    on_click: Callable[[], None] | None = None
    on_long_click: Callable[[], None] | None = None
    on_scroll: Callable[[int, int], bool] | None = None  # (dx, dy) finger delta → consumed
    on_drag: Callable[[float, float], None] | None = None  # (x, y) finger position
    edit: TextField | None = None
    clips: bool = False  # clips its children (scroll containers, windows)
    hidden: bool = False
    # computed by finalize(): bounds clipped to the screen and clipping ancestors
    vis: Rect | None = None
    clip: Rect = EMPTY

    def add(self, *views: View) -> View:
        self.children.extend(views)
        return self

    def walk(self) -> Iterator[View]:
        """Visible nodes, pre-order (parents before children)."""
        if self.vis is None:
            return
        yield self
        for c in self.children:
            yield from c.walk()


def finalize(root: View, package: str, screen: Rect) -> None:
    """Fill inherited packages and compute visible bounds; invisible subtrees get vis=None."""
    _finalize(root, package, screen)


def _finalize(v: View, package: str, clip: Rect) -> None:
    if not v.package:
        v.package = package
    vis = None if v.hidden else intersect(v.bounds, clip)
    v.vis = vis
    v.clip = clip
    if vis is None:
        for c in v.children:
            _hide(c)
        return
    inner = vis if v.clips else clip
    for c in v.children:
        _finalize(c, v.package, inner)


def _hide(v: View) -> None:
    v.vis = None
    for c in v.children:
        _hide(c)


def signature(v: View) -> tuple[object, ...]:
    """Everything visible about a subtree; equal signatures draw equal pixels."""
    if v.vis is None:
        return ()
    return (v.cls, v.vis, v.bounds, v.text, v.rid, v.desc, v.package, v.checked, v.enabled,
            v.focused, v.selected, v.paint,
            tuple(signature(c) for c in v.children))


def find_hit(root: View, x: float, y: float,
             want: Callable[[View], bool]) -> View | None:
    """Deepest, last-drawn visible node under (x, y) that satisfies ``want``."""
    if root.vis is None or not hit(root.vis, x, y):
        return None
    for c in reversed(root.children):
        found = find_hit(c, x, y, want)
        if found is not None:
            return found
    return root if want(root) else None
