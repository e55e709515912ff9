"""``FileContains``: a file on the device exists, matches a regex, or holds a JSON value."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from typing import Any

from distrl_sdk.device import Device
from distrl_sdk.errors import AdbTimeout, DeviceError, TaskError
from distrl_sdk.evaluators.base import RewardEvaluator, fill
from distrl_sdk.evaluators.common import EvaluatorConfig, check_regex, compile_regex, short
from distrl_sdk.trajectory import Trajectory

__all__ = ["FileContains", "json_lookup"]

_UNSET: Any = object()
_STEP = re.compile(r"\.?([^.\[\]]+)|\[(-?\d+)\]|\[['\"]([^'\"]*)['\"]\]")


class FileConfig(EvaluatorConfig):
    path: str
    regex: str | None = None
    json_path: str | None = None
    value: Any = None


def _steps(path: str) -> list[str | int]:
    path = path.strip()
    if path.startswith("$"):
        path = path[1:]
    out: list[str | int] = []
    pos = 0
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None or m.end() == pos:
            raise TaskError(f"file.json_path {path!r}: cannot parse at {path[pos:]!r} "
                            "(use a.b[0].c or $.a['b c'])")
        key, idx, quoted = m.groups()
        out.append(int(idx) if idx is not None else (quoted if quoted is not None else key))
        pos = m.end()
    return out


def json_lookup(doc: Any, path: str) -> Any:
    """``doc`` at ``a.b[0].c`` (``$.`` prefix optional); raises KeyError when absent."""
    node = doc
    for step in _steps(path):
        if isinstance(step, int):
            if not isinstance(node, list) or not -len(node) <= step < len(node):
                raise KeyError(step)
            node = node[step]
        else:
            if not isinstance(node, dict) or step not in node:
                raise KeyError(step)
            node = node[step]
    return node


def _same(actual: Any, wanted: Any, params: Mapping[str, Any]) -> bool:
    if isinstance(wanted, str):
        want = fill(wanted, params)
        text = actual if isinstance(actual, str) else json.dumps(actual)
        return text == want
    if isinstance(wanted, bool) or isinstance(actual, bool):
        return actual is wanted
    return bool(actual == wanted)


class FileContains(RewardEvaluator):
    """1.0 when the file at ``path`` exists and (optionally) matches.

    * ``regex``: ``re.search`` (multiline) over the file's text (UTF-8);
    * ``json_path`` + ``value``: the JSON document's value there equals ``value``
      (a string ``value`` is compared with the value's text, so ``"{hour}"`` matches 7);
    * neither: the file merely exists.

    A missing file scores 0.0; a device fault still raises.
    """

    name = "file"
    config_model = FileConfig

    def __init__(self, path: str, regex: str | None = None, *, json_path: str | None = None,
                 value: Any = _UNSET) -> None:
        if not path.startswith(("/", "{")):
            raise TaskError(f"file: path {path!r} must be absolute")
        if regex is not None and json_path is not None:
            raise TaskError("file: give `regex` or `json_path`, not both")
        if json_path is not None and value is _UNSET:
            raise TaskError("file: `json_path` needs a `value` to compare with")
        if json_path is None and value is not _UNSET:
            raise TaskError("file: `value` needs a `json_path`")
        if regex is not None:
            check_regex(regex, "file.regex")
        if json_path is not None:
            _steps(json_path)
        self.path, self.regex, self.json_path, self.value = path, regex, json_path, value

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> FileContains:
        cfg = FileConfig.model_validate(dict(config))
        value = cfg.value if "value" in cfg.model_fields_set else _UNSET
        return cls(cfg.path, cfg.regex, json_path=cfg.json_path, value=value)

    async def read(self, device: Device, path: str) -> bytes | None:
        """The file's bytes, or None when it does not exist."""
        try:
            return await device.pull(path)
        except AdbTimeout:
            raise
        except DeviceError:
            # pull reports a missing file and a broken link alike; ask the shell which
            probe = await device.shell(f"test -e {shlex.quote(path)}")
            if probe.exit_code != 0:
                return None
            raise

    async def evaluate(self, device: Device, trajectory: Trajectory,
                       params: Mapping[str, Any]) -> float:
        data = await self.read(device, fill(self.path, params))
        if data is None:
            return 0.0
        text = data.decode("utf-8", errors="replace")
        if self.regex is not None:
            rx = compile_regex(self.regex, params, flags=re.MULTILINE, what="file.regex")
            return 1.0 if rx.search(text) else 0.0
        if self.json_path is not None:
            try:
                actual = json_lookup(json.loads(text), fill(self.json_path, params))
            except (json.JSONDecodeError, KeyError):
                return 0.0
            return 1.0 if _same(actual, self.value, params) else 0.0
        return 1.0

    def describe(self) -> str:
        if self.regex is not None:
            return f"file({self.path} ~ /{self.regex}/)"
        if self.json_path is not None:
            return f"file({self.path} {self.json_path} == {short(self.value)})"
        return f"file({self.path} exists)"
