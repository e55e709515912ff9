"""toybox text tools: ``sed``, ``awk``, ``tr``, ``cut``, ``md5sum``.

Small, faithful subsets of what phone scripts use: ``sed -n``/``-e``/``-E``/``-i`` with
``s///[gpI]``, ``p``, ``d``, ``q`` and line/``$``/``/re/`` addresses; ``awk -F`` with
``BEGIN``/``END``, ``/re/`` and comparison patterns, ``print`` and ``printf``. Anything
outside the subset fails with the tool's own kind of error, never a crash.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from farm.sim.shell.commands.filters import _bre_to_python
from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import Proc

MAX_LINES = 200_000  # a script looping over more than this is cut off, not run forever


def _sources(p: Proc, files: list[str], name: str) -> tuple[list[tuple[str, bytes]], int]:
    if not files:
        return [("-", p.stdin)], 0
    out: list[tuple[str, bytes]] = []
    code = 0
    for f in files:
        if f == "-":
            out.append(("-", p.stdin))
            continue
        try:
            out.append((f, p.phone.vfs.read(p.path(f))))
        except OSError as e:
            p.error(f"{name}: {f}: {e.strerror}\n")
            code = 1
    return out, code


def _lines(data: bytes) -> list[str]:
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# -- sed -------------------------------------------------------------------------------
class SedError(Exception):
    pass


@dataclass(slots=True)
class _Address:
    line: int | None = None  # 0 means "$"
    regex: re.Pattern[str] | None = None

    def hit(self, n: int, last: bool, text: str) -> bool:
        if self.regex is not None:
            return self.regex.search(text) is not None
        return last if self.line == 0 else n == self.line


@dataclass(slots=True)
class _SedCmd:
    op: str
    a1: _Address | None = None
    a2: _Address | None = None
    negate: bool = False
    regex: re.Pattern[str] | None = None
    repl: str = ""
    count: int = 1  # 0: every match (g)
    print_: bool = False
    text: str = ""
    active: bool = False  # inside an a1,a2 range


def _sed_regex(src: str, ere: bool, icase: bool = False) -> re.Pattern[str]:
    try:
        return re.compile(src if ere else _bre_to_python(src), re.I if icase else 0)
    except re.error as e:
        raise SedError(f"bad regex '{src}': {e}") from None


def _delimited(script: str, i: int, delim: str) -> tuple[str, int]:
    out: list[str] = []
    while i < len(script):
        c = script[i]
        if c == "\\" and i + 1 < len(script):
            nxt = script[i + 1]
            out.append(nxt if nxt == delim else c + nxt)
            i += 2
            continue
        if c == delim:
            return "".join(out), i + 1
        out.append(c)
        i += 1
    raise SedError(f"unmatched '{delim}'")


def _address(script: str, i: int, ere: bool) -> tuple[_Address | None, int]:
    if i < len(script) and script[i].isdecimal():
        j = i
        while j < len(script) and script[j].isdecimal():
            j += 1
        return _Address(line=int(script[i:j])), j
    if i < len(script) and script[i] == "$":
        return _Address(line=0), i + 1
    if i < len(script) and script[i] in "/\\":
        delim = "/"
        if script[i] == "\\":
            if i + 1 >= len(script):
                raise SedError("bad address")
            delim = script[i + 1]
            i += 1
        body, j = _delimited(script, i + 1, delim)
        return _Address(regex=_sed_regex(body, ere)), j
    return None, i


def _repl(template: str) -> Callable[[re.Match[str]], str]:
    def do(m: re.Match[str]) -> str:
        out: list[str] = []
        i = 0
        while i < len(template):
            c = template[i]
            if c == "\\" and i + 1 < len(template):
                n = template[i + 1]
                if n.isdecimal():
                    try:
                        out.append(m.group(int(n)) or "")
                    except IndexError:
                        raise SedError(f"invalid reference \\{n} on s command's RHS") from None
                else:
                    out.append({"n": "\n", "t": "\t"}.get(n, n))
                i += 2
                continue
            out.append(m.group(0) if c == "&" else c)
            i += 1
        return "".join(out)
    return do


def parse_sed(script: str, ere: bool) -> list[_SedCmd]:
    cmds: list[_SedCmd] = []
    i = 0
    n = len(script)
    while i < n:
        while i < n and script[i] in " \t\n;":
            i += 1
        if i >= n:
            break
        a1, i = _address(script, i, ere)
        a2 = None
        if a1 is not None and i < n and script[i] == ",":
            a2, i = _address(script, i + 1, ere)
            if a2 is None:
                raise SedError("unexpected ','")
        while i < n and script[i] == " ":
            i += 1
        negate = i < n and script[i] == "!"
        if negate:
            i += 1
        if i >= n:
            raise SedError("missing command")
        op = script[i]
        i += 1
        cmd = _SedCmd(op, a1, a2, negate)
        if op == "s":
            if i >= n or script[i] in "\\\n":
                raise SedError("unterminated `s' command")
            delim = script[i]
            pattern, i = _delimited(script, i + 1, delim)
            cmd.repl, i = _delimited(script, i, delim)
            flags = ""
            while i < n and script[i] not in ";\n}":
                flags += script[i]
                i += 1
            flags = flags.strip()
            cmd.count = 0 if "g" in flags else 1
            digits = "".join(c for c in flags if c.isdecimal())
            if digits:
                cmd.count = int(digits)
            cmd.print_ = "p" in flags
            if set(flags) - set("gpiI0123456789w "):
                raise SedError(f"bad option '{flags}'")
            cmd.regex = _sed_regex(pattern, ere, "I" in flags or "i" in flags)
        elif op in "pdqP=":
            pass
        elif op in "aic":
            text = script[i:].lstrip()
            if text.startswith("\\"):
                text = text[1:].lstrip("\n")
            cmd.text = text
            i = n
        elif op == "y":
            if i >= n:
                raise SedError("unterminated `y' command")
            delim = script[i]
            src, i = _delimited(script, i + 1, delim)
            dst, i = _delimited(script, i, delim)
            if len(src) != len(dst):
                raise SedError("strings for `y' command are different lengths")
            cmd.text = src + "\0" + dst
        else:
            raise SedError(f"unknown command '{op}'")
        cmds.append(cmd)
    return cmds


def _selected(cmd: _SedCmd, n: int, last: bool, text: str) -> bool:
    if cmd.a1 is None:
        hit = True
    elif cmd.a2 is None:
        hit = cmd.a1.hit(n, last, text)
    elif cmd.active:
        hit = True
        a2 = cmd.a2
        if (a2.regex is not None and a2.regex.search(text)) or (
                a2.line is not None and (n >= a2.line if a2.line else last)):
            cmd.active = False
    elif cmd.a1.hit(n, last, text):
        hit = True
        a2 = cmd.a2
        cmd.active = not (a2.line is not None and a2.line and a2.line <= n)
    else:
        hit = False
    return hit != cmd.negate


def run_sed(cmds: list[_SedCmd], lines: list[str], quiet: bool) -> tuple[list[str], bool]:
    """Output lines; True when ``q`` stopped the script."""
    out: list[str] = []
    for idx, text in enumerate(lines):
        n = idx + 1
        last = idx == len(lines) - 1
        deleted = False
        after: list[str] = []
        for cmd in cmds:
            if not _selected(cmd, n, last, text):
                continue
            op = cmd.op
            if op == "s" and cmd.regex is not None:
                if cmd.count <= 1 and cmd.count != 0:
                    new, k = cmd.regex.subn(_repl(cmd.repl), text, count=1)
                else:
                    new, k = _sub_from(cmd.regex, _repl(cmd.repl), text, cmd.count)
                if k:
                    text = new
                    if cmd.print_:
                        out.append(text)
            elif op in "pP":
                out.append(text)
            elif op == "=":
                out.append(str(n))
            elif op == "d":
                deleted = True
                break
            elif op == "q":
                if not quiet:
                    out.append(text)
                return out, True
            elif op == "a":
                after.append(cmd.text)
            elif op == "i":
                out.append(cmd.text)
            elif op == "c":
                out.append(cmd.text)
                deleted = True
                break
            elif op == "y":
                src, _, dst = cmd.text.partition("\0")
                text = text.translate(str.maketrans(src, dst))
        if not deleted and not quiet:
            out.append(text)
        out.extend(after)
    return out, False


def _sub_from(regex: re.Pattern[str], repl: Callable[[re.Match[str]], str], text: str,
              nth: int) -> tuple[str, int]:
    """``s///g`` (nth == 0) or ``s///N`` (only the Nth match)."""
    if nth == 0:
        return regex.subn(repl, text)
    seen = 0

    def one(m: re.Match[str]) -> str:
        nonlocal seen
        seen += 1
        return repl(m) if seen == nth else m.group(0)

    new = regex.sub(one, text)
    return new, int(seen >= nth)


@command("sed")
async def sed(p: Proc) -> int:
    scripts: list[str] = []
    files: list[str] = []
    quiet = ere = in_place = False
    args = p.args
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-e", "--expression") and i + 1 < len(args):
            scripts.append(args[i + 1])
            i += 2
            continue
        if a == "-f" and i + 1 < len(args):
            try:
                scripts.append(p.phone.vfs.read(p.path(args[i + 1])).decode("utf-8", "replace"))
            except OSError as e:
                p.error(f"sed: {args[i + 1]}: {e.strerror}\n")
                return 1
            i += 2
            continue
        if a.startswith("-") and len(a) > 1 and a != "--":
            for c in a[1:]:
                if c == "n":
                    quiet = True
                elif c in "Er":
                    ere = True
                elif c == "i":
                    in_place = True
                elif c in "su":
                    pass
                else:
                    p.error(f"sed: Unknown option '{c}'\n")
                    return 1
        elif not scripts and not files and a != "--":
            scripts.append(a)
        elif a != "--":
            files.append(a)
        i += 1
    if not scripts:
        p.error("sed: Need 1 argument\n")
        return 1
    try:
        cmds = parse_sed("\n".join(scripts), ere)
    except SedError as e:
        p.error(f"sed: {e}\n")
        return 1
    sources, code = _sources(p, files, "sed")
    try:
        if in_place:
            for name, data in sources:
                if name == "-":
                    continue
                out, _ = run_sed(cmds, _lines(data)[:MAX_LINES], quiet)
                p.phone.vfs.write(p.path(name), "".join(ln + "\n" for ln in out).encode())
            return code
        lines = [ln for _, data in sources for ln in _lines(data)][:MAX_LINES]
        out, _ = run_sed(cmds, lines, quiet)
    except SedError as e:
        p.error(f"sed: {e}\n")
        return 1
    except OSError as e:
        p.error(f"sed: {e.strerror}\n")
        return 1
    p.write("".join(ln + "\n" for ln in out))
    return code


# -- awk -------------------------------------------------------------------------------
class AwkError(Exception):
    pass


_AWK_TOKEN = re.compile(r"""\s*(?:
    (?P<num>\d+(?:\.\d+)?)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<re>/(?:[^/\\]|\\.)+/)
  | (?P<field>\$)
  | (?P<op>==|!=|<=|>=|~|!~|&&|\|\||[<>+\-*/%,;(){}!])
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
)""", re.X)


@dataclass(slots=True)
class _AwkRule:
    kind: str  # "BEGIN" | "END" | "main"
    pattern: list[str] = field(default_factory=list)  # tokens of the condition
    action: list[list[str]] = field(default_factory=list)  # statements (token lists)


def _awk_tokens(src: str) -> list[str]:
    toks: list[str] = []
    i = 0
    while i < len(src):
        if src[i] in " \t":
            i += 1
            continue
        if src[i] == "\n":
            toks.append(";")
            i += 1
            continue
        m = _AWK_TOKEN.match(src, i)
        if m is None or m.end() == i:
            raise AwkError(f"syntax error at '{src[i:i + 10]}'")
        kind = m.lastgroup or ""
        text = m.group(kind)
        # a "/" after a value is division, not a regex
        if kind == "re" and toks and (toks[-1][0].isalnum() or toks[-1][0] in "\")$_"):
            toks.append("/")
            i = m.start(kind) + 1
            continue
        toks.append(text)
        i = m.end()
    return toks


def parse_awk(src: str) -> list[_AwkRule]:
    toks = _awk_tokens(src)
    rules: list[_AwkRule] = []
    i = 0
    while i < len(toks):
        if toks[i] == ";":
            i += 1
            continue
        rule = _AwkRule("main")
        if toks[i] in ("BEGIN", "END"):
            rule.kind = toks[i]
            i += 1
        else:
            while i < len(toks) and toks[i] != "{":
                rule.pattern.append(toks[i])
                i += 1
        if i < len(toks) and toks[i] == "{":
            depth = 0
            stmt: list[str] = []
            i += 1
            while i < len(toks):
                t = toks[i]
                if t == "}" and depth == 0:
                    break
                depth += t == "{"
                depth -= t == "}"
                if t == ";" and depth == 0:
                    if stmt:
                        rule.action.append(stmt)
                    stmt = []
                else:
                    stmt.append(t)
                i += 1
            if i >= len(toks):
                raise AwkError("syntax error: unexpected end of program")
            if stmt:
                rule.action.append(stmt)
            i += 1
        elif rule.kind != "main":
            raise AwkError(f"syntax error: {rule.kind} needs an action")
        else:
            rule.action = [["print"]]
        rules.append(rule)
    return rules


@dataclass(slots=True)
class _AwkState:
    fs: str
    vars: dict[str, str | float]
    fields: list[str] = field(default_factory=list)
    record: str = ""
    nr: int = 0
    out: list[str] = field(default_factory=list)


def _num(v: str | float) -> float:
    if isinstance(v, float):
        return v
    m = re.match(r"\s*[-+]?\d+(\.\d+)?", v)
    return float(m.group()) if m else 0.0


def _fmt(v: str | float) -> str:
    if isinstance(v, float):
        return str(int(v)) if v == int(v) and abs(v) < 1e16 else f"{v:.6g}"
    return v


class _AwkEval:
    """Evaluates one expression's tokens (precedence climbing, no assignment)."""

    def __init__(self, toks: list[str], st: _AwkState) -> None:
        self.toks = toks
        self.i = 0
        self.st = st

    def peek(self) -> str:
        return self.toks[self.i] if self.i < len(self.toks) else ""

    def take(self) -> str:
        t = self.peek()
        self.i += 1
        return t

    def expr(self) -> str | float:
        return self.or_()

    def or_(self) -> str | float:
        v = self.and_()
        while self.peek() == "||":
            self.take()
            r = self.and_()
            v = float(bool(_truth(v) or _truth(r)))
        return v

    def and_(self) -> str | float:
        v = self.cmp()
        while self.peek() == "&&":
            self.take()
            r = self.cmp()
            v = float(bool(_truth(v) and _truth(r)))
        return v

    def cmp(self) -> str | float:
        v = self.concat()
        op = self.peek()
        if op in ("==", "!=", "<", ">", "<=", ">=", "~", "!~"):
            self.take()
            if op in ("~", "!~"):
                t = self.peek()
                pat = self.take()[1:-1] if t.startswith("/") and len(t) > 1 else _fmt(
                    self.concat())
                try:
                    hit = re.search(pat, _fmt(v)) is not None
                except re.error:
                    raise AwkError(f"bad regex '{pat}'") from None
                return float(hit == (op == "~"))
            r = self.concat()
            if (isinstance(v, float) and isinstance(r, float)) or (
                    _numeric(v) and _numeric(r)):
                a: str | float = _num(v)
                b: str | float = _num(r)
            else:
                a, b = _fmt(v), _fmt(r)
            res = {"==": a == b, "!=": a != b, "<": a < b, ">": a > b,  # type: ignore[operator]
                   "<=": a <= b, ">=": a >= b}[op]  # type: ignore[operator]
            return float(res)
        return v

    def concat(self) -> str | float:
        v = self.add()
        while self.peek() and self.peek() not in (
                ",", ")", "==", "!=", "<", ">", "<=", ">=", "~", "!~", "&&", "||", ";", "}",
                "{"):
            r = self.add()
            v = _fmt(v) + _fmt(r)
        return v

    def add(self) -> str | float:
        v = self.mul()
        while self.peek() in ("+", "-"):
            op = self.take()
            r = self.mul()
            v = _num(v) + _num(r) if op == "+" else _num(v) - _num(r)
        return v

    def mul(self) -> str | float:
        v = self.unary()
        while self.peek() in ("*", "/", "%"):
            op = self.take()
            r = _num(self.unary())
            if op != "*" and r == 0:
                raise AwkError("division by zero")
            v = _num(v) * r if op == "*" else _num(v) / r if op == "/" else _num(v) % r
        return v

    def unary(self) -> str | float:
        t = self.peek()
        if t == "-":
            self.take()
            return -_num(self.unary())
        if t == "!":
            self.take()
            return float(not _truth(self.unary()))
        return self.atom()

    def atom(self) -> str | float:
        t = self.take()
        st = self.st
        if not t:
            raise AwkError("syntax error: unexpected end of expression")
        if t == "$":
            idx = int(_num(self.atom()))
            if idx < 0:
                raise AwkError(f"trying to access out of range field {idx}")
            if idx == 0:
                return st.record
            return st.fields[idx - 1] if idx <= len(st.fields) else ""
        if t == "(":
            v = self.expr()
            if self.take() != ")":
                raise AwkError("syntax error: missing )")
            return v
        if t[0].isdecimal():
            return float(t)
        if t[0] == '"':
            return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1),
                                                                           m.group(1)), t[1:-1])
        if t[0] == "/":
            try:
                return float(re.search(t[1:-1], st.record) is not None)
            except re.error:
                raise AwkError(f"bad regex '{t}'") from None
        if t == "NR":
            return float(st.nr)
        if t == "NF":
            return float(len(st.fields))
        if t == "FS":
            return st.fs
        if t in ("length", "tolower", "toupper"):
            arg: str | float = st.record
            if self.peek() == "(":
                self.take()
                arg = self.expr() if self.peek() != ")" else st.record
                if self.take() != ")":
                    raise AwkError("syntax error: missing )")
            text = _fmt(arg)
            return float(len(text)) if t == "length" else (
                text.lower() if t == "tolower" else text.upper())
        if t[0].isalpha() or t[0] == "_":
            return st.vars.get(t, "")
        raise AwkError(f"syntax error at '{t}'")


def _numeric(v: str | float) -> bool:
    return isinstance(v, float) or re.fullmatch(r"\s*[-+]?\d+(\.\d+)?\s*", v) is not None


def _truth(v: str | float) -> bool:
    return v != 0.0 if isinstance(v, float) else v != ""


def _awk_split(record: str, fs: str) -> list[str]:
    if fs == " ":
        return record.split()
    if len(fs) == 1 and fs != "\\":
        return record.split(fs)
    try:
        return re.split(fs, record)
    except re.error:
        raise AwkError(f"bad field separator '{fs}'") from None


def _awk_statement(stmt: list[str], st: _AwkState) -> None:
    head = stmt[0]
    if head in ("print", "printf"):
        args: list[str | float] = []
        ev = _AwkEval(stmt[1:], st)
        while ev.peek():
            args.append(ev.expr())
            if ev.peek() == ",":
                ev.take()
            elif ev.peek():
                raise AwkError(f"syntax error at '{ev.peek()}'")
        if head == "print":
            ofs = _fmt(st.vars.get("OFS", " "))
            st.out.append(ofs.join(_fmt(a) for a in args) if args else st.record)
            st.out.append("\n")
        else:
            if not args:
                raise AwkError("printf: no format")
            st.out.append(_awk_printf(_fmt(args[0]), args[1:]))
        return
    if (len(stmt) >= 3 and stmt[1] in ("=", "+=", "-=")) or (len(stmt) == 2 and stmt[1] in (
            "++", "--")):
        raise AwkError("assignment is not supported by this awk")
    if len(stmt) >= 2 and stmt[1] == "=":
        raise AwkError("assignment is not supported by this awk")
    if head == "next":
        raise _Next()
    if head == "exit":
        raise _Exit()
    raise AwkError(f"syntax error at '{head}'")


class _Next(Exception):
    pass


class _Exit(Exception):
    pass


def _awk_printf(fmt: str, args: list[str | float]) -> str:
    out: list[str] = []
    it = iter(args)
    for m in re.finditer(r"%(-?\d*(?:\.\d+)?)([sdifxXc%])|([^%]+)|(%)", fmt):
        if m.group(3) is not None:
            out.append(m.group(3))
            continue
        if m.group(4) is not None or m.group(2) == "%":
            out.append("%")
            continue
        spec, conv = m.group(1), m.group(2)
        v = next(it, "")
        if conv in "di":
            out.append(f"%{spec}d" % int(_num(v)))
        elif conv in "xX":
            out.append(f"%{spec}{conv}" % int(_num(v)))
        elif conv == "f":
            out.append(f"%{spec}f" % _num(v))
        elif conv == "c":
            out.append(_fmt(v)[:1])
        else:
            out.append(f"%{spec}s" % _fmt(v))
    return "".join(out)


def run_awk(rules: list[_AwkRule], lines: list[str], fs: str,
            variables: dict[str, str | float]) -> str:
    st = _AwkState(fs, variables)
    try:
        for rule in rules:
            if rule.kind == "BEGIN":
                for stmt in rule.action:
                    _awk_statement(stmt, st)
        for text in lines:
            st.nr += 1
            st.record = text
            st.fields = _awk_split(text, st.fs)
            try:
                for rule in rules:
                    if rule.kind != "main":
                        continue
                    if rule.pattern and not _truth(_AwkEval(rule.pattern, st).expr()):
                        continue
                    for stmt in rule.action:
                        _awk_statement(stmt, st)
            except _Next:
                continue
        for rule in rules:
            if rule.kind == "END":
                for stmt in rule.action:
                    _awk_statement(stmt, st)
    except _Exit:
        pass
    except (_Next, RecursionError):
        pass
    return "".join(st.out)


@command("awk")
async def awk(p: Proc) -> int:
    args = p.args
    fs = " "
    variables: dict[str, str | float] = {}
    program: str | None = None
    files: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if program is None and a.startswith("-F") and len(a) > 2:
            fs = a[2:]
        elif program is None and a == "-F" and i + 1 < len(args):
            fs = args[i + 1]
            i += 1
        elif program is None and a == "-v" and i + 1 < len(args):
            name, _, value = args[i + 1].partition("=")
            variables[name] = value
            i += 1
        elif program is None:
            program = a
        else:
            files.append(a)
        i += 1
    if fs == "t":
        fs = "\t"
    if program is None:
        p.error("usage: awk [-F sepstring] [-v assignment]... program [argument...]\n")
        return 2
    try:
        rules = parse_awk(program)
    except AwkError as e:
        p.error(f"awk: {e}\n")
        return 2
    sources, code = _sources(p, files, "awk")
    lines = [ln for _, data in sources for ln in _lines(data)][:MAX_LINES]
    try:
        p.write(run_awk(rules, lines, fs, variables))
    except AwkError as e:
        p.error(f"awk: {e}\n")
        return 2
    return 2 if code else 0


# -- tr / cut / md5sum -----------------------------------------------------------------
_CLASSES = {"[:lower:]": "abcdefghijklmnopqrstuvwxyz", "[:upper:]": "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
            "[:digit:]": "0123456789", "[:space:]": " \t\n\r\v\f",
            "[:alpha:]": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
            "[:alnum:]": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
            "[:punct:]": "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", "[:blank:]": " \t"}


def _tr_set(spec: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(spec):
        for name, chars in _CLASSES.items():
            if spec.startswith(name, i):
                out.append(chars)
                i += len(name)
                break
        else:
            c = spec[i]
            if c == "\\" and i + 1 < len(spec):
                out.append({"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}.get(spec[i + 1],
                                                                             spec[i + 1]))
                i += 2
            elif i + 2 < len(spec) and spec[i + 1] == "-" and ord(spec[i + 2]) >= ord(c):
                out.append("".join(chr(x) for x in range(ord(c), ord(spec[i + 2]) + 1)))
                i += 3
            else:
                out.append(c)
                i += 1
    return "".join(out)


@command("tr")
async def tr(p: Proc) -> int:
    flags = "".join(a[1:] for a in p.args if a.startswith("-") and len(a) > 1)
    sets = [a for a in p.args if not (a.startswith("-") and len(a) > 1)]
    if set(flags) - set("cdsC") or not sets or len(sets) > 2:
        p.error("tr: Need 1 or 2 arguments\n" if not set(flags) - set("cdsC")
                else f"tr: Unknown option '{flags}'\n")
        return 1
    text = p.stdin.decode("utf-8", "replace")
    first = _tr_set(sets[0])
    second = _tr_set(sets[1]) if len(sets) > 1 else ""
    if "d" in flags:
        keep = "c" in flags or "C" in flags
        text = "".join(ch for ch in text if (ch in first) == keep)
        squeeze = second
    elif second:
        if len(second) < len(first):
            second += second[-1] * (len(first) - len(second))
        text = text.translate({ord(a): b for a, b in zip(first, second, strict=False)})
        squeeze = second
    else:
        if "s" not in flags:
            p.error("tr: Need 2 arguments\n")
            return 1
        squeeze = first
    if "s" in flags and squeeze:
        text = re.sub("([" + re.escape(squeeze) + "])\\1+", r"\1", text)
    p.write(text)
    return 0


def _ranges(spec: str) -> list[tuple[int, int]] | None:
    out: list[tuple[int, int]] = []
    for part in spec.split(","):
        a, dash, b = part.partition("-")
        try:
            lo = int(a) if a else 1
            hi = (int(b) if b else 1 << 30) if dash else lo
        except ValueError:
            return None
        if lo < 1 or hi < lo:
            return None
        out.append((lo, hi))
    return out


@command("cut")
async def cut(p: Proc) -> int:
    args = p.args
    delim = "\t"
    mode = ""
    spec = ""
    only_delimited = False
    files: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a[:2] in ("-d", "-f", "-c", "-b") and len(a) >= 2:
            value = a[2:] if len(a) > 2 else (args[i + 1] if i + 1 < len(args) else None)
            if value is None:
                p.error(f"cut: option {a} needs an argument\n")
                return 1
            if len(a) == 2:
                i += 1
            if a[1] == "d":
                delim = value
            else:
                mode, spec = a[1], value
        elif a == "-s":
            only_delimited = True
        else:
            files.append(a)
        i += 1
    if not mode:
        p.error("cut: Needs -fcb\n")
        return 1
    if mode == "f" and len(delim) != 1:
        p.error("cut: -d 'x' must be 1 character\n")
        return 1
    ranges = _ranges(spec)
    if ranges is None:
        p.error(f"cut: bad list '{spec}'\n")
        return 1
    sources, code = _sources(p, files, "cut")
    out: list[str] = []
    for _, data in sources:
        for line in _lines(data):
            if mode == "f":
                if delim not in line:
                    if not only_delimited:
                        out.append(line + "\n")
                    continue
                parts = line.split(delim)
                picked = [parts[k - 1] for k in range(1, len(parts) + 1)
                          if any(lo <= k <= hi for lo, hi in ranges)]
                out.append(delim.join(picked) + "\n")
            else:
                out.append("".join(ch for k, ch in enumerate(line, 1)
                                   if any(lo <= k <= hi for lo, hi in ranges)) + "\n")
    p.write("".join(out))
    return code


@command("md5sum", "sha1sum", "sha256sum")
async def md5sum(p: Proc) -> int:
    algo = {"md5sum": "md5", "sha1sum": "sha1", "sha256sum": "sha256"}[p.name]
    files = [a for a in p.args if not (a.startswith("-") and len(a) > 1)]
    sources, code = _sources(p, files, p.name)
    for name, data in sources:
        p.write(f"{hashlib.new(algo, data).hexdigest()}  {name}\n")
    return code
