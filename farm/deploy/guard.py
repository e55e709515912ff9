"""The deploy safety guard: decides, before anything reaches the phone, whether an action
may run.

Every proposed action is checked against the screen it was chosen on, in this order
(the first rule that matches refuses it; its name is in the verdict and the message):

1. **Where we are** — the foreground package/activity. Inside a denied package (dialer,
   SMS, payment apps, the package installer) or a denied activity (factory reset,
   developer options, store billing) only *escape* actions run: back, home, wait and
   the terminal ones (complete, impossible, answer).
2. **What it opens** — ``open_app`` targets: URI schemes (``tel:``, ``sms:`` …), intent
   actions (``android.intent.action.CALL`` …) and denied packages, also by app name
   ("Phone" resolves to the dialer).
3. **What is under the finger** — for tap, long press and type-with-tap, the labels of
   the clickable element under the point and of everything inside it, against text
   rules ("Factory reset", "Uninstall", "Buy", "Pay", and "Call"/"Send" in dialer,
   contacts and SMS apps).
4. **What it types** — card numbers (13-19 digits passing the Luhn check) and the typed
   text rules (USSD/secret codes by default).
5. **What would run** — the exact ``adb shell`` commands the action becomes
   (:func:`distrl_sdk.actions.to_adb_commands`), against denied command patterns
   (``pm uninstall``, ``CALL``/``SENDTO``/``MASTER_CLEAR`` intents, ``tel:`` URIs,
   wipes, reboots) and denied packages (``monkey -p``/``am start -n``). This catches
   whatever the earlier, friendlier rules miss.

Limits (steps, wall time) are checked separately by :meth:`Guard.check_limits`.

The defaults are in :class:`GuardConfig`; a TOML file (``distrl deploy --guard FILE``)
overrides fields by name, or extends the default lists with ``extra_<field>``::

    max_steps = 15
    extra_denied_packages = ["com.example.bank"]
    [[extra_denied_texts]]
    pattern = "\\\\bdelete\\\\b"
    reason = "deleting data is denied"
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from distrl_sdk.actions import (
    Answer,
    Complete,
    Impossible,
    InvalidAction,
    Key,
    LongPress,
    OpenApp,
    Scroll,
    Swipe,
    Tap,
    TypeText,
    Wait,
    resolve_app,
    to_adb_commands,
    to_json,
)
from distrl_sdk.errors import ConfigError, DeployRefused
from distrl_sdk.uitree import UIElement

__all__ = [
    "Guard",
    "GuardConfig",
    "GuardContext",
    "TextRule",
    "Verdict",
    "describe_action",
    "load_guard_config",
]

DIALER = ("com.android.dialer", "com.google.android.dialer", "com.samsung.android.dialer",
          "com.android.incallui", "com.android.server.telecom", "com.android.phone")
SMS = ("com.google.android.apps.messaging", "com.android.mms", "com.android.messaging",
       "com.samsung.android.messaging")
CONTACTS = ("com.google.android.contacts", "com.android.contacts",
            "com.samsung.android.app.contacts")
PAYMENTS = ("com.google.android.apps.walletnfcrel", "com.google.android.apps.nbu.paisa.user",
            "com.samsung.android.spay", "com.paypal.android.p2pmobile", "com.venmo",
            "com.squareup.cash")
INSTALLERS = ("com.android.packageinstaller", "com.google.android.packageinstaller")
STORE = "com.android.vending"


class TextRule(BaseModel):
    """A case-insensitive regular expression with the reason shown when it matches."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    pattern: str
    """Python regex, searched case-insensitively (use ``\\b`` for whole words)."""
    reason: str
    """Why it is denied, shown to the person running the deploy."""
    name: str = "text"
    """Short rule name shown in verdicts (``text:<name>``)."""
    packages: tuple[str, ...] = ()
    """Only applies while one of these packages is in the foreground (empty: anywhere)."""

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return v

    def matches(self, text: str, package: str | None) -> bool:
        if self.packages and package not in self.packages:
            return False
        return re.search(self.pattern, text, re.IGNORECASE) is not None


def _rule(name: str, pattern: str, reason: str, packages: Sequence[str] = ()) -> TextRule:
    return TextRule(name=name, pattern=pattern, reason=reason, packages=tuple(packages))


DEFAULT_TEXTS = (
    _rule("factory-reset", r"\bfactory (data )?reset\b|\berase all( data)?\b|"
          r"\breset (phone|tablet|device)\b|\berase everything\b|\bwipe (data|device)\b",
          "factory reset / erasing the device is denied"),
    _rule("reset", r"^\s*reset options\s*$|\breset (all )?settings\b",
          "reset screens are denied"),
    _rule("developer-options", r"\bdeveloper options\b|^\s*build number\s*$",
          "developer options are denied"),
    _rule("uninstall", r"\buninstall", "uninstalling apps is denied"),
    _rule("clear-data", r"\bclear (storage|data|all data)\b|\bremove account\b",
          "clearing app data or removing accounts is denied"),
    _rule("payment", r"\b(buy|pay|purchase|checkout|check out|place order|subscribe)\b",
          "payments and purchases are denied"),
    _rule("payment", r"[$€£¥₹]\s?\d", "paid items in the store are denied", (STORE,)),
    _rule("phone-call", r"\b(call|dial|video call|voice call)\b",
          "phone calls are denied", (*DIALER, *CONTACTS, *SMS)),
    _rule("sms", r"\bsend\b|\bsms\b|\bmms\b", "sending SMS/MMS is denied", (*SMS, *CONTACTS)),
)
DEFAULT_TYPED = (
    _rule("ussd-code", r"^\s*[*#][*#0-9]*#", "typing USSD / secret codes is denied"),
)
DEFAULT_COMMANDS = (
    r"\bpm\s+(uninstall|clear|disable(-user)?|reset-permissions)\b",
    r"\bcmd\s+package\s+(uninstall|clear)\b",
    r"android\.intent\.action\.(CALL|CALL_PRIVILEGED|CALL_EMERGENCY|DIAL|SENDTO|SEND|"
    r"SEND_MULTIPLE|MASTER_CLEAR|FACTORY_RESET|DELETE|UNINSTALL_PACKAGE|INSTALL_PACKAGE)\b",
    r"android\.settings\.(APPLICATION_DEVELOPMENT_SETTINGS|PRIVACY_SETTINGS)\b",
    r"\b(tel|sms|smsto|mms|mmsto|voicemail|market):",
    r"\brecovery\b|--wipe|\bwipe\b|\bmaster_clear\b|\bfactory_reset\b",
    r"\breboot\b|\bsvc\s+power\s+(shutdown|reboot)\b",
    r"\bservice\s+call\s+(phone|isms)\b",
)
DEFAULT_ACTIVITIES = (
    r"MasterClear|MainClear|FactoryReset|ResetDashboard|ResetNetwork|EraseEuicc",
    r"DevelopmentSettings",
    r"UninstallerActivity|UninstallAppProgress",
    r"(?i)^com\.android\.vending/.*(billing|purchase|checkout|acquire)",
)
URI_SCHEMES = ("tel", "sms", "smsto", "mms", "mmsto", "voicemail", "market", "intent",
               "content", "file", "http", "https")
ESCAPES = (Key, Wait, Complete, Impossible, Answer, InvalidAction)


class GuardConfig(BaseModel):
    """What the deploy guard denies and how long a deploy may run."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    max_steps: int = Field(default=25, ge=1, le=10_000)
    """Decisions before the episode is stopped (refused and dry-run ones count)."""
    max_seconds: float = Field(default=300.0, gt=0, le=86_400)
    """Wall time of the whole deploy (setup included) before it is stopped."""
    denied_packages: tuple[str, ...] = (*DIALER, *SMS, *PAYMENTS, *INSTALLERS)
    """Packages never opened, and where only back/home/wait/complete run. A trailing
    ``*`` matches a prefix (``com.example.*``)."""
    denied_activities: tuple[str, ...] = DEFAULT_ACTIVITIES
    """Regexes on ``package/activity`` of the foreground; inside, only escapes run."""
    denied_texts: tuple[TextRule, ...] = DEFAULT_TEXTS
    """Rules on the labels of the element under a tap/long press."""
    denied_typed: tuple[TextRule, ...] = DEFAULT_TYPED
    """Rules on text typed with type_text."""
    block_card_numbers: bool = True
    """Refuse typing anything that looks like a payment card number (Luhn-valid)."""
    denied_commands: tuple[str, ...] = DEFAULT_COMMANDS
    """Regexes on each ``adb shell`` command an action turns into."""

    @field_validator("denied_activities", "denied_commands")
    @classmethod
    def _regexes(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for p in v:
            try:
                re.compile(p)
            except re.error as exc:
                raise ValueError(f"{p!r} is not a regular expression: {exc}") from None
        return v


def load_guard_config(path: str | Path | None = None, **overrides: Any) -> GuardConfig:
    """Defaults, then the TOML file's fields (``extra_<list>`` appends), then ``overrides``
    (CLI flags; ``None`` values are ignored). Raises :class:`ConfigError` naming the
    file and field on any mistake."""
    data: dict[str, Any] = {}
    where = "guard settings"
    if path is not None:
        p = Path(path)
        where = str(p)
        try:
            raw = tomllib.loads(p.read_text())
        except FileNotFoundError:
            raise ConfigError(f"guard file {p} does not exist") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read guard file {p}: {exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{p}: not valid TOML: {exc}") from None
        section = raw.get("guard")  # a [guard] table, or the fields at the top level
        data = dict(section) if isinstance(section, dict) else dict(raw)
    base = GuardConfig()
    for key in [k for k in data if k.startswith("extra_")]:
        field = key.removeprefix("extra_")
        extra = data.pop(key)
        if field not in GuardConfig.model_fields or not isinstance(getattr(base, field), tuple):
            raise ConfigError(f"{where}: {key}: there is no list field {field!r} to extend")
        if not isinstance(extra, list):
            raise ConfigError(f"{where}: {key}: must be a list")
        current = data.get(field, list(getattr(base, field)))
        data[field] = [*current, *extra]
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return GuardConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{where}: {problems}") from None


@dataclass(frozen=True)
class GuardContext:
    """The screen an action was chosen on."""

    package: str | None
    activity: str | None
    elements: Sequence[UIElement]
    screen_size: tuple[int, int]


Outcome = Literal["allowed", "refused"]


@dataclass(frozen=True)
class Verdict:
    """The guard's decision on one action; ``rule``/``reason`` say why it was refused."""

    allowed: bool
    rule: str = ""
    reason: str = ""
    action: str = ""  # the action as a person reads it
    target: str = ""  # what it touched (element label, package), if anything

    @property
    def outcome(self) -> Outcome:
        return "allowed" if self.allowed else "refused"

    @property
    def message(self) -> str:
        if self.allowed:
            return f"allowed {self.action}"
        on = f" on {self.target}" if self.target else ""
        return f"refused {self.action}{on}: {self.reason} (rule {self.rule})"

    def error(self) -> DeployRefused:
        """The refusal as the exception the SDK defines for it."""
        return DeployRefused(self.message)


def describe_action(action: Any) -> str:
    """``tap (0.52, 0.33)``, ``type_text "hello"``, ``open_app Settings`` …"""
    if isinstance(action, InvalidAction):
        return f"invalid action ({action.reason})"
    match action:
        case Tap(x=x, y=y):
            return f"tap ({x:.2f}, {y:.2f})"
        case LongPress(x=x, y=y):
            return f"long_press ({x:.2f}, {y:.2f})"
        case TypeText(text=t, x=x, y=y):
            at = f" at ({x:.2f}, {y:.2f})" if x is not None and y is not None else ""
            return f"type_text {t!r}{at}"
        case OpenApp(app_name=name):
            return f"open_app {name!r}"
        case Key(key=k):
            return f"key {k}"
        case Wait(seconds=s):
            return f"wait {s:g} s"
        case Scroll(direction=d):
            return f"scroll {d}"
        case Swipe(x1=x1, y1=y1, x2=x2, y2=y2):
            return f"swipe ({x1:.2f}, {y1:.2f}) → ({x2:.2f}, {y2:.2f})"
        case Answer(text=t):
            return f"answer {t!r}"
        case Complete():
            return "complete"
        case Impossible():
            return "impossible"
    try:
        return to_json(action)
    except Exception:  # an unknown object still gets described
        return repr(action)


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")


def card_number_in(text: str) -> str | None:
    """A Luhn-valid 13-19 digit run (spaces/dashes allowed) in ``text``, masked."""
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if 13 <= len(digits) <= 19 and _luhn(digits):
            return f"{digits[:4]} … {digits[-4:]}"
    return None


def element_under(elements: Sequence[UIElement], x: float, y: float) -> list[UIElement]:
    """What a tap at pixel (x, y) touches: the innermost clickable element containing the
    point and everything inside it; with none clickable, the elements containing it."""
    hits = [e for e in elements if e.bounds.contains(x, y)]
    if not hits:
        return []
    clickable = [e for e in hits if e.clickable]
    if not clickable:
        return hits
    target = max(clickable, key=lambda e: e.depth)
    inside = {target.index}
    out = [target]
    for e in elements:  # document order: a child comes after its parent
        if e.parent in inside:
            inside.add(e.index)
            out.append(e)
    # a label drawn over the point by a sibling (text views beside their row) counts too
    out += [e for e in hits if e.index not in inside and e.depth > target.depth]
    return out


class Guard:
    """Checks actions against a :class:`GuardConfig` (see the module docstring)."""

    def __init__(self, config: GuardConfig | None = None) -> None:
        self.config = config or GuardConfig()
        c = self.config
        self._activities = [re.compile(p) for p in c.denied_activities]
        self._commands = [re.compile(p, re.IGNORECASE) for p in c.denied_commands]

    # -- pieces
    def package_denied(self, package: str | None) -> bool:
        if not package:
            return False
        for p in self.config.denied_packages:
            if p.endswith("*") and package.startswith(p[:-1]):
                return True
            if package == p:
                return True
        return False

    def _activity_rule(self, package: str | None, activity: str | None) -> str | None:
        if not package or not activity:
            return None
        full = activity if "." in activity and not activity.startswith(".") \
            else f"{package}{activity}"
        comp = f"{package}/{full}"
        for rx in self._activities:
            if rx.search(comp):
                return comp
        return None

    def check_limits(self, step: int, elapsed_s: float) -> Verdict | None:
        """A refusal once the step or time budget is spent; ``None`` while within it."""
        c = self.config
        if step >= c.max_steps:
            return Verdict(False, "step-limit", f"the step limit of {c.max_steps} is reached",
                           "the next step")
        if elapsed_s >= c.max_seconds:
            return Verdict(False, "time-limit",
                           f"the time limit of {c.max_seconds:g} s is reached", "the next step")
        return None

    def check(self, action: Any, ctx: GuardContext) -> Verdict:
        """Allowed, or refused with the first rule that matched."""
        what = describe_action(action)
        if isinstance(action, InvalidAction):
            return Verdict(True, action=what)  # nothing would run
        if not isinstance(action, ESCAPES) or (isinstance(action, Key)
                                              and action.key == "enter"):
            if self.package_denied(ctx.package):
                return Verdict(False, "package", f"{ctx.package} is a denied app; only back, "
                               "home, wait and ending the episode are allowed in it",
                               what, str(ctx.package))
            comp = self._activity_rule(ctx.package, ctx.activity)
            if comp is not None:
                return Verdict(False, "activity", f"the screen {comp} is denied; only back, "
                               "home, wait and ending the episode are allowed on it", what)
        if isinstance(action, OpenApp):
            v = self._check_open(action, what)
            if v is not None:
                return v
        if isinstance(action, Tap | LongPress | TypeText):
            v = self._check_touch(action, ctx, what)
            if v is not None:
                return v
        if isinstance(action, TypeText):
            v = self._check_typed(action.text, ctx, what)
            if v is not None:
                return v
        return self._check_commands(action, ctx, what)

    def _check_open(self, action: OpenApp, what: str) -> Verdict | None:
        name = action.app_name.strip()
        scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", name)
        if scheme and scheme.group(1).lower() in URI_SCHEMES:
            return Verdict(False, "uri", f"opening {scheme.group(1).lower()}: URIs is denied",
                           what)
        if re.search(r"\bandroid\.intent\.action\.", name) or re.search(r"\s-[adn]\s", name):
            return Verdict(False, "intent", "open_app takes an app name, not an intent", what)
        try:
            pkg = resolve_app(name)
        except ValueError:
            return None  # execution reports the unknown app; nothing dangerous can start
        if self.package_denied(pkg):
            return Verdict(False, "package", f"opening {pkg} is denied", what, pkg)
        return None

    def _check_touch(self, action: Tap | LongPress | TypeText, ctx: GuardContext,
                     what: str) -> Verdict | None:
        if action.x is None or action.y is None:
            return None
        w, h = ctx.screen_size
        touched = element_under(ctx.elements, action.x * w, action.y * h)
        for e in touched:
            for label in {e.text, e.content_desc} - {""}:
                for rule in self.config.denied_texts:
                    if rule.matches(label, ctx.package):
                        return Verdict(False, f"text:{rule.name}", rule.reason, what,
                                       f'"{label}"')
        return None

    def _check_typed(self, text: str, ctx: GuardContext, what: str) -> Verdict | None:
        if self.config.block_card_numbers:
            card = card_number_in(text)
            if card is not None:  # the number itself never reaches a message or a file
                return Verdict(False, "card-number",
                               f"typing a payment card number ({card}) is denied",
                               f"type_text <{len(text)} characters with a card number>")
        for rule in self.config.denied_typed:
            if rule.matches(text, ctx.package):
                return Verdict(False, f"typed:{rule.name}", rule.reason, what)
        return None

    def _check_commands(self, action: Any, ctx: GuardContext, what: str) -> Verdict:
        try:
            commands = to_adb_commands(action, ctx.screen_size)
        except (ValueError, TypeError):
            return Verdict(True, action=what)  # execution rejects it before touching the device
        for cmd in commands:
            for rx in self._commands:
                if rx.search(cmd):
                    return Verdict(False, "command", f"the command `{cmd}` is denied "
                                   f"(matches {rx.pattern!r})", what)
            for m in re.finditer(r"(?:-p|-n|--package)\s+'?([A-Za-z][\w.]*)", cmd):
                if self.package_denied(m.group(1)):
                    return Verdict(False, "package", f"starting {m.group(1)} is denied", what,
                                   m.group(1))
        return Verdict(True, action=what)
