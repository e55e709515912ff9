"""Command registry: name → handler, plus what the command costs (its CommandKind).

Adding a command is one decorated function in a module under ``commands/``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from farm.sim.profiles import CommandKind
from farm.sim.shell.context import Proc

Handler = Callable[[Proc], Awaitable[int]]
KindFn = Callable[[Sequence[str]], CommandKind]


@dataclass(frozen=True, slots=True)
class CommandSpec:
    name: str
    handler: Handler
    kind: KindFn


REGISTRY: dict[str, CommandSpec] = {}

# Where Android keeps the binaries; "/system/bin/input tap 1 2" must work too.
BIN_DIRS = ("/system/bin", "/system/xbin", "/bin", "/vendor/bin", "/product/bin")


def _const(kind: CommandKind) -> KindFn:
    return lambda _argv: kind


def command(*names: str, kind: CommandKind | KindFn = CommandKind.SHELL
            ) -> Callable[[Handler], Handler]:
    """Register ``handler`` under every name in ``names``."""
    kind_fn = _const(kind) if isinstance(kind, CommandKind) else kind

    def deco(handler: Handler) -> Handler:
        for n in names:
            REGISTRY[n] = CommandSpec(n, handler, kind_fn)
        return handler

    return deco


def lookup(name: str) -> CommandSpec | None:
    spec = REGISTRY.get(name)
    if spec is None and "/" in name:
        head, _, base = name.rpartition("/")
        if head in BIN_DIRS:
            spec = REGISTRY.get(base)
    return spec
