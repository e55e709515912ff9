"""Evaluators from declarative configs (YAML/TOML/JSON task files).

    {"type": "setting", "namespace": "global", "key": "wifi_on", "value": "0"}
    {"all": [{"type": "activity", "package": "com.android.settings"},
             {"type": "ui", "text": "Wi-Fi", "checked": false}]}
    {"any": [...]}
    {"weighted": [{"weight": 0.7, "type": "answer", "expected": "{city}"},
                  {"weight": 0.3, "all": [...]}]}

Leaf types are :data:`EVALUATORS` (``ui``, ``shell``, ``setting``, ``file``,
``activity``, ``logcat``, ``answer``) plus whatever plugins register in the entry-point
group ``distrl.evaluators``. An entry point names, tried in this order: a class/object
with ``from_config(config: dict) -> RewardEvaluator``; a class with a pydantic
``config_model`` (validated, its fields become keyword arguments); an ordinary
``RewardEvaluator`` subclass (the config's keys are its constructor's keyword arguments,
checked against its signature); or a callable ``factory(config)``. Each receives the
config without ``type``. Errors are ``TaskError``s whose message starts
with the key path of the offending value, e.g.
``success.all[1].type: unknown evaluator 'uii' (known: activity, all, any, …)``.
"""

from __future__ import annotations

import importlib.metadata
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from distrl_sdk.errors import TaskError
from distrl_sdk.evaluators.activity import ActivityIs
from distrl_sdk.evaluators.answer import AnswerFromDevice, AnswerMatches
from distrl_sdk.evaluators.base import AllOf, AnyOf, RewardEvaluator, Weighted
from distrl_sdk.evaluators.files import FileContains
from distrl_sdk.evaluators.logcat import LogcatRegex
from distrl_sdk.evaluators.settings import SettingEquals
from distrl_sdk.evaluators.shell import ShellRegex
from distrl_sdk.evaluators.ui import UIPredicate

__all__ = ["ENTRY_POINT_GROUP", "EVALUATORS", "evaluator_from_config", "plugin_evaluators"]

ENTRY_POINT_GROUP = "distrl.evaluators"

#: built-in leaf evaluators by config ``type``
EVALUATORS: dict[str, type[RewardEvaluator]] = {
    "ui": UIPredicate,
    "shell": ShellRegex,
    "setting": SettingEquals,
    "file": FileContains,
    "activity": ActivityIs,
    "logcat": LogcatRegex,
    "answer": AnswerMatches,
    "answer_from_device": AnswerFromDevice,
}
_COMPOSITES = ("all", "any", "weighted")

Factory = Callable[[dict[str, Any]], RewardEvaluator]


def plugin_evaluators() -> dict[str, importlib.metadata.EntryPoint]:
    """Entry points in ``distrl.evaluators`` by name (not loaded)."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def _known(plugins: Mapping[str, object]) -> str:
    return ", ".join(sorted({*EVALUATORS, *_COMPOSITES, *plugins}))


def _pydantic_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _validation_error(path: str, kind: str, exc: ValidationError,
                      model: type[BaseModel] | None) -> TaskError:
    lines = []
    for err in exc.errors():
        where = path + _pydantic_path(tuple(err["loc"]))
        if err["type"] == "extra_forbidden":
            allowed = ", ".join(model.model_fields) if model is not None else "?"
            lines.append(f"{where}: unknown key for evaluator {kind!r} (allowed: {allowed})")
        elif err["type"] == "missing":
            lines.append(f"{where}: required by evaluator {kind!r}")
        else:
            lines.append(f"{where}: {err['msg']} (got {err.get('input')!r})")
    return TaskError("\n".join(lines))


def _describe_type(value: Any) -> str:
    return type(value).__name__ if not isinstance(value, Mapping) else "mapping"


def _build_leaf(kind: str, cls_or_factory: Any, config: dict[str, Any], path: str
                ) -> RewardEvaluator:
    model: type[BaseModel] | None = getattr(cls_or_factory, "config_model", None)
    try:
        if hasattr(cls_or_factory, "from_config"):
            ev = cls_or_factory.from_config(config)
        elif model is not None:
            cfg = model.model_validate(config)
            ev = cls_or_factory(**{name: getattr(cfg, name) for name in type(cfg).model_fields})
        elif isinstance(cls_or_factory, type) and issubclass(cls_or_factory, RewardEvaluator):
            ev = _construct(kind, cls_or_factory, config, path)
        elif callable(cls_or_factory):
            ev = cls_or_factory(config)
        else:
            raise TaskError(f"{path}.type: plugin evaluator {kind!r} is neither callable "
                            "nor has from_config()")
    except ValidationError as exc:
        raise _validation_error(path, kind, exc, model) from None
    except TaskError as exc:
        msg = str(exc)
        # messages from evaluators start with their type ("ui: …") or are already pathed
        raise TaskError(msg if msg.startswith(path) else f"{path}: {msg}") from exc
    except (TypeError, ValueError) as exc:
        raise TaskError(f"{path}: evaluator {kind!r}: {exc}") from exc
    if not isinstance(ev, RewardEvaluator):
        raise TaskError(f"{path}.type: evaluator {kind!r} built a {type(ev).__name__}, "
                        "not a RewardEvaluator")
    return ev


def _construct(kind: str, cls: type[RewardEvaluator], config: dict[str, Any],
               path: str) -> RewardEvaluator:
    """An ordinary subclass: the config's keys are its constructor's keyword arguments,
    checked against its signature first, so `tasks validate` names a wrong or missing
    key instead of the episode failing at run time."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):  # no signature to read (a C type): just call it
        return cls(**config)
    takes = [n for n, p in params.items()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    open_ended = any(p.kind is p.VAR_KEYWORD for p in params.values())
    unknown = [k for k in config if k not in takes and not open_ended]
    missing = [n for n, p in params.items() if p.default is p.empty and n not in config
               and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    lines = [f"{path}.{k}: unknown key for evaluator {kind!r} (allowed: "
             f"{', '.join(takes) or 'none'})" for k in unknown]
    lines += [f"{path}.{n}: required by evaluator {kind!r}" for n in missing]
    if lines:
        raise TaskError("\n".join(lines))
    return cls(**config)


_loaded: dict[str, Any] = {}


def _load_plugin(kind: str, ep: importlib.metadata.EntryPoint, path: str) -> Any:
    if kind not in _loaded:
        try:
            _loaded[kind] = ep.load()
        except Exception as exc:
            dist = ep.dist.name if ep.dist is not None else "?"
            raise TaskError(f"{path}.type: evaluator {kind!r} from plugin {dist} "
                            f"({ep.value}) failed to load: {type(exc).__name__}: {exc}"
                            ) from exc
    return _loaded[kind]


def evaluator_from_config(config: Any, path: str = "success") -> RewardEvaluator:
    """Build an evaluator (tree) from a config; ``path`` prefixes error messages."""
    if isinstance(config, RewardEvaluator):
        return config
    if not isinstance(config, Mapping):
        raise TaskError(f"{path}: an evaluator config must be a mapping, "
                        f"not {_describe_type(config)} {config!r}")
    config = dict(config)
    composite = [k for k in _COMPOSITES if k in config]
    if composite:
        key = composite[0]
        extra = sorted(set(config) - {key})
        if extra:
            raise TaskError(f"{path}: {key!r} cannot be combined with other keys "
                            f"({', '.join(map(str, extra))}); nest them in the list")
        items = config[key]
        if not isinstance(items, list) or not items:
            raise TaskError(f"{path}.{key}: must be a non-empty list of evaluator configs")
        if key == "weighted":
            parts: list[tuple[RewardEvaluator, float]] = []
            for i, item in enumerate(items):
                where = f"{path}.{key}[{i}]"
                if not isinstance(item, Mapping) or "weight" not in item:
                    raise TaskError(f"{where}: each weighted part needs a `weight` and an "
                                    "evaluator config")
                rest = dict(item)
                weight = rest.pop("weight")
                if isinstance(weight, bool) or not isinstance(weight, int | float) \
                        or weight < 0:
                    raise TaskError(f"{where}.weight: must be a number ≥ 0, not {weight!r}")
                parts.append((evaluator_from_config(rest, where), float(weight)))
            if sum(w for _, w in parts) <= 0:
                raise TaskError(f"{path}.{key}: the weights are all 0")
            return Weighted(parts)
        built = [evaluator_from_config(c, f"{path}.{key}[{i}]") for i, c in enumerate(items)]
        return AllOf(built) if key == "all" else AnyOf(built)
    if "type" not in config:
        raise TaskError(f"{path}: needs a `type` (one of {_known(plugin_evaluators())}) "
                        "or one of the keys all / any / weighted")
    kind = config.pop("type")
    if not isinstance(kind, str):
        raise TaskError(f"{path}.type: must be a string, not {kind!r}")
    if kind in EVALUATORS:
        return _build_leaf(kind, EVALUATORS[kind], config, path)
    plugins = plugin_evaluators()
    if kind in plugins:
        return _build_leaf(kind, _load_plugin(kind, plugins[kind], path), config, path)
    if kind in _COMPOSITES:
        raise TaskError(f"{path}.type: {kind!r} is written as {{{kind!r}: [...]}}, not as a type")
    raise TaskError(f"{path}.type: unknown evaluator {kind!r} (known: {_known(plugins)})")
