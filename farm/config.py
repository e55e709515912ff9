"""The farm's configuration: one typed model, four layers, and where each value came from.

    settings, sources = load_settings("farm.toml", flags={"sim.count": 4})

Layers, highest first: **command-line flags** > **environment** (``DISTRL_<SECTION>_<FIELD>``,
e.g. ``DISTRL_BROKER_URL``, ``DISTRL_ADB_PORT``; top-level fields drop the section:
``DISTRL_FARM_ID``) > **the TOML file** (``--config`` or ``$DISTRL_CONFIG``) >
**defaults**. ``sources`` maps every dotted key (``broker.url``) to the layer that set
it. List fields read from the environment are comma-separated; an empty variable
means "unset" for optional fields.

A file looks like::

    farm_id = "lab-1"
    [broker]
    url = "mqtts://broker.lab:8883"
    username = "farm"
    [adb]
    targets = ["192.168.1.20:5555"]
    [tasks]
    tags = ["settings"]
    [collect]
    policy = "random"
    [live]
    frames_hz = 1

Mistakes are :class:`ConfigError` whose message names the file (or variable, or flag)
and the field: ``farm.toml: adb.port: Input should be less than or equal to 65535``.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import os
import textwrap
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args, get_origin
from urllib.parse import quote, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from distrl_sdk.errors import DistRLError
from distrl_sdk.task import Task
from distrl_sdk.wire import topics
from distrl_sdk.wire.url_mask import mask_url
from farm.device.lifecycle import LifecycleConfig
from farm.transport import parse_broker_url

__all__ = [
    "CONFIG_ENV",
    "ConfigError",
    "FarmSettings",
    "Loaded",
    "effective_broker_url",
    "env_name",
    "fields_help",
    "load_settings",
    "masked",
    "select_tasks",
]

CONFIG_ENV = "DISTRL_CONFIG"
ENV_PREFIX = "DISTRL_"
SECRET_KEYS = frozenset({"broker.password", "collect.inference_api_key"})


class ConfigError(DistRLError, ValueError):
    """A configuration a person must fix; the message says where and what."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


class BrokerSection(_Section):
    """The MQTT broker the farm talks to."""

    url: str | None = Field(None, description=(
        "Broker URL: mqtt://host:port, or mqtts://host:port for TLS (?ca=/path/ca.pem). "
        "Unset: start an embedded broker (mosquitto, else amqtt) on a loopback port."))
    username: str | None = Field(None, description="Username for the broker (overrides one "
                                 "in the URL).")
    password: str | None = Field(None, description="Password for the broker (secret: "
                                 "masked by `distrl config show`).")
    tls: bool = Field(False, description="Use TLS even when the URL says mqtt://.")
    ca_file: Path | None = Field(None, description="CA bundle to verify the broker's TLS "
                                 "certificate (default: the system's).")

    @field_validator("url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None:
            parse_broker_url(v)  # ValueError with a clear message
        return v


class AdbSection(_Section):
    """Where the devices are."""

    host: str = Field("127.0.0.1", description="adb server host.")
    port: int = Field(5037, ge=1, le=65535, description=(
        "adb server port (default: $ANDROID_ADB_SERVER_PORT, else 5037). Ignored with "
        "sim.count > 0, which starts a private adb server."))
    devices: list[str] = Field(default_factory=list, description=(
        "Serials to use (USB, emulator-NNNN or host:port). Empty: every device the adb "
        "server lists."))
    targets: list[str] = Field(default_factory=list, description=(
        "`adb connect` targets (host:port) the farm connects itself and reconnects with "
        "backoff when they drop."))

    @field_validator("targets")
    @classmethod
    def _targets(cls, v: list[str]) -> list[str]:
        for t in v:
            host, sep, port = t.rpartition(":")
            if not (sep and host and port.isdecimal() and 0 < int(port) < 65536):
                raise ValueError(f"{t!r} is not host:port")
        return v


class SimSection(_Section):
    """Simulated phones started alongside, for trying the farm without hardware."""

    count: int = Field(0, ge=0, le=256, description="Sim phones to start in-process (with "
                       "a private adb server); 0: none.")
    profile: str = Field("instant", description="Latency profile of the sim phones: "
                         "instant, emulator, pixel or old-phone.")

    @field_validator("profile")
    @classmethod
    def _profile(cls, v: str) -> str:
        from farm.sim.profiles import PROFILES

        if v not in PROFILES:
            raise ValueError(f"unknown profile {v!r} (one of {', '.join(PROFILES)})")
        return v


class TasksSection(_Section):
    """Which registered tasks to collect (the union of the three; all empty: every task)."""

    names: list[str] = Field(default_factory=list, description="Task names, exactly "
                             "(`distrl tasks list`).")
    globs: list[str] = Field(default_factory=list, description="Shell-style patterns over "
                             "task names, e.g. \"settings.*\".")
    tags: list[str] = Field(default_factory=list, description="Tasks carrying any of these "
                            "tags.")


class CollectSection(_Section):
    """How episodes are collected and shipped."""

    policy: Literal["random", "oracle", "learned", "remote"] = Field(
        "random", description="Who plays the episodes: random, the task's oracle, learned "
        "(the newest policy a learner publishes on the broker; random until the first) or "
        "remote (the learner's newest VLM policy, acting through the inference server at "
        "inference_url: nothing is built or fetched here).")
    inference_url: str | None = Field(None, description="With policy = remote: the "
                                      "OpenAI-compatible server (`distrl serve`, vLLM with "
                                      "LoRA) that the learner loads every version into "
                                      "(`distrl learner --serve-url`).")
    inference_api_key: str | None = Field(None, description="With policy = remote: the "
                                          "server's bearer key (secret: masked by `distrl "
                                          "config show`; set it in the file or "
                                          "DISTRL_COLLECT_INFERENCE_API_KEY, not a flag).")
    mode: Literal["async", "sync"] = Field("async", description="async: a worker per device "
                                           "(DistRL); sync: rounds with a barrier (DigiRL).")
    duration_s: float | None = Field(None, gt=0, description="Stop after this many seconds "
                                     "(unset: until Ctrl-C).")
    seed: int = Field(0, description="Seed for task sampling, the random policy and sims.")
    screenshots: bool = Field(False, description="Capture a frame per step and ship it with "
                              "the trajectory.")
    episode_timeout_s: float = Field(120.0, gt=0, description="An episode running longer is "
                                     "aborted (a hung device never stalls a worker longer).")
    ready_timeout_s: float = Field(30.0, gt=0, description="How long to wait at start for "
                                   "the devices to become ready.")
    flush_timeout_s: float = Field(10.0, ge=0, description="On exit, wait this long for the "
                                   "learner to ack the spool.")
    spool_dir: Path | None = Field(None, description="Spool directory for unacked "
                                   "trajectories (default: runs/spool/<farm_id>).")
    ledger: Path | None = Field(None, description="Append every trajectory id to this file "
                                "once it is durably spooled, and keep it after the ack: an "
                                "audit trail of what the farm handed over, to reconcile with "
                                "what the learner holds (bench/chaos.py). Unset: none.")
    reset: bool = Field(False, description="Reset every sim phone (--sim) before each "
                        "episode, to the state it had before its first: no episode starts "
                        "from what an earlier one left. Emulators: reset_snapshot. Physical "
                        "phones are never reset.")
    reset_snapshot: str | None = Field(None, description="Load this "
                                       "emulator snapshot before every episode on each "
                                       "emulator (emulator-N serials), through its console "
                                       "(save it once: `adb -s emulator-5554 emu avd snapshot "
                                       "save NAME`). Unset: emulators are not reset.")
    eval_every_s: float | None = Field(None, gt=0, description="With policy = learned: "
                                       "every this many seconds, a held-out evaluation round "
                                       "(test split, greedy, the version then playing frozen) "
                                       "on the same devices; its episodes are marked as "
                                       "evaluation and never learned from. Unset: none.")
    eval_episodes_per_task: int = Field(1, ge=1, le=1000, description="Episodes of each "
                                        "selected task per evaluation round.")

    @field_validator("reset_snapshot")
    @classmethod
    def _snapshot_name(cls, v: str | None) -> str | None:
        if v is not None and (not v or any(c.isspace() for c in v)):
            raise ValueError("not a snapshot name (one word, as `avd snapshot list` shows)")
        return v


class LiveSection(_Section):
    """The live view for the TUI: statuses and thumbnails."""

    status_hz: float = Field(2.0, gt=0, le=20, description="Live status updates per busy "
                             "device per second, at most (steps in between are coalesced).")
    frames_hz: float = Field(1.0, ge=0, le=10, description="Thumbnails per device per "
                             "second, at most; 0 disables them.")
    frames_total_hz: float = Field(10.0, gt=0, le=100, description="Thumbnails per second "
                                   "for the whole farm, at most (each costs ~15 ms of CPU: "
                                   "with many devices, each one's come less often).")
    frame_width: int = Field(240, ge=32, le=1080, description="Thumbnail width in pixels.")
    frame_quality: int = Field(70, ge=10, le=95, description="Thumbnail JPEG quality.")


_LC = LifecycleConfig()


class LifecycleSection(_Section):
    """Device health timeouts (STF's 10 s heartbeat / 30 s reaper are the bar)."""

    heartbeat_s: float = Field(_LC.heartbeat_s, gt=0, description="Probe a ready/busy "
                               "device this often.")
    reaper_s: float = Field(_LC.reaper_s, gt=0, description="A device with no good probe "
                            "for this long is offline.")
    probe_timeout_s: float = Field(_LC.probe_timeout_s, gt=0, description="Deadline of one "
                                   "health probe call.")
    boot_timeout_s: float = Field(_LC.boot_timeout_s, gt=0, description="A preparing device "
                                  "must finish booting within this.")
    boot_poll_s: float = Field(_LC.boot_poll_s, gt=0, description="Boot gate poll interval.")
    max_failures: int = Field(_LC.max_failures, ge=1, description="Failures in a row that "
                              "quarantine a device.")
    backoff_min_s: float = Field(_LC.backoff_min_s, gt=0, description="First reconnect "
                                 "backoff of an offline device.")
    backoff_max_s: float = Field(_LC.backoff_max_s, gt=0, description="Longest reconnect "
                                 "backoff.")
    reconnect_timeout_s: float = Field(_LC.reconnect_timeout_s, gt=0, description="Deadline "
                                       "of one `adb connect`.")

    def to_lifecycle(self) -> LifecycleConfig:
        return LifecycleConfig(**self.model_dump())


class TrustSection(_Section):
    """This farm's key, and whose signatures it accepts (`distrl keys`)."""

    signing_key: Path | None = Field(None, description=(
        "This farm's private key (`distrl keys create NAME`): it signs every trajectory, "
        "and a learner learns only from farm keys it trusts. Unset: the local farm key "
        "($DISTRL_KEYS or ~/.local/state/distrl/keys/farm.key, created if missing), which "
        "`distrl learner` on this host trusts by default."))
    learner_keys: list[Path] = Field(default_factory=list, description=(
        "Public keys (.pub from `distrl keys`) of the learners whose policy pointers and "
        "trajectory acks this farm accepts; anything else is refused and counted. Empty: "
        "the local learner key ($DISTRL_KEYS or ~/.local/state/distrl/keys/learner.key, "
        "created if missing), which `distrl learner` on this host signs with."))
    operator_keys: list[Path] = Field(default_factory=list, description=(
        "Public keys (.pub) of the operators (`distrl tui`) whose signed commands this farm "
        "runs; anything else is refused, answered and counted. Empty: the local operator "
        "key ($DISTRL_KEYS or ~/.local/state/distrl/keys/operator.key, created if "
        "missing), which `distrl tui` on this host signs with."))
    accept_unsigned: bool = Field(False, description=(
        "Accept unsigned or unknown-key pointers, acks and commands (parts from before "
        "signatures). Anyone who can publish on the broker can then delete spooled "
        "trajectories, choose the farm's policy and command its devices."))


class FarmSettings(_Section):
    """Everything `distrl farm up` needs (file sections in brackets)."""

    farm_id: str = Field("farm", description="This farm's id on MQTT (distrl/v1/<farm_id>/…).")
    broker: BrokerSection = Field(default_factory=BrokerSection)  # type: ignore[arg-type]
    adb: AdbSection = Field(default_factory=AdbSection)  # type: ignore[arg-type]
    sim: SimSection = Field(default_factory=SimSection)  # type: ignore[arg-type]
    tasks: TasksSection = Field(default_factory=TasksSection)
    collect: CollectSection = Field(default_factory=CollectSection)  # type: ignore[arg-type]
    live: LiveSection = Field(default_factory=LiveSection)  # type: ignore[arg-type]
    lifecycle: LifecycleSection = Field(default_factory=LifecycleSection)  # type: ignore[arg-type]
    trust: TrustSection = Field(default_factory=TrustSection)  # type: ignore[arg-type]

    @field_validator("farm_id")
    @classmethod
    def _farm_id(cls, v: str) -> str:
        topics.cmd_result(v)  # TopicError (a ValueError) for ids that break the topic tree
        return v

    def spool_path(self) -> Path:
        return self.collect.spool_dir or Path("runs/spool") / self.farm_id


# -- the field catalogue -----------------------------------------------------------------
@dataclass(frozen=True)
class FieldInfo:
    key: str  # dotted: broker.url
    annotation: Any
    default: Any
    description: str


def _catalogue() -> dict[str, FieldInfo]:
    out: dict[str, FieldInfo] = {}
    for name, f in FarmSettings.model_fields.items():
        ann = f.annotation
        if isinstance(ann, type) and issubclass(ann, _Section):
            for sub, sf in ann.model_fields.items():
                default = sf.get_default(call_default_factory=True)
                out[f"{name}.{sub}"] = FieldInfo(f"{name}.{sub}", sf.annotation, default,
                                                 sf.description or "")
        else:
            out[name] = FieldInfo(name, ann, f.get_default(call_default_factory=True),
                                  f.description or "")
    return out


FIELDS: dict[str, FieldInfo] = _catalogue()
SECTIONS = sorted({k.split(".")[0] for k in FIELDS if "." in k})


def env_name(key: str) -> str:
    """``broker.url`` → ``DISTRL_BROKER_URL``; ``farm_id`` → ``DISTRL_FARM_ID``."""
    return ENV_PREFIX + key.replace(".", "_").upper()


def _fmt_default(v: Any) -> str:
    if v is None:
        return "unset"
    if isinstance(v, list):
        return "[]" if not v else ", ".join(map(str, v))
    if isinstance(v, bool):
        return str(v).lower()
    return str(v)


def fields_help() -> str:
    """Every field with its env variable, default and description (for --help epilogs;
    ``\\b`` keeps click from re-wrapping the lines)."""
    lines = ["\b", "Configuration fields (file key / environment variable, default):"]
    section = ""
    for key, fi in FIELDS.items():
        top = key.split(".")[0] if "." in key else ""
        if top != section:
            section = top
            lines += ["", "\b", f"[{top}]"]
        lines.append(f"  {key.split('.')[-1]} / {env_name(key)} ({_fmt_default(fi.default)})")
        lines += textwrap.wrap(fi.description, 92, initial_indent=" " * 6,
                               subsequent_indent=" " * 6)
    return "\n".join(lines)


# -- loading -------------------------------------------------------------------------------
@dataclass
class Loaded:
    settings: FarmSettings
    sources: dict[str, str]  # dotted key → "default" | "file F" | "env NAME" | "flag --x"
    path: Path | None = None


def _hint(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def read_toml(path: Path) -> dict[str, Any]:
    """A config file's document; ``ConfigError`` naming the file when it cannot be read."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text (is it a TOML file?)") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: TOML syntax error: {exc}") from None


#: Tables of the shared config file that belong to other roles (the learner's)
OTHER_ROLES = frozenset({"learner"})


def _read_file(path: Path) -> dict[str, Any]:
    doc = read_toml(path)
    flat: dict[str, Any] = {}
    problems: list[str] = []
    for top, value in doc.items():
        if top in OTHER_ROLES:
            continue  # one file for every role: the learner reads its own table
        if top in SECTIONS:
            if not isinstance(value, dict):
                problems.append(f"{path}: {top}: expected a [{top}] table, got "
                                f"{type(value).__name__}")
                continue
            for sub, v in value.items():
                key = f"{top}.{sub}"
                if key not in FIELDS:
                    options = [k.split(".")[1] for k in FIELDS if k.startswith(top + ".")]
                    problems.append(f"{path}: {key}: unknown field{_hint(sub, options)}")
                else:
                    flat[key] = v
        elif top in FIELDS:
            flat[top] = value
        else:
            where = [k for k in FIELDS if "." not in k] + SECTIONS + sorted(OTHER_ROLES)
            problems.append(f"{path}: {top}: unknown field or section{_hint(top, where)}")
    if problems:
        raise ConfigError("\n".join(problems))
    return flat


def _value_kind(annotation: Any) -> str:
    """"list", "dict" or "" for a field's annotation (Optional unwrapped)."""
    for a in (annotation, *get_args(annotation)):
        origin = get_origin(a)
        if origin is list:
            return "list"
        if origin is dict:
            return "dict"
    return ""


def env_layer(env: Mapping[str, str], annotations: Mapping[str, Any],
              var_of: Callable[[str], str]) -> dict[str, tuple[Any, str]]:
    """The fields set in the environment: field → (value, "env VAR"). Lists are
    comma-separated, tables JSON; an empty variable unsets an optional field (and
    empties a list or table). Shared by every role's settings."""
    out: dict[str, tuple[Any, str]] = {}
    for key, annotation in annotations.items():
        var = var_of(key)
        if var not in env:
            continue
        raw = env[var]
        value: Any = raw
        kind, optional = _value_kind(annotation), type(None) in get_args(annotation)
        if raw.strip() == "" and (optional or kind):
            value = None if optional else ([] if kind == "list" else {})
        elif kind == "list":
            value = [x.strip() for x in raw.split(",") if x.strip()]
        elif kind == "dict":
            try:
                value = json.loads(raw)
            except ValueError as exc:
                raise ConfigError(f"{var} ({key}): not a JSON object ({exc})") from None
        out[key] = (value, f"env {var}")
    return out


def merge_layers(keys: Iterable[str], file_values: Mapping[str, Any], path: Path | None,
                 env_values: Mapping[str, tuple[Any, str]],
                 flags: Mapping[str, tuple[Any, str]] | Mapping[str, Any],
                 ) -> tuple[dict[str, Any], dict[str, str]]:
    """Defaults < file < environment < flags: the values given, and which layer set each
    field ("default", "file F", "env VAR", "flag --x"). ``flags``: field → value or
    (value, flag name); None values are "not given"."""
    data: dict[str, Any] = {}
    sources = {k: "default" for k in keys}
    for key, v in file_values.items():
        data[key], sources[key] = v, f"file {path}"
    for key, (v, src) in env_values.items():
        data[key], sources[key] = v, src
    for key, given in flags.items():
        if key not in sources:
            raise KeyError(f"no config field {key!r}")  # a programming error
        v, name = given if isinstance(given, tuple) else (given, key)
        if v is not None:
            data[key], sources[key] = v, f"flag {name}"
    return data, sources


def _nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, v in flat.items():
        if "." in key:
            top, sub = key.split(".", 1)
            out.setdefault(top, {})[sub] = v
        else:
            out[key] = v
    return out


def _source_label(source: str, key: str) -> str:
    if source.startswith("file "):
        return f"{source[5:]}: {key}"
    if source.startswith("env "):
        return f"{source[4:]} ({key})"
    if source.startswith("flag "):
        return f"{source[5:]} ({key})"
    return key


def load_settings(path: str | os.PathLike[str] | None = None, *,
                  env: Mapping[str, str] | None = None,
                  flags: Mapping[str, tuple[Any, str]] | Mapping[str, Any] | None = None,
                  ) -> Loaded:
    """Merge defaults < file < environment < flags and validate.

    ``path``: the TOML file (None: ``$DISTRL_CONFIG`` if set, else no file). ``env``:
    the environment (default ``os.environ``). ``flags``: dotted key → value, or → (value,
    flag name) for messages that say ``--adb-port``; None values are "not given".
    """
    env = os.environ if env is None else env
    if path is None and env.get(CONFIG_ENV):
        path = env[CONFIG_ENV]
    p = Path(path) if path is not None else None
    flat, sources = merge_layers(
        FIELDS, _read_file(p) if p is not None else {}, p,
        env_layer(env, {k: fi.annotation for k, fi in FIELDS.items()}, env_name), flags or {})
    adb_env = env.get("ANDROID_ADB_SERVER_PORT")  # adb's own variable: below the file
    if adb_env and sources["adb.port"] == "default":
        flat["adb.port"] = adb_env
        sources["adb.port"] = "env ANDROID_ADB_SERVER_PORT"
    try:
        settings = FarmSettings.model_validate(_nest(flat))
    except ValidationError as exc:
        raise ConfigError(_explain(exc, sources)) from None
    return Loaded(settings, sources, p)


def _explain(exc: ValidationError, sources: Mapping[str, str]) -> str:
    lines: list[str] = []
    for err in exc.errors(include_url=False):
        loc = [str(x) for x in err["loc"]]
        key = ".".join(loc[:2]) if loc and loc[0] in SECTIONS else (loc[0] if loc else "?")
        if loc and loc[0] in SECTIONS and len(loc) == 1:
            key = loc[0]
        src = sources.get(key, "default")
        item = f"[{loc[2]}]" if len(loc) > 2 else ""
        msg = err["msg"].removeprefix("Value error, ")
        got = err.get("input")
        if err["type"] != "missing" and not isinstance(got, dict) and key not in SECRET_KEYS:
            msg += f" (got {got!r})"[:120]
        lines.append(f"{_source_label(src, key)}{item}: {msg}")
    return "\n".join(lines)


# -- using it --------------------------------------------------------------------------------
def effective_broker_url(b: BrokerSection) -> str | None:
    """The URL with username/password/TLS/CA folded in (what the clients connect to)."""
    if b.url is None:
        return None
    url = b.url if "://" in b.url else "mqtt://" + b.url
    parts = urlsplit(url)
    scheme = parts.scheme
    if b.tls and scheme in ("mqtt", "tcp"):
        scheme = "mqtts"
    user = b.username if b.username is not None else (
        parts.username if parts.username is not None else None)
    pw = b.password if b.password is not None else parts.password
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    if user is not None:
        cred = quote(user, safe="") + (f":{quote(pw, safe='')}" if pw is not None else "")
        netloc = f"{cred}@{netloc}"
    query = parts.query
    if b.ca_file is not None:
        query = "&".join(x for x in (query, f"ca={quote(str(b.ca_file))}") if x)
    return urlunsplit((scheme, netloc, parts.path, query, ""))


def masked(settings: FarmSettings) -> dict[str, Any]:
    """The settings as JSON-able data with secrets masked."""
    data = settings.model_dump(mode="json")
    if data["broker"].get("password") is not None:
        data["broker"]["password"] = "****"
    if data["collect"].get("inference_api_key") is not None:
        data["collect"]["inference_api_key"] = "****"
    if data["broker"].get("url"):
        data["broker"]["url"] = mask_url(data["broker"]["url"])
    return data


def select_tasks(sel: TasksSection, available: Iterable[type[Task]]) -> list[type[Task]]:
    """The tasks ``sel`` picks, in name order; every task when it picks nothing."""
    tasks = {t.name: t for t in available}
    if not (sel.names or sel.globs or sel.tags):
        return [tasks[n] for n in sorted(tasks)]
    problems: list[str] = []
    chosen: set[str] = set()
    for n in sel.names:
        if n in tasks:
            chosen.add(n)
        else:
            problems.append(f"unknown task {n!r}{_hint(n, tasks)}")
    for g in sel.globs:
        hit = fnmatch.filter(tasks, g)
        if not hit:
            problems.append(f"task pattern {g!r} matches no task")
        chosen.update(hit)
    for tag in sel.tags:
        hit = [n for n, t in tasks.items() if tag in t.tags]
        if not hit:
            known = sorted({x for t in tasks.values() for x in t.tags})
            problems.append(f"no task has tag {tag!r}{_hint(tag, known)}")
        chosen.update(hit)
    if problems:
        raise ConfigError("; ".join(problems) + " (see `distrl tasks list`)")
    return [tasks[n] for n in sorted(chosen)]
