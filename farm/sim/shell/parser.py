"""Tokenizer and parser for the subset of mksh (Android's /system/bin/sh) hosts use.

Produces a tiny immutable AST so parsed command lines can be cached: agents send the
same few lines (``screencap``, ``uiautomator dump …``) thousands of times.

Grammar (what adb, adbutils and agent frameworks actually send)::

    script   := sep* and_or (sep+ and_or)* sep*        sep: ';' '\\n' '&' (a job)
    and_or   := pipeline (('&&' | '||') '\\n'* pipeline)*
    pipeline := ['!'] command ('|' '\\n'* command)*
    command  := (word | redirect)+ | '(' script ')' redirect*

Words keep their quoting so ``$VAR`` is split only when unquoted, and expansion
happens at run time (``$?`` changes between commands).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from functools import lru_cache

# Word part kinds: literal text (quoted or not), a variable, or a command substitution.
LIT = 0  # unquoted literal
QLIT = 1  # quoted literal (no globbing, no splitting)
VAR = 2  # unquoted $NAME: split on whitespace
QVAR = 3  # "$NAME"
CMDSUB = 4  # unquoted $(…) / `…`
QCMDSUB = 5  # "$(…)"

MAX_NESTING = 32  # ( ( ( … ) ) ) and $( $( … ) ) deeper than this is refused, never recursed

_PLAIN = re.compile(r"[^\s;&|()<>\\'\"$`#]+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL_VARS = set("?$#!-@*0123456789")


class ShellSyntaxError(Exception):
    """A parse error; ``message`` follows mksh's wording."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class Word:
    parts: tuple[tuple[int, str], ...]
    glob: bool = False  # has an unquoted * ? or [

    @property
    def literal(self) -> str | None:
        """The text if the word has no expansions, else None."""
        if all(k in (LIT, QLIT) for k, _ in self.parts):
            return "".join(t for _, t in self.parts)
        return None


@dataclass(frozen=True, slots=True)
class Redirect:
    fd: int
    op: str  # '<' '>' '>>' '>&' '<&'
    target: Word


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...]


@dataclass(frozen=True, slots=True)
class Group:
    """``( script )``: a subshell."""

    body: tuple[AndOr, ...]
    redirects: tuple[Redirect, ...]


@dataclass(frozen=True, slots=True)
class Pipeline:
    commands: tuple[SimpleCommand | Group, ...]
    negate: bool = False


@dataclass(frozen=True, slots=True)
class AndOr:
    first: Pipeline
    rest: tuple[tuple[str, Pipeline], ...] = ()
    background: bool = False  # ended by `&`: runs as a job, the shell goes on


Script = tuple[AndOr, ...]

# Token kinds
_WORD, _OP, _REDIR = 0, 1, 2


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: int
    op: str = ""  # for _OP and _REDIR
    word: Word | None = None
    fd: int = -1  # for _REDIR; -1 means the default fd of op


def _find_closing_paren(s: str, i: int) -> int:
    """Index of the ')' closing a '$(' whose body starts at i; -1 if none.

    Iterative with a depth counter so deeply nested input cannot blow the stack.
    """
    depth = 1
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            j = s.find("'", i + 1)
            if j < 0:
                return -1
            i = j + 1
            continue
        if c == '"':
            i += 1
            while i < n and s[i] != '"':
                i += 2 if s[i] == "\\" else 1
            i += 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


class _Lexer:
    def __init__(self, src: str) -> None:
        self.s = src
        self.i = 0
        self.toks: list[_Tok] = []
        self.parts: list[tuple[int, str]] = []
        self.buf: list[str] = []
        self.buf_quoted = False
        self.in_word = False
        self.glob = False

    # -- word assembly -------------------------------------------------------------
    def _flush_buf(self) -> None:
        if self.buf:
            self.parts.append((QLIT if self.buf_quoted else LIT, "".join(self.buf)))
            self.buf = []

    def _lit(self, text: str, quoted: bool) -> None:
        self.in_word = True
        if self.buf and self.buf_quoted != quoted:
            self._flush_buf()
        self.buf_quoted = quoted
        self.buf.append(text)
        if not quoted and not self.glob and ("*" in text or "?" in text or "[" in text):
            self.glob = True

    def _part(self, kind: int, text: str) -> None:
        self.in_word = True
        self._flush_buf()
        self.parts.append((kind, text))

    def _end_word(self) -> None:
        if not self.in_word:
            return
        self._flush_buf()
        self.toks.append(_Tok(_WORD, word=Word(tuple(self.parts), self.glob)))
        self.parts = []
        self.in_word = False
        self.glob = False

    # -- scanning ------------------------------------------------------------------
    def _dollar(self, quoted: bool) -> None:
        """At s[i] == '$'."""
        s, i = self.s, self.i
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if nxt == "(":
            end = _find_closing_paren(s, i + 2)
            if end < 0:
                raise ShellSyntaxError("syntax error: '(' unmatched")
            self._part(QCMDSUB if quoted else CMDSUB, s[i + 2 : end])
            self.i = end + 1
            return
        if nxt == "{":
            end = s.find("}", i + 2)
            if end < 0:
                raise ShellSyntaxError("syntax error: missing '}'")
            name = s[i + 2 : end]
            if not (_NAME.fullmatch(name) or (len(name) == 1 and name in _SPECIAL_VARS)):
                raise ShellSyntaxError(f"${{{name}}}: bad substitution")
            self._part(QVAR if quoted else VAR, name)
            self.i = end + 1
            return
        if nxt and nxt in _SPECIAL_VARS:
            self._part(QVAR if quoted else VAR, nxt)
            self.i = i + 2
            return
        m = _NAME.match(s, i + 1)
        if m:
            self._part(QVAR if quoted else VAR, m.group())
            self.i = m.end()
            return
        self._lit("$", quoted)
        self.i = i + 1

    def _backtick(self, quoted: bool) -> None:
        end = self.s.find("`", self.i + 1)
        if end < 0:
            raise ShellSyntaxError("no closing quote")
        self._part(QCMDSUB if quoted else CMDSUB, self.s[self.i + 1 : end])
        self.i = end + 1

    def _double_quoted(self) -> None:
        s = self.s
        self.i += 1
        self.in_word = True
        if s.startswith('"', self.i):  # "" is an (empty) word of its own
            self._lit("", True)
        n = len(s)
        while True:
            if self.i >= n:
                raise ShellSyntaxError("no closing quote")
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 < n and s[self.i + 1] in '$`"\\\n':
                if s[self.i + 1] != "\n":
                    self._lit(s[self.i + 1], True)
                self.i += 2
            elif c == "$":
                self._dollar(True)
            elif c == "`":
                self._backtick(True)
            else:
                j = self.i + 1
                while j < n and s[j] not in '"\\$`':
                    j += 1
                self._lit(s[self.i : j], True)
                self.i = j

    def _redirect(self, c: str) -> None:
        fd = -1
        # "2>" : a word made only of digits right before the operator is the fd
        if self.in_word and not self.buf_quoted and len(self.parts) == 0 and self.buf:
            text = "".join(self.buf)
            if text.isdecimal() and len(text) <= 2:
                fd = int(text)
                self.buf = []
                self.in_word = False
                self.glob = False
        self._end_word()
        s, i = self.s, self.i
        two = s[i : i + 2]
        if two in (">>", ">&", "<&", ">|"):
            op = ">" if two == ">|" else two
            self.i = i + 2
        elif two == "<<":
            raise ShellSyntaxError("syntax error: '<<' unexpected")
        else:
            op = c
            self.i = i + 1
        self.toks.append(_Tok(_REDIR, op=op, fd=fd))

    def run(self) -> list[_Tok]:
        s = self.s
        n = len(s)
        while self.i < n:
            c = s[self.i]
            m = _PLAIN.match(s, self.i)
            if m:
                self._lit(m.group(), False)
                self.i = m.end()
                continue
            if c in " \t\r\f\v":
                self._end_word()
                self.i += 1
            elif c == "\n":
                self._end_word()
                self.toks.append(_Tok(_OP, op="\n"))
                self.i += 1
            elif c == "#":
                if self.in_word:
                    self._lit("#", False)
                    self.i += 1
                else:
                    j = s.find("\n", self.i)
                    self.i = n if j < 0 else j
            elif c == "'":
                j = s.find("'", self.i + 1)
                if j < 0:
                    raise ShellSyntaxError("no closing quote")
                self._lit(s[self.i + 1 : j], True)
                self.i = j + 1
            elif c == '"':
                self._double_quoted()
            elif c == "\\":
                if self.i + 1 >= n:
                    self._lit("\\", False)
                    self.i += 1
                elif s[self.i + 1] == "\n":  # line continuation
                    self.i += 2
                else:
                    self._lit(s[self.i + 1], True)
                    self.i += 2
            elif c == "$":
                self._dollar(False)
            elif c == "`":
                self._backtick(False)
            elif c in "<>":
                self._redirect(c)
            else:  # ; & | ( )
                self._end_word()
                two = s[self.i : self.i + 2]
                if two in ("&&", "||", ";;"):
                    op = two
                elif two == "&>":
                    # mksh/bash: &>file is >file 2>&1 (split by the parser)
                    self.toks.append(_Tok(_REDIR, op="&>", fd=1))
                    self.i += 2
                    continue
                else:
                    op = c
                self.toks.append(_Tok(_OP, op=op))
                self.i += len(op)
        self._end_word()
        return self.toks


def _unexpected(tok: _Tok | None) -> ShellSyntaxError:
    if tok is None:
        return ShellSyntaxError("syntax error: unexpected EOF")
    if tok.kind == _OP:
        what = "newline" if tok.op == "\n" else tok.op
        return ShellSyntaxError(f"syntax error: '{what}' unexpected")
    return ShellSyntaxError("syntax error: unexpected EOF")


class _Parser:
    def __init__(self, toks: list[_Tok]) -> None:
        self.toks = toks
        self.i = 0
        self.depth = 0

    def _peek(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def _is_op(self, *ops: str) -> bool:
        t = self._peek()
        return t is not None and t.kind == _OP and t.op in ops

    def _skip_newlines(self) -> None:
        while self._is_op("\n"):
            self.i += 1

    def script(self, closing: bool = False) -> Script:
        items: list[AndOr] = []
        self._skip_newlines()
        while True:
            t = self._peek()
            if t is None or (closing and t.kind == _OP and t.op == ")"):
                break
            items.append(self.and_or())
            t = self._peek()
            if t is None or (closing and t.kind == _OP and t.op == ")"):
                break
            if t.kind == _OP and t.op in (";", "\n", "&"):
                if t.op == "&":
                    items[-1] = dataclasses.replace(items[-1], background=True)
                self.i += 1
                self._skip_newlines()
                continue
            raise _unexpected(t)
        return tuple(items)

    def and_or(self) -> AndOr:
        first = self.pipeline()
        rest: list[tuple[str, Pipeline]] = []
        while self._is_op("&&", "||"):
            t = self._peek()
            assert t is not None
            self.i += 1
            self._skip_newlines()
            rest.append((t.op, self.pipeline()))
        return AndOr(first, tuple(rest))

    def pipeline(self) -> Pipeline:
        negate = False
        t = self._peek()
        if t is not None and t.kind == _WORD and t.word is not None and t.word.parts == (
            (LIT, "!"),
        ):
            negate = True
            self.i += 1
        cmds = [self.command()]
        while self._is_op("|"):
            self.i += 1
            self._skip_newlines()
            cmds.append(self.command())
        return Pipeline(tuple(cmds), negate)

    def _redirects(self) -> list[Redirect]:
        t = self._peek()
        assert t is not None
        if t.op == "&>":
            r = self._redirect()
            return [Redirect(1, ">", r.target), Redirect(2, ">&", Word(((LIT, "1"),)))]
        return [self._redirect()]

    def _redirect(self) -> Redirect:
        t = self._peek()
        assert t is not None
        self.i += 1
        target = self._peek()
        if target is None or target.kind != _WORD or target.word is None:
            raise _unexpected(target)
        self.i += 1
        fd = t.fd if t.fd >= 0 else (0 if t.op.startswith("<") else 1)
        return Redirect(fd, ">" if t.op == "&>" else t.op, target.word)

    def command(self) -> SimpleCommand | Group:
        t = self._peek()
        if t is not None and t.kind == _OP and t.op == "(":
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise ShellSyntaxError("syntax error: expression recurses too deeply")
            self.i += 1
            body = self.script(closing=True)
            if not self._is_op(")"):
                raise ShellSyntaxError("syntax error: '(' unmatched")
            if not body:
                raise ShellSyntaxError("syntax error: ')' unexpected")
            self.i += 1
            self.depth -= 1
            redirs: list[Redirect] = []
            while (t2 := self._peek()) is not None and t2.kind == _REDIR:
                redirs.extend(self._redirects())
            return Group(body, tuple(redirs))
        words: list[Word] = []
        redirects: list[Redirect] = []
        while (t := self._peek()) is not None:
            if t.kind == _WORD:
                assert t.word is not None
                words.append(t.word)
                self.i += 1
            elif t.kind == _REDIR:
                redirects.extend(self._redirects())
            else:
                break
        if not words and not redirects:
            raise _unexpected(self._peek())
        return SimpleCommand(tuple(words), tuple(redirects))


def _parse(src: str) -> Script:
    p = _Parser(_Lexer(src).run())
    script = p.script()
    if p.i < len(p.toks):
        raise _unexpected(p.toks[p.i])
    return script


@lru_cache(maxsize=512)
def _parse_cached(src: str) -> Script:
    return _parse(src)


def parse(src: str) -> Script:
    """Parse a command line; raises ``ShellSyntaxError``. Short lines are cached."""
    if len(src) <= 2048:
        return _parse_cached(src)
    return _parse(src)
