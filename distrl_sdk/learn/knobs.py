"""Text values in a trainer's config: how a learner file (TOML, which has no null) spells
"off", and a clear error where a number was expected.

A trainer config is a dataclass; its ``__post_init__`` calls :func:`read_text_knobs`
first, so "none" (any case) becomes None for every knob whose type admits None, and a
string given for a numeric knob is a :class:`ConfigError` naming the knob instead of a
``TypeError`` from the range checks that follow.
"""

from __future__ import annotations

import types
from dataclasses import fields
from typing import Any, Union, get_args, get_origin, get_type_hints

from distrl_sdk.errors import ConfigError

# per config class: (knobs that admit None, numeric knobs), from the resolved type hints
_TYPED: dict[type, tuple[frozenset[str], frozenset[str]]] = {}


def _typed_knobs(cls: type) -> tuple[frozenset[str], frozenset[str]]:
    if cls not in _TYPED:
        hints = get_type_hints(cls)
        optional, numeric = set(), set()
        for f in fields(cls):
            hint = hints[f.name]
            union = get_origin(hint) in (Union, types.UnionType)
            members = get_args(hint) if union else (hint,)
            if type(None) in members:
                optional.add(f.name)
            if any(m in (int, float) for m in members):
                numeric.add(f.name)
        _TYPED[cls] = frozenset(optional), frozenset(numeric)
    return _TYPED[cls]


def read_text_knobs(config: Any, label: str) -> None:
    """Turn "none" into None where the knob allows it; refuse text for a number."""
    optional, numeric = _typed_knobs(type(config))
    for name in optional:
        value = getattr(config, name)
        if isinstance(value, str) and value.lower() == "none":
            setattr(config, name, None)
    wrong = [n for n in sorted(numeric) if isinstance(getattr(config, n), str)]
    if wrong:
        raise ConfigError(f"{label} config: " + ", ".join(
            f"{n} must be a number, not {getattr(config, n)!r}" for n in wrong))
