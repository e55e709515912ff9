"""A small SQL ``WHERE`` evaluator for ``content query --where`` over in-memory rows.

Supports ``=, ==, !=, <>, <, <=, >, >=``, ``[NOT] LIKE``, ``IS [NOT] NULL``, ``[NOT] IN
(…)``, ``AND``/``OR``/``NOT`` and parentheses; string literals in single or double quotes,
numbers, and SQLite's loose typing (a number compares numerically with a numeric string).
"""

from __future__ import annotations

import re
from collections.abc import Callable

Value = str | int | None
Row = dict[str, Value]
Pred = Callable[[Row], bool]


class SqlError(Exception):
    """What SQLiteException would report (message only)."""


_TOKEN = re.compile(r"""\s*(?:(?P<num>-?\d+(?:\.\d+)?)|'(?P<sq>(?:[^']|'')*)'|"(?P<dq>[^"]*)"|"""
                    r"""(?P<op><=|>=|==|!=|<>|=|<|>|\(|\)|,)|(?P<word>[A-Za-z_][A-Za-z0-9_.]*))""")


def _tokenize(s: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    s = s.rstrip()
    while pos < len(s):
        m = _TOKEN.match(s, pos)
        if m is None or m.end() == pos:
            raise SqlError(f'near "{s[pos:].strip()[:10]}": syntax error')
        pos = m.end()
        kind = m.lastgroup or ""
        text = m.group(kind)
        if kind == "sq":
            out.append(("str", text.replace("''", "'")))
        elif kind == "dq":
            out.append(("ident", text))
        elif kind == "word":
            up = text.upper()
            out.append(("kw", up) if up in _KEYWORDS else ("ident", text))
        else:
            out.append((kind, text))
    return out


_KEYWORDS = {"AND", "OR", "NOT", "LIKE", "IS", "NULL", "IN"}


def _num(v: object) -> float | None:
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return None


def _cmp(a: Value | float, b: Value | float, op: str) -> bool:
    if a is None or b is None:
        return False
    na, nb = _num(a), _num(b)
    x: object
    y: object
    if na is not None and nb is not None:
        x, y = na, nb
    else:
        x, y = str(a), str(b)
    if op in ("=", "=="):
        return x == y
    if op in ("!=", "<>"):
        return x != y
    assert isinstance(x, str | float) and isinstance(y, str | float)
    if op == "<":
        return x < y  # type: ignore[operator]
    if op == "<=":
        return x <= y  # type: ignore[operator]
    if op == ">":
        return x > y  # type: ignore[operator]
    return x >= y  # type: ignore[operator]


def _like(value: Value, pattern: str) -> bool:
    if value is None:
        return False
    rx = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, str(value), re.IGNORECASE | re.DOTALL) is not None


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], columns: list[str]) -> None:
        self.t = tokens
        self.i = 0
        self.columns = columns

    def peek(self) -> tuple[str, str]:
        return self.t[self.i] if self.i < len(self.t) else ("end", "")

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        self.i += 1
        return tok

    def expect(self, kind: str, text: str | None = None) -> tuple[str, str]:
        tok = self.take()
        if tok[0] != kind or (text is not None and tok[1] != text):
            raise SqlError(f'near "{tok[1]}": syntax error')
        return tok

    def is_kw(self, word: str) -> bool:
        return self.peek() == ("kw", word)

    def parse(self) -> Pred:
        p = self.expr()
        if self.peek()[0] != "end":
            raise SqlError(f'near "{self.peek()[1]}": syntax error')
        return p

    def expr(self) -> Pred:
        left = self.term()
        while self.is_kw("OR"):
            self.take()
            right = self.term()
            left = (lambda a, b: lambda r: a(r) or b(r))(left, right)
        return left

    def term(self) -> Pred:
        left = self.factor()
        while self.is_kw("AND"):
            self.take()
            right = self.factor()
            left = (lambda a, b: lambda r: a(r) and b(r))(left, right)
        return left

    def factor(self) -> Pred:
        if self.is_kw("NOT"):
            self.take()
            inner = self.factor()
            return lambda r: not inner(r)
        if self.peek() == ("op", "("):
            self.take()
            inner = self.expr()
            self.expect("op", ")")
            return inner
        return self.comparison()

    def operand(self) -> Callable[[Row], Value | float]:
        kind, text = self.take()
        if kind == "num":
            n = float(text)
            return lambda _r: int(n) if n.is_integer() else n
        if kind == "str":
            return lambda _r: text
        if kind == "ident":
            if text not in self.columns:
                raise SqlError(f"no such column: {text}")
            return lambda r: r.get(text)
        if (kind, text) == ("kw", "NULL"):
            return lambda _r: None
        raise SqlError(f'near "{text}": syntax error')

    def comparison(self) -> Pred:
        left = self.operand()
        negate = False
        if self.is_kw("IS"):
            self.take()
            if self.is_kw("NOT"):
                self.take()
                negate = True
            self.expect("kw", "NULL")
            return lambda r: (left(r) is None) != negate
        if self.is_kw("NOT"):
            self.take()
            negate = True
        if self.is_kw("LIKE"):
            self.take()
            pat = self.operand()
            return lambda r: _like(left(r), str(pat(r))) != negate  # type: ignore[arg-type]
        if self.is_kw("IN"):
            self.take()
            self.expect("op", "(")
            items = [self.operand()]
            while self.peek() == ("op", ","):
                self.take()
                items.append(self.operand())
            self.expect("op", ")")
            return lambda r: any(_cmp(left(r), it(r), "=") for it in items) != negate
        kind, op = self.take()
        if kind != "op" or op in ("(", ")", ","):
            raise SqlError(f'near "{op}": syntax error')
        right = self.operand()
        return lambda r: _cmp(left(r), right(r), op)


def compile_where(where: str, columns: list[str]) -> Pred:
    """A predicate over rows; raises SqlError like SQLite would."""
    if not where.strip():
        return lambda _r: True
    return _Parser(_tokenize(where), columns).parse()


def sort_rows(rows: list[Row], order: str, columns: list[str]) -> list[Row]:
    """``--sort "col [ASC|DESC], …"`` (stable, NULLs first as in SQLite)."""
    keys: list[tuple[str, bool]] = []
    for part in order.split(","):
        words = part.split()
        if not words:
            continue
        col = words[0].strip('"')
        if col not in columns:
            raise SqlError(f"no such column: {col}")
        keys.append((col, len(words) > 1 and words[1].upper() == "DESC"))
    out = list(rows)
    for col, desc in reversed(keys):
        def key(r: Row, col: str = col) -> tuple[int, float, str]:
            v = r.get(col)
            n = _num(v)
            if v is None:
                return (0, 0.0, "")
            return (1, n, "") if n is not None else (2, 0.0, str(v))
        out.sort(key=key, reverse=desc)
    return out
