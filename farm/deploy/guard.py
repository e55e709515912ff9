"""The deploy safety guard: decides, before anything reaches the phone, whether an action
may run.

Every proposed action is checked against the screen it was chosen on — and the deploy
runner checks it again against a fresh look at the screen right before it executes —
in this order (the first rule that matches refuses it; its name is in the verdict):

0. **Card numbers** typed (13-19 digits passing the Luhn check) are refused first, so
   the number never reaches a verdict, a record or a file.
1. **Where we are** — the foreground package/activity. Inside a denied package (dialer,
   SMS, payment apps, the package installer) or a denied activity (factory reset,
   developer options, store billing) only *escape* actions run: back, home, wait and
   the terminal ones (complete, impossible, answer).
2. **Whether we know where we are** — with no foreground package or an empty UI tree
   (a secure window, a transition, a failed dump) the guard cannot judge a touch, so
   only escapes and ``open_app`` (judged by its target alone) run.
3. **What it opens** — ``open_app`` targets: URI schemes (``tel:``, ``sms:`` …), intent
   actions (``android.intent.action.CALL`` …) and denied packages, also by app name
   ("Phone" resolves to the dialer).
4. **What is under the finger** — taps, long presses, type-with-tap and *short swipes*
   (a finger that moves less than ``tap_slop_px`` is a tap or a long press to Android,
   judged at both its ends). Judged are the labels (text, content-desc, resource-id
   name, hint) of the innermost clickable element under the point, everything inside
   it or drawn over it, the plain labels beside it on its row, and any other element
   whose bounds contain the point — but not the plain containers around it (a page's
   title bar). A field's own text is content, not a label. Text rules are English and
   German plus the big vendors' wording ("Factory data reset", "Zurücksetzen",
   "Jetzt kaufen", "Zahlungspflichtig bestellen", "Place order", "Anrufen", "Call us",
   ``tel:`` links, phone numbers in Contacts …); labels are Unicode-normalised first
   (no-break spaces, zero-width characters). A touch where the tree shows nothing is
   refused: the guard cannot tell what it would hit. A long swipe is judged only for
   slide-to-confirm controls ("Slide to pay").
5. **What it types** — the *field's resulting text* (the target field's current text
   plus what is typed, and the typed chunk alone), so a USSD code or a card number
   typed one character at a time is caught at the keystroke that completes it; card
   numbers spread over consecutive digit fields (4 + 4 + 4 + 4); and typing into a
   field labelled as a card field.
6. **Enter** (``key enter`` or a newline typed) — judged by the focused element: a
   focused button by its labels; in a focused field (or with nothing focused) by the
   field's resulting text and by every clickable on the screen the form could submit
   through ("Place order" below a field refuses Enter in it).
7. **What would run** — the exact ``adb shell`` commands the action becomes
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

``docs/deploy-guard.md`` describes the rules and their limits for people running deploys.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
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
    "card_number_in",
    "describe_action",
    "element_under",
    "labels_of",
    "load_guard_config",
    "normalise",
]

DIALER = ("com.android.dialer", "com.google.android.dialer", "com.samsung.android.dialer",
          "com.android.incallui", "com.samsung.android.incallui", "com.android.server.telecom",
          "com.android.phone")
SMS = ("com.google.android.apps.messaging", "com.android.mms", "com.android.messaging",
       "com.samsung.android.messaging")
CONTACTS = ("com.google.android.contacts", "com.android.contacts",
            "com.samsung.android.app.contacts", "com.huawei.contacts")
PAYMENTS = ("com.google.android.apps.walletnfcrel", "com.google.android.apps.nbu.paisa.user",
            "com.samsung.android.spay", "com.samsung.android.samsungpay.gear",
            "com.paypal.android.p2pmobile", "com.venmo", "com.squareup.cash")
INSTALLERS = ("com.android.packageinstaller", "com.google.android.packageinstaller")
STORE = "com.android.vending"
SETTINGS = ("com.android.settings", "com.samsung.android.settings", "com.miui.securitycenter",
            "com.coloros.settings", "com.huawei.systemmanager")
BROWSERS = ("com.android.chrome", "com.chrome.beta", "org.mozilla.firefox",
            "com.sec.android.app.sbrowser", "com.microsoft.emmx", "com.opera.browser",
            "com.brave.browser", "com.android.browser", "com.mi.globalbrowser")


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


# German umlauts are matched spelt either way (ö|oe): vendors and web shops use both.
_UE, _OE, _AE, _SZ = "(ü|ue)", "(ö|oe)", "(ä|ae)", "(ß|ss)"
DEFAULT_TEXTS = (
    _rule("factory-reset", r"\bfactory (data )?reset\b|\berase all( data)?\b|"
          r"\breset (phone|tablet|device)\b|\berase everything\b|\bwipe (data|device)\b|"
          r"\bdelete all data\b|werkseinstellung|"
          rf"\balle daten l{_OE}schen\b|\balles l{_OE}schen\b|"
          rf"\b(telefon|ger{_AE}t|tablet|handy) zur{_UE}cksetzen\b",
          "factory reset / erasing the device is denied"),
    _rule("reset", r"^\s*reset options\s*$|\breset (all )?settings\b|"
          rf"^\s*optionen zur{_UE}cksetzen\s*$|\beinstellungen zur{_UE}cksetzen\b",
          "reset screens are denied"),
    # a bare "Reset"/"Delete all" is the last confirmation of Samsung's and Pixel's reset
    # flows; in Settings it is never harmless (a stopwatch's "Reset" elsewhere is)
    _rule("reset", rf"^\s*(reset|zur{_UE}cksetzen|delete all|alle l{_OE}schen|"
          rf"alles l{_OE}schen|erase)\b", "resetting or erasing in Settings is denied",
          SETTINGS),
    _rule("developer-options", r"\bdeveloper options\b|^\s*build[ -]?(number|nummer)\s*$|"
          r"entwickleroptionen", "developer options are denied"),
    _rule("uninstall", r"\buninstall|\bdeinstall", "uninstalling apps is denied"),
    _rule("clear-data", r"\bclear (storage|data|all data)\b|\bremove account\b|"
          rf"\bdelete account\b|\bspeicher(platz)? (leeren|l{_OE}schen)\b|"
          rf"\bdaten l{_OE}schen\b|\bkonto (entfernen|l{_OE}schen)\b",
          "clearing app data or removing accounts is denied"),
    _rule("payment", r"\b(buy|pay|purchase|checkout|check out|subscribe|paypal|klarna)\b|"
          r"\bplace (your |my |the )?order\b|\b(submit|confirm|complete) (your |my )?"
          r"(order|purchase|payment)\b|\border now\b|\bproceed to (checkout|payment)\b|"
          r"\bcontinue to payment\b|\bsend money\b",
          "payments and purchases are denied"),
    _rule("payment", r"\b(jetzt )?(kaufen|bezahlen|bestellen)\b|\b(zahlungs|kosten)pflichtig\b|"
          rf"\bzur kasse\b|\bkauf (abschlie{_SZ}en|best{_AE}tigen)\b|\babonnieren\b|"
          rf"\bzahlung (best{_AE}tigen|abschlie{_SZ}en)\b|\bjetzt zahlen\b|\bzahlen mit\b|"
          r"\bgeld senden\b|\bkaufabwicklung\b",
          "payments and purchases are denied"),
    _rule("payment", r"[$€£¥₹]\s?\d|\d\s?[$€£¥₹]", "paid items in the store are denied",
          (STORE,)),
    _rule("phone-call", r"\b(call|dial|video call|voice call|anrufen|anruf|videoanruf|"
          r"sprachanruf|w(ä|ae)hlen)\b", "phone calls are denied", (*DIALER, *CONTACTS, *SMS)),
    # a phone number shown as a label in Contacts or the dialer calls it when tapped
    _rule("phone-call", r"^\s*\+?\d[\d ().-]{5,}\d\s*$", "tapping a phone number places a "
          "call, which is denied", (*DIALER, *CONTACTS, *SMS)),
    _rule("phone-call", r"\btel:|\bcall (us|now|me|today|toll[- ]free)\b|\b(click|tap) to call\b|"
          r"\bjetzt anrufen\b|\brufen sie (uns )?an\b", "phone calls are denied"),
    _rule("phone-call", r"^\s*(call|anrufen)\b", "calling from a web page is denied", BROWSERS),
    _rule("sms", r"\bsend\b|\bsms\b|\bmms\b|\bsenden\b", "sending SMS/MMS is denied",
          (*SMS, *CONTACTS)),
)
DEFAULT_DRAGS = (
    _rule("slide-to-confirm", r"\b(slide|swipe|drag) to (pay|buy|confirm|order|call|answer|"
          r"reset|erase|power off|send)\b|\b(wischen|schieben|ziehen),? (um|zum) "
          r"(zu )?(bezahlen|best(ä|ae)tigen|anrufen|ausschalten)",
          "slide-to-confirm controls are denied"),
)
DEFAULT_TYPED = (
    _rule("ussd-code", r"^\s*[*#][*#0-9]*#", "typing USSD / secret codes is denied"),
    _rule("phone-link", r"^\s*(tel|sms|smsto|mms|mmsto|voicemail):",
          "typing phone / SMS links is denied"),
)
DEFAULT_FIELDS = (
    _rule("card-field", r"\b(card ?number|credit ?card|debit ?card|cc[ -]?(num|number)|cvv|cvc|"
          r"security code|card verification)\b|kartennummer|kreditkarte|pr(ü|ue)fnummer|"
          r"sicherheitscode", "typing into a payment card field is denied"),
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
    """Rules on the labels of what a tap/long press/short swipe touches, and of what
    Enter could submit."""
    denied_drags: tuple[TextRule, ...] = DEFAULT_DRAGS
    """Rules on the labels under the start of a long swipe (slide-to-confirm controls)."""
    denied_typed: tuple[TextRule, ...] = DEFAULT_TYPED
    """Rules on typed text: the chunk typed and the field's text after it."""
    denied_fields: tuple[TextRule, ...] = DEFAULT_FIELDS
    """Rules on the labels of the field typed into (payment card fields)."""
    block_card_numbers: bool = True
    """Refuse typing anything that looks like a payment card number (Luhn-valid), also
    when it is completed one keystroke or one field at a time."""
    refuse_unknown_screen: bool = True
    """With no foreground package or an empty UI tree, only escapes and open_app run."""
    tap_slop_px: int = Field(default=64, ge=0, le=10_000)
    """A swipe whose finger moves at most this far (pixels, on each axis) is a tap or a
    long press to Android and is judged as one (Android's own slop is 8 dp, ~24 px)."""
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


def element_under(elements: Sequence[UIElement], x: float, y: float,
                  screen_size: tuple[int, int] | None = None) -> list[UIElement]:
    """What a touch at pixel (x, y) is judged by, target first.

    With a clickable element under the point, the innermost one (the one Android gives
    the touch to) and everything inside it; every other element whose bounds contain
    the point except the plain (not clickable) containers around the target — labels
    drawn over it, a sibling row's text; with ``screen_size`` and a target smaller
    than 40 % of the screen, anything drawn within its bounds; and the plain labels
    beside it on its row (same parent, spanning its centre line). With nothing
    clickable there, every element that contains the point."""
    hits = [e for e in elements if e.bounds.contains(x, y)]
    if not hits:
        return []
    clickable = [e for e in hits if e.clickable or e.long_clickable]
    if not clickable:
        return hits
    target = max(clickable, key=lambda e: (e.depth, e.index))  # innermost, then topmost
    by_index = {e.index: e for e in elements}
    ancestors: set[int] = set()
    up = target.parent
    while up is not None and up not in ancestors:
        ancestors.add(up)
        up = by_index[up].parent if up in by_index else None
    inside = {target.index}
    out = [target]
    for e in elements:  # document order: a child comes after its parent
        if e.parent in inside:
            inside.add(e.index)
            out.append(e)
    seen = set(inside)

    def add(e: UIElement) -> None:
        if e.index not in seen:
            seen.add(e.index)
            out.append(e)

    for e in hits:
        if e.index not in ancestors or e.clickable:
            add(e)
    b = target.bounds
    if screen_size is not None and b.width * b.height < 0.4 * screen_size[0] * screen_size[1]:
        for e in elements:
            eb = e.bounds
            if (e.index not in ancestors and eb.width > 0 and eb.height > 0
                    and b.left <= eb.left and eb.right <= b.right
                    and b.top <= eb.top and eb.bottom <= b.bottom):
                add(e)
    cy = (b.top + b.bottom) / 2
    for e in elements:
        if (e.parent == target.parent and not e.clickable and e.bounds.width > 0
                and e.bounds.top <= cy < e.bounds.bottom):
            add(e)
    return out


_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff]")


def normalise(text: str) -> str:
    """A label as the rules read it: NFKC (no-break and odd spaces become spaces, full
    width letters plain), zero-width characters and soft hyphens gone, one space."""
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    return " ".join(text.replace("\u2010", "-").replace("\u2011", "-").split())


def _rid_words(resource_id: str) -> str:
    """``org.shop:id/btnPlaceOrder`` → ``btn Place Order``; ``buy_now`` → ``buy now``."""
    name = resource_id.rpartition("/")[2]
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return " ".join(re.split(r"[_\-.]+", name)).strip()


def labels_of(e: UIElement) -> list[str]:
    """What names an element: text (not a field's content), content-desc, hint and the
    resource-id's name, normalised."""
    raw = [e.content_desc, e.extra.get("hint", ""), e.extra.get("tooltip-text", ""),
           _rid_words(e.resource_id)]
    if not e.is_text_field:
        raw.insert(0, e.text)
    out: list[str] = []
    for r in raw:
        n = normalise(r)
        if n and n not in out:
            out.append(n)
    return out


def _field_text(e: UIElement) -> str:
    """A field's current text; an empty field shows its hint, which is not its text."""
    hint = e.extra.get("hint", "")
    return "" if hint and e.text == hint else e.text


Point = tuple[float, float]


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

    def touch_points(self, action: Any, screen_size: tuple[int, int]) -> list[Point]:
        """Pixels where ``action`` presses something: a tap's, a long press's, a
        type-with-tap's point; both ends of a swipe within the tap slop; none else."""
        w, h = screen_size
        if isinstance(action, Tap | LongPress):
            return [(action.x * w, action.y * h)]
        if isinstance(action, TypeText) and action.x is not None and action.y is not None:
            return [(action.x * w, action.y * h)]
        if isinstance(action, Swipe) and self.is_short_swipe(action, screen_size):
            return [(action.x1 * w, action.y1 * h), (action.x2 * w, action.y2 * h)]
        return []

    def is_short_swipe(self, action: Swipe, screen_size: tuple[int, int]) -> bool:
        """Whether the finger moves so little that Android sees a tap or a long press."""
        w, h = screen_size
        slop = self.config.tap_slop_px
        return abs(action.x2 - action.x1) * w <= slop and abs(action.y2 - action.y1) * h <= slop

    @staticmethod
    def screen_known(ctx: GuardContext) -> bool:
        return bool(ctx.package) and len(ctx.elements) > 0

    def check(self, action: Any, ctx: GuardContext) -> Verdict:
        """Allowed, or refused with the first rule that matched."""
        what = describe_action(action)
        if isinstance(action, InvalidAction):
            return Verdict(True, action=what)  # nothing would run
        if isinstance(action, Swipe) and self.is_short_swipe(action, ctx.screen_size):
            kind = "long press" if action.duration_ms >= 500 else "tap"
            what = f"{what} (a {kind})"
        if isinstance(action, TypeText) and self.config.block_card_numbers:
            v = self._check_card(action, ctx)
            if v is not None:
                return v
        enter = (isinstance(action, Key) and action.key == "enter") or (
            isinstance(action, TypeText) and ("\n" in action.text or "\r" in action.text))
        if not isinstance(action, ESCAPES) or enter:
            if self.package_denied(ctx.package):
                return Verdict(False, "package", f"{ctx.package} is a denied app; only back, "
                               "home, wait and ending the episode are allowed in it",
                               what, str(ctx.package))
            comp = self._activity_rule(ctx.package, ctx.activity)
            if comp is not None:
                return Verdict(False, "activity", f"the screen {comp} is denied; only back, "
                               "home, wait and ending the episode are allowed on it", what)
            if (self.config.refuse_unknown_screen and not isinstance(action, OpenApp)
                    and not self.screen_known(ctx)):
                missing = "foreground app" if not ctx.package else "UI tree"
                return Verdict(False, "unknown-screen", f"the {missing} is unknown, so what "
                               "this would touch cannot be judged; only back, home, wait, "
                               "open_app and ending the episode are allowed", what)
        if isinstance(action, OpenApp):
            v = self._check_open(action, what)
            if v is not None:
                return v
        for x, y in self.touch_points(action, ctx.screen_size):
            v = self._check_touch(x, y, ctx, what)
            if v is not None:
                return v
        if isinstance(action, Swipe) and not self.is_short_swipe(action, ctx.screen_size):
            v = self._check_drag(action, ctx, what)
            if v is not None:
                return v
        if isinstance(action, TypeText):
            v = self._check_typed(action, ctx, what)
            if v is not None:
                return v
        if enter:
            v = self._check_enter(action, ctx, what)
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

    def _judge(self, elements: Sequence[UIElement], rules: Sequence[TextRule],
               ctx: GuardContext) -> tuple[TextRule, str] | None:
        """The first rule matching a label of ``elements``, with that label."""
        for e in elements:
            pkgs = {ctx.package, e.package or None}
            for label in labels_of(e):
                for rule in rules:
                    if any(rule.matches(label, p) for p in pkgs):
                        return rule, label
        return None

    def _check_touch(self, x: float, y: float, ctx: GuardContext,
                     what: str) -> Verdict | None:
        touched = element_under(ctx.elements, x, y, ctx.screen_size)
        if not touched:
            if not ctx.elements or not self.config.refuse_unknown_screen:
                return None
            return Verdict(False, "unknown-target", f"nothing in the UI tree is under "
                           f"({x:.0f}, {y:.0f}), so what it would touch cannot be judged", what)
        hit = self._judge(touched, self.config.denied_texts, ctx)
        if hit is not None:
            rule, label = hit
            return Verdict(False, f"text:{rule.name}", rule.reason, what, f'"{label}"')
        return None

    def _check_drag(self, action: Swipe, ctx: GuardContext, what: str) -> Verdict | None:
        w, h = ctx.screen_size
        touched = element_under(ctx.elements, action.x1 * w, action.y1 * h, ctx.screen_size)
        hit = self._judge(touched, self.config.denied_drags, ctx)
        if hit is not None:
            rule, label = hit
            return Verdict(False, f"drag:{rule.name}", rule.reason, what, f'"{label}"')
        return None

    def target_field(self, action: TypeText | Key, ctx: GuardContext) -> UIElement | None:
        """The field text goes into: the field under a type-with-tap's point, else the
        focused field (else the focused element)."""
        w, h = ctx.screen_size
        if isinstance(action, TypeText) and action.x is not None and action.y is not None:
            px, py = action.x * w, action.y * h
            fields = [e for e in ctx.elements if e.is_text_field and e.bounds.contains(px, py)]
            if fields:
                return max(fields, key=lambda e: (e.depth, e.index))
        focused = [e for e in ctx.elements if e.focused]
        for e in reversed(focused):
            if e.is_text_field:
                return e
        return focused[-1] if focused else None

    def _resulting(self, action: TypeText, ctx: GuardContext) -> tuple[UIElement | None, str]:
        field = self.target_field(action, ctx)
        current = _field_text(field) if field is not None and field.is_text_field else ""
        return field, current + action.text

    def _check_card(self, action: TypeText, ctx: GuardContext) -> Verdict | None:
        field, result = self._resulting(action, ctx)
        card = card_number_in(action.text) or card_number_in(result)
        if card is None and field is not None:
            card = self._card_across_fields(field, result, ctx)
        if card is None:
            return None
        # the number itself never reaches a message or a file
        return Verdict(False, "card-number", f"typing a payment card number ({card}) is denied",
                       f"type_text <{len(action.text)} characters completing a card number>")

    @staticmethod
    def _card_across_fields(field: UIElement, result: str, ctx: GuardContext) -> str | None:
        """A card number split over consecutive digit-only fields (4 + 4 + 4 + 4)."""
        run: list[str] = []
        found = None
        for e in [*(e for e in ctx.elements if e.is_text_field), None]:
            text = None if e is None else (result if e.index == field.index else _field_text(e))
            if text is not None and re.fullmatch(r"[\d -]{1,8}", text.strip() or "x"):
                run.append(re.sub(r"\D", "", text))
                continue
            if run and found is None:
                found = card_number_in("".join(run))
            run = []
        return found

    def _check_typed(self, action: TypeText, ctx: GuardContext, what: str) -> Verdict | None:
        field, result = self._resulting(action, ctx)
        for text in dict.fromkeys((action.text, result)):
            for rule in self.config.denied_typed:
                if rule.matches(text, ctx.package):
                    return Verdict(False, f"typed:{rule.name}", rule.reason, what)
        if field is not None:
            # the field's names, the labels beside it, and its text when that holds no
            # digit (an empty field shows its hint as its text)
            near = [field, *(e for e in ctx.elements
                             if e.parent == field.parent and not e.is_text_field)]
            names = [label for e in near for label in labels_of(e)]
            if not re.search(r"\d", field.text):
                names.append(normalise(field.text))
            for label in names:
                for rule in self.config.denied_fields:
                    if rule.matches(label, ctx.package):
                        return Verdict(False, f"field:{rule.name}", rule.reason, what,
                                       f'"{label}"')
        return None

    def _check_enter(self, action: Key | TypeText, ctx: GuardContext,
                     what: str) -> Verdict | None:
        field = self.target_field(action, ctx)
        if field is not None and not field.is_text_field:  # a focused button: Enter clicks it
            x, y = field.bounds.center
            return self._check_touch(x, y, ctx, what)
        if field is not None:
            text = _field_text(field) + (action.text if isinstance(action, TypeText) else "")
            for rule in self.config.denied_typed:
                if rule.matches(text.strip(), ctx.package):
                    return Verdict(False, f"typed:{rule.name}", f"Enter would submit it: "
                                   f"{rule.reason}", what)
        # in a field, or with nothing focused, Enter may submit the form through its
        # default button: any dangerous clickable on the screen refuses it
        buttons = [e for e in ctx.elements if e.clickable and not e.is_text_field]
        hit = self._judge(buttons, self.config.denied_texts, ctx)
        if hit is not None:
            rule, label = hit
            return Verdict(False, f"enter:{rule.name}", f"Enter could submit this screen "
                           f"through {label!r}: {rule.reason}", what, f'"{label}"')
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
