"""A forgiving reader for the JSON-ish text language models write.

Accepts strict JSON and, on top: single-quoted strings, bare keys and words, Python
literals (``True``/``None``), ``=`` for ``:``, missing or trailing commas, objects left
open at the end of the text (output cut off by a token limit), and unescaped quotes
inside strings when the next character shows the string cannot end there
(``'it's'``). Values come back as plain Python objects. Never raises anything but
:class:`LenientError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Final

__all__ = ["LenientError", "find_objects", "loads", "parse_fields", "parse_prefix"]

MAX_DEPTH: Final = 24
MAX_CANDIDATES: Final = 64
_WS = " \t\r\n"
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?%?")
_WORD = re.compile(r"[A-Za-z_$][\w$.\-]*")
_WORDS = {"true": True, "false": False, "null": None, "none": None}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\",
            '"': '"', "'": "'"}
_FENCE = re.compile(r"```[ \t]*[\w+-]*[ \t]*\n?(.*?)```", re.S)


class LenientError(ValueError):
    """The text is not even lenient JSON; ``str()`` says where and why."""


class _Reader:
    def __init__(self, text: str, pos: int = 0, *, auto_close: bool = True) -> None:
        self.s = text
        self.i = pos
        self.auto_close = auto_close

    def fail(self, what: str) -> LenientError:
        near = self.s[self.i : self.i + 20]
        return LenientError(f"{what} at offset {self.i}" + (f" near {near!r}" if near else ""))

    def ws(self) -> None:
        s, i = self.s, self.i
        while i < len(s) and s[i] in _WS:
            i += 1
        self.i = i

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def value(self, depth: int) -> object:
        if depth > MAX_DEPTH:
            raise self.fail("nested too deeply")
        self.ws()
        c = self.peek()
        if not c:
            raise self.fail("unexpected end of text")
        if c == "{":
            return self.obj(depth)
        if c in "[(":
            return self.arr(depth)
        if c in "\"'":
            return self.string()
        m = _NUMBER.match(self.s, self.i)
        if m:
            self.i = m.end()
            tok = m.group()
            if tok.endswith("%"):
                return tok
            try:
                return int(tok) if re.fullmatch(r"[+-]?\d+", tok) else float(tok)
            except (ValueError, OverflowError):
                return tok
        m = _WORD.match(self.s, self.i)
        if m:
            self.i = m.end()
            word = m.group()
            return _WORDS.get(word.lower(), word)
        raise self.fail("expected a value")

    def obj(self, depth: int) -> dict[str, object]:
        self.i += 1  # '{'
        out: dict[str, object] = {}
        while True:
            self.ws()
            c = self.peek()
            if c == "}":
                self.i += 1
                return out
            if c == ",":
                self.i += 1
                continue
            if not c:
                if self.auto_close:
                    return out
                raise self.fail("unclosed object")
            key = self.key()
            self.ws()
            if self.peek() not in (":", "="):
                raise self.fail(f"expected ':' after key {key!r}")
            self.i += 1
            self.ws()
            if not self.peek() and self.auto_close:
                raise self.fail(f"no value for key {key!r}")
            out[key] = self.value(depth + 1)

    def key(self) -> str:
        c = self.peek()
        if c and c in "\"'":
            return self.string()
        m = _WORD.match(self.s, self.i) or _NUMBER.match(self.s, self.i)
        if not m:
            raise self.fail("expected a key")
        self.i = m.end()
        return m.group()

    def arr(self, depth: int) -> list[object]:
        close = "]" if self.s[self.i] == "[" else ")"
        self.i += 1
        out: list[object] = []
        while True:
            self.ws()
            c = self.peek()
            if c == close:
                self.i += 1
                return out
            if c == ",":
                self.i += 1
                continue
            if not c:
                if self.auto_close:
                    return out
                raise self.fail("unclosed list")
            out.append(self.value(depth + 1))

    def string(self) -> str:
        s = self.s
        q = s[self.i]
        start = self.i
        i = self.i + 1
        buf: list[str] = []
        while i < len(s):
            c = s[i]
            if c == "\\" and i + 1 < len(s):
                e = s[i + 1]
                if e == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[i + 2 : i + 6]):
                    buf.append(chr(int(s[i + 2 : i + 6], 16)))
                    i += 6
                    continue
                buf.append(_ESCAPES.get(e, "\\" + e))
                i += 2
                continue
            if c == q and _closes(s, i + 1):
                self.i = i + 1
                return "".join(buf)
            buf.append(c)
            i += 1
        self.i = start
        raise self.fail("unterminated string")


def _closes(s: str, j: int) -> bool:
    """Whether a quote before ``s[j]`` can end a string: what follows must fit JSON."""
    while j < len(s) and s[j] in " \t":
        j += 1
    return j >= len(s) or s[j] in ",:}])=\r\n"


def loads(text: str) -> object:
    """One JSON-ish value filling ``text`` (surrounding whitespace allowed)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    r = _Reader(text)
    v = r.value(0)
    r.ws()
    if r.i != len(text):
        raise r.fail("extra text after the value")
    return v


def parse_prefix(text: str, pos: int) -> tuple[object, int]:
    """The value starting at ``text[pos]`` and the offset just after it."""
    r = _Reader(text, pos)
    v = r.value(0)
    return v, r.i


def parse_fields(text: str, pos: int) -> dict[str, object]:
    """``key: value, key: value …`` without braces, from ``pos`` until something else.

    Reads the AitW decision form (``"action_type": "TYPE", "typed_text": "hi"``); stops
    quietly at the first thing that is not another field and keeps what came before.
    """
    r = _Reader(text, pos)
    out: dict[str, object] = {}
    while True:
        r.ws()
        while r.peek() in (",", ";") and r.peek():
            r.i += 1
            r.ws()
        if not r.peek():
            return out
        save = r.i
        try:
            key = r.key()
            r.ws()
            if r.peek() not in (":", "="):
                raise r.fail("expected ':'")
            r.i += 1
            out[key] = r.value(1)
        except LenientError:
            r.i = save
            if not out:
                raise
            return out


def find_objects(text: str) -> Iterator[dict[str, object] | LenientError]:
    """Every ``{…}`` object in ``text``: fenced code blocks first, then in order.

    Yields each parsed object, or the error for an opening brace that starts no
    readable object (so a caller can report it when nothing better turns up).
    Nested objects are not yielded separately.
    """
    seen = 0
    regions = [m.group(1) for m in _FENCE.finditer(text)]
    regions.append(text)
    for region in regions:
        i = region.find("{")
        while i >= 0 and seen < MAX_CANDIDATES:
            seen += 1
            try:
                v, end = parse_prefix(region, i)
            except LenientError as exc:
                yield exc
                i = region.find("{", i + 1)
                continue
            if isinstance(v, dict):
                yield v
            i = region.find("{", max(end, i + 1))
