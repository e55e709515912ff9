"""The learner's configuration, layered as the farm's and from the same file.

Layers, highest first: **flags** > **environment** > **the TOML file** (``--config`` or
``$DISTRL_CONFIG``, the file the farm reads too) > **defaults**, and ``sources`` says
which layer set each field (``distrl config show --role learner``).

- File: the ``[learner]`` table of the shared file (the farm ignores it; the learner
  ignores the farm's sections). A file of the learner's top-level keys alone, as older
  learner files were, still works.
- Environment: ``DISTRL_LEARNER_<FIELD>`` (``DISTRL_LEARNER_PUBLISH_EVERY=10``), except
  the broker, which is ``DISTRL_BROKER_URL`` for every role. Lists are comma-separated,
  tables (``algo_config``, ``policy_config``, ``farm_key_for``) JSON; an empty variable
  unsets an optional field.

Mistakes are ``ConfigError`` naming the file, variable or flag and the field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from farm import config as farm_config
from farm.config import (
    CONFIG_ENV,
    ConfigError,
    _hint,
    _source_label,
    env_layer,
    merge_layers,
    read_toml,
)
from farm.learner.service import LearnerConfig

__all__ = ["LEARNER_FIELDS", "LoadedLearner", "learner_env_name", "load_learner_settings",
           "masked_learner"]

ENV_PREFIX = "DISTRL_LEARNER_"
#: fields every role reads from one variable
SHARED_ENV = {"broker_url": "DISTRL_BROKER_URL"}
TABLE = "learner"
SECRET_FIELDS = frozenset({"serve_api_key"})

LEARNER_FIELDS: dict[str, Any] = dict(LearnerConfig.model_fields)


def learner_env_name(field: str) -> str:
    """``publish_every`` → ``DISTRL_LEARNER_PUBLISH_EVERY``; the broker's is shared."""
    return SHARED_ENV.get(field, ENV_PREFIX + field.upper())


@dataclass
class LoadedLearner:
    config: LearnerConfig
    sources: dict[str, str]  # field → "default" | "file F" | "env NAME" | "flag --x"
    path: Path | None = None


def _from_file(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The file's learner values, and a problem line per unknown key (reported together
    with the values' own problems)."""
    doc = read_toml(path)
    if TABLE in doc:
        table = doc[TABLE]
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [{TABLE}] must be a table")
        where = f"{path}: [{TABLE}]"
    else:  # an older learner file: top-level keys, or a farm file with no learner table
        farm_keys = set(farm_config.SECTIONS) | {k for k in farm_config.FIELDS if "." not in k}
        table = {k: v for k, v in doc.items() if k not in farm_keys}
        where = str(path)
    problems = [f"{where} {k}: unknown learner field{_hint(k, LEARNER_FIELDS)}"
                for k in table if k not in LEARNER_FIELDS]
    return {k: v for k, v in table.items() if k in LEARNER_FIELDS}, problems


def load_learner_settings(path: str | os.PathLike[str] | None = None, *,
                          env: Mapping[str, str] | None = None,
                          flags: Mapping[str, tuple[Any, str]] | None = None,
                          ) -> LoadedLearner:
    """Merge defaults < file < environment < flags and validate. ``flags``: field →
    (value, flag name); None values are "not given"."""
    env = os.environ if env is None else env
    if path is None and env.get(CONFIG_ENV):
        path = env[CONFIG_ENV]
    p = Path(path) if path is not None else None
    values, problems = _from_file(p) if p is not None else ({}, [])
    env_values = env_layer(env, {k: f.annotation for k, f in LEARNER_FIELDS.items()},
                           learner_env_name)
    data, sources = merge_layers(LEARNER_FIELDS, values, p, env_values, flags or {})
    try:
        config = LearnerConfig.model_validate(data)
    except ValidationError as exc:
        lines = list(problems)
        for err in exc.errors(include_url=False):
            key = str(err["loc"][0]) if err["loc"] else "?"
            msg = err["msg"].removeprefix("Value error, ")
            got = err.get("input")
            if err["type"] not in ("missing", "extra_forbidden") and key not in SECRET_FIELDS \
                    and not isinstance(got, dict):
                msg += f" (got {got!r})"[:120]
            lines.append(f"{_source_label(sources.get(key, 'default'), key)}: {msg}")
        raise ConfigError("\n".join(lines)) from None
    if problems:
        raise ConfigError("\n".join(problems))
    return LoadedLearner(config, sources, p)


def masked_learner(config: LearnerConfig) -> dict[str, Any]:
    """The config as JSON-able data, the broker password and API key masked."""
    from distrl_sdk.wire.url_mask import mask_url

    data = config.model_dump(mode="json")
    data["broker_url"] = mask_url(data["broker_url"])
    for k in SECRET_FIELDS:
        if data.get(k) is not None:
            data[k] = "****"
    return data


def learner_fields_help() -> str:
    """Every learner field with its variable and default (for --help epilogs)."""
    import textwrap

    from farm.config import _fmt_default

    lines = ["", "\b", f"[{TABLE}] (role learner)"]
    for name, f in LEARNER_FIELDS.items():
        default = f.get_default(call_default_factory=True)
        shown = json.dumps(default) if isinstance(default, dict) else _fmt_default(default)
        lines.append(f"  {name} / {learner_env_name(name)} ({shown})")
        lines += textwrap.wrap(f.description or "", 92, initial_indent=" " * 6,
                               subsequent_indent=" " * 6)
    return "\n".join(lines)
