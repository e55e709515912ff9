"""UITreePolicy: a small torch model that scores candidate actions on a UI tree.

What the demo trains on a CPU from scratch, in minutes. Each observation becomes a
short list of **candidate actions**: tap each clickable element (labelled with its own
text, content-desc and its children's texts, since Android rows keep the text in child
TextViews), open one of the sim's apps, scroll up/down, back, home, type a quoted
phrase of the instruction (if it has one, while a text field has the focus) and
complete. The model embeds the instruction and every candidate with one shared hashed
bag of words, word bigrams and character trigrams (a fixed hashing trick: no vocabulary
to download, the same word always lands in the same bucket for instruction and screen,
so matching is easy to learn), scores each candidate against the instruction and an
attention summary of the screen, and samples from the softmax over the valid
candidates. One trainable scalar, ``overlap_prior``, adds a bonus to candidates that
name the instruction's words.

    decide(observations)  → Decision(action, log_prob, obs=JSON of the candidates, choice)
    evaluate(steps)       → log π(choice | obs), entropy, features — from that JSON alone

**Featurisation once per step.** The JSON becomes compact arrays (:class:`StepArrays`:
uint16 token ids, int32 per-candidate lengths, float32 dense rows, ~3 KiB a step) the first
time a step is evaluated (or passed to :meth:`UITreePolicy.prepare`) and stays in
``StepRecord.cache``; a batch is collated from them with concatenations and block
copies. ``decide`` goes through the same arrays and collation.

``decide`` featurises through the same JSON encoding ``evaluate`` reads, so the
behaviour log-prob recorded on the farm equals the learner's recomputation for the same
weights (up to float rounding). The scorer's last layer starts at zero: with
``overlap_prior=0`` a fresh policy is uniform over its candidates; by default it starts
near-random, with only the reading prior above.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from distrl_sdk.actions import Answer, Complete, Key, OpenApp, Scroll, Tap, TypeText
from distrl_sdk.policy import Decision, Observation
from distrl_sdk.uitree import UIElement

if TYPE_CHECKING:
    import torch

    from distrl_sdk.learn.api import PolicyOutput, StepRecord

__all__ = ["KINDS", "SIM_APPS", "StepArrays", "UITreeConfig", "UITreePolicy",
           "candidate_action", "collate", "encode_observation", "instruction_spans",
           "match_action", "step_arrays"]

#: Candidate kinds, in the order of the one-hot the model reads.
KINDS: tuple[str, ...] = ("tap", "open_app", "scroll_down", "scroll_up", "back", "home",
                          "type", "complete", "enter", "answer")
#: What earlier actions were, for the history one-hot.
HIST_KINDS: tuple[str, ...] = ("none", "tap", "open_app", "scroll", "key", "type", "complete",
                               "other")
#: The launcher apps of the sim world (farm/sim/world/apps): open_app candidates.
SIM_APPS: tuple[str, ...] = ("Settings", "Chrome", "Clock", "Contacts", "Shop")
# Words too common in instructions to say which element is meant (overlap feature only).
_STOP = frozenset(("a", "an", "the", "to", "on", "off", "in", "of", "for", "and", "with",
                   "turn", "open", "set", "switch", "phone", "this", "is", "what", "which",
                   "how", "app", "my", "your", "it", "its"))
_WORD = re.compile(r"[a-z0-9]+")
_WORD_CASED = re.compile(r"[A-Za-z0-9]+")
_QUOTED = re.compile(r"\"([^\"]{1,60})\"")
_HISTORY = 2  # earlier actions the model sees
# flag bits of a candidate (element state; descendants' switches count for a row)
_F_CLICK, _F_CHECKABLE, _F_CHECKED, _F_SCROLL, _F_SELECTED = 1, 2, 4, 8, 16
_F_LAST_TAPPED = 32  # the previous action tapped inside this element (don't toggle twice)
_F_FOCUSED = 64  # a focused text field: typing goes here
_F_ON_SCREEN = 128  # a text candidate (type, answer) already shows on screen: typed before
_FLAG_BITS = 8
# kind, flags, bounds, overlap (fraction, any), where a typed span (or the words a tap's
# element names) sits in the instruction (first word ÷ the instruction's words, words ÷ 4)
_DENSE = len(KINDS) + _FLAG_BITS + 4 + 2 + 2
_GLOBAL = 1 + _HISTORY * len(HIST_KINDS) + 1  # step, history, instruction words on screen
# 3: enter, answer and instruction-span type candidates; focused flag. 4: a candidate's
# context tokens (its neighbours in the instruction or on screen, its shape, the focused
# field), the on-screen flag, span positions, instruction words on screen. 5: a span's
# neighbours that are not glue words by their shape; no quoted-phrase type candidate
# without a focused text field
_ENC_VERSION = 5
# Words that never start or end a typed span of the instruction (its verbs and glue: a
# person types "Liam Rossi", not "named Liam").
_SPAN_STOP = _STOP | frozenset((
    "add", "save", "search", "find", "out", "go", "use", "put", "order", "delete", "show",
    "new", "contact", "contacts", "named", "number", "from", "as", "at", "by", "was", "did",
    "does", "do", "cost", "much", "year", "label", "look", "up", "cart", "category", "into",
    "that", "every", "repeats", "alarm", "google", "chrome", "shop", "settings", "am", "pm",
    "two", "cheapest", "product", "check", "about", "article", "wikipedia", "be", "are"))
_SPAN_TOKEN = re.compile(r"[^\s:\"]+")
_MONEY = re.compile(r"[$€£]\s?(\d[\d,]*(?:\.\d+)?)")
_SPAN_TRIM = ".,;!?()'\u2019"
_PRICE_ASK = re.compile(r"\b(cheap|cheapest|cheaper|least expensive|lowest[- ]price[ds]?|"
                        r"most expensive|priciest|pricier|highest[- ]price[ds]?)\b", re.I)
_QUESTION = re.compile(r"\?|\bfind out\b|^(what|which|how|who|when|where)\b", re.I)


_CONFIG_MAX: dict[str, int] = {"buckets": 1 << 20, "embed_dim": 1024, "hidden": 4096,
                               "max_elements": 1024, "max_spans": 256, "max_answers": 256}
_MAX_EMBEDDING_WEIGHTS = 1 << 24  # 64 MiB of float32; the default uses 1/32 of it


#: encoding switches added after checkpoints were first written, and what a checkpoint
#: without them was trained with
_BEFORE_SWITCHES: dict[str, Any] = {"money_rank": False, "money_rank_asked": False,
                                    "last_tap_same_element": False, "named_words": False}


@dataclass(frozen=True)
class UITreeConfig:
    """The architecture and action space (JSON-able: it travels in checkpoints)."""

    buckets: int = 16384  # hashing-trick buckets of the shared token embedding
    embed_dim: int = 32  # token embedding width
    hidden: int = 64  # width of instruction/candidate encodings (features = 2 × hidden)
    max_elements: int = 64  # candidates per screen at most (fixed actions included)
    apps: tuple[str, ...] = SIM_APPS  # open_app candidates
    type_quoted: bool = True  # offer typing a "quoted phrase" of the instruction (when focused)
    # while a text field is focused: also offer ENTER and typing spans of the instruction
    # (1–4 words, digits and ``9:13``'s parts included) — names, numbers, queries
    type_spans: bool = True
    max_spans: int = 24  # span candidates per screen at most (quoted phrases come first)
    # on a question ("…?", "find out …"): offer answering with each text on screen
    answers: bool = True
    max_answers: int = 12
    # the overlap input feature (fraction of the instruction's words a candidate names,
    # and whether it names any; how much of the instruction the screen shows; a typed
    # span already on screen): False zeroes it — with ``overlap_prior = 0`` that is a
    # policy with no hand-made reading help at all ("from scratch")
    overlap_feature: bool = True
    # context of text candidates, pooled apart from their own words (which, for held-out
    # names and numbers, are words the model never saw): for a typed span its neighbours
    # in the instruction, its shape ("Aa", "9") and the focused field's label; for an
    # answer the texts beside it on screen and its shape. False leaves the context empty
    # (the ablation; the network is the same size)
    candidate_context: bool = True
    # initial logit bonus per unit of instruction-word overlap (a trainable scalar). 0 = a
    # uniform start; > 0 = a reading prior, like a pretrained model's: a candidate naming
    # all the instruction's words is e^prior times likelier than one naming none. It does
    # not know which app to open or when to stop: easy tasks start at a few % success
    # (2.0; 0 gives ~0 %), and on realistic phone latency only the prior lets the
    # demo learn visibly within minutes.
    overlap_prior: float = 2.0
    # word dropout: the share of hashed tokens left out of every bag while the policy is
    # set to training (``distrl sft``; an RL trainer's actor pass with ``actor_dropout``),
    # so the network cannot lean on one instance's words (a city, a product) that a
    # held-out instance replaces with words it never saw. Acting, ratios and targets
    # always read every token
    token_dropout: float = 0.25
    # soft cap on the logits, cap·tanh(l/cap) (0 = none). Without it the RL losses are
    # unbounded in the logits (−A·log π of an unwanted action, the anchor's −log π) and
    # Adam's normalised steps keep growing them: a 30-minute run reached |logit| ≈ 10⁶,
    # entropy 0.01 nats whatever β, and held-out success fell from 0.57 to 0.37. With a
    # cap, log π ≥ −(2·cap + ln N) and a saturated logit stops being pushed
    logit_cap: float = 10.0
    # mark the candidates (taps, answers) whose text shows the lowest or highest amount
    # of money among those of their kind on screen (context tokens ``mr:lo``/``mr:hi``,
    # ``mr:mid`` between): "the cheapest" then has something to read that does not name
    # the products, which a held-out category replaces. Off: the encoding of v5 exactly
    money_rank: bool = True
    # with ``money_rank``: mark the amounts only when the instruction asks about price
    # ("cheapest", "most expensive" …). Ungated, ``mr:lo`` sits on every result list and
    # the cheapest row out-pulled a held-out product the instruction names (Off: as the
    # v6 benchmark rows ran)
    money_rank_asked: bool = True
    # the "previous action tapped here" flag marks a candidate only where the previous
    # screen had the same element (text, id, class) under the tap: not a button the next
    # screen happens to draw at that point — a product row's tap falling on the product
    # page's "Add to cart" read as "already added". Needs ``Observation.previous_elements``
    # (without it the flag stays positional). Off: the encoding of v5 exactly
    last_tap_same_element: bool = True
    # a candidate's own words that the instruction names are read as one word ("@"),
    # not as themselves: "Eiffel Tower - Wikipedia" tapped for "the article about the
    # Eiffel Tower" teaches "tap what the instruction names", not "tap Eiffel Tower" —
    # which a held-out "about Mars" then did. Part of the overlap input's help (off
    # with it); typed spans and answers are read without their words anyway
    named_words: bool = False
    seed: int = 0  # initial weights and the sampling RNG

    @classmethod
    def from_saved(cls, d: Mapping[str, Any]) -> UITreeConfig:
        """The config of a saved checkpoint: a switch it predates is off, as the policy
        was trained (a checkpoint always writes every field it knows)."""
        return cls.from_dict({**_BEFORE_SWITCHES, **d})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UITreeConfig:
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown uitree config keys: {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(sorted(known))})")
        kw = dict(d)
        if "apps" in kw:
            kw["apps"] = tuple(str(a) for a in kw["apps"])
        cfg = cls(**kw)
        if cfg.buckets < 16 or cfg.embed_dim < 1 or cfg.hidden < 1:
            raise ValueError("uitree buckets ≥ 16, embed_dim ≥ 1 and hidden ≥ 1 are required")
        if cfg.max_elements < len(KINDS):
            raise ValueError(f"uitree max_elements must be ≥ {len(KINDS)}")
        if cfg.max_spans < 0 or cfg.max_answers < 0:
            raise ValueError("uitree max_spans and max_answers must be ≥ 0")
        if not 0.0 <= cfg.token_dropout < 1.0:
            raise ValueError("uitree token_dropout must be in [0, 1)")
        if not (cfg.logit_cap >= 0.0 and math.isfinite(cfg.logit_cap)):
            raise ValueError("uitree logit_cap must be a finite number ≥ 0 (0 = no cap)")
        return cfg

    def check_bounds(self) -> None:
        """Raise ``ValueError`` when a size is beyond what a farm builds from a policy
        pointer (``buckets=8e6`` once cost a farm ~1 GB and a 13 s stall). Each bound is
        far above any sensible UI-tree model (the default has 0.5 M embedding weights)."""
        for name, most in _CONFIG_MAX.items():
            if getattr(self, name) > most:
                raise ValueError(f"uitree {name} must be ≤ {most:,} "
                                 f"(got {getattr(self, name):,})")
        if self.buckets * self.embed_dim > _MAX_EMBEDDING_WEIGHTS:
            raise ValueError(f"uitree buckets × embed_dim must be ≤ {_MAX_EMBEDDING_WEIGHTS:,} "
                             f"(got {self.buckets * self.embed_dim:,})")

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["apps"] = list(self.apps)
        return d


# -- text → hashed ids ----------------------------------------------------------------------
def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@functools.lru_cache(maxsize=65536)
def _hashed(text: str, prefix: str, buckets: int,
            named: frozenset[str] = frozenset()) -> tuple[int, ...]:
    """Bucket ids of words, word bigrams and char trigrams (crc32: stable across runs,
    unlike ``hash()``); a word in ``named`` is read as the one word "@"."""
    words = [w if w not in named else "@" for w in _words(text)]
    toks = [f"{prefix}w:{w}" for w in words]
    toks += [f"{prefix}b:{a}_{b}" for a, b in itertools.pairwise(words)]
    for w in words:
        p = f"<{w}>"
        toks += [f"{prefix}c:{p[i:i + 3]}" for i in range(len(p) - 2)]
    return tuple(zlib.crc32(t.encode()) % buckets for t in toks)


@functools.lru_cache(maxsize=4096)
def _content(text: str) -> frozenset[str]:
    return frozenset(w for w in _words(text) if w not in _STOP)


def _rid_text(rid: str) -> str:
    return rid.rpartition("/")[2].replace("_", " ")


# -- observation → candidates (the JSON the learner re-reads) ------------------------------
def _history_kind(action: Any) -> str:
    kind = getattr(action, "kind", None)
    if kind in ("tap", "long_press"):
        return "tap"
    if kind in ("scroll", "swipe"):
        return "scroll"
    if kind == "type_text":
        return "type"
    if kind in ("open_app", "key", "complete"):
        return str(kind)
    return "other"


def _element_candidates(elements: Sequence[UIElement], size: tuple[int, int], cap: int,
                        last_tap: tuple[float, float] | None = None,
                        tapped: set[tuple[str, str, str]] | None = None) -> list[list[Any]]:
    """Clickable elements (and checkables with no clickable ancestor) as candidates.
    ``last_tap`` flags the candidates under the previous tap, and only those whose
    (label, id, class) is in ``tapped`` when that is given."""
    w, h = max(1, size[0]), max(1, size[1])
    by_index = {e.index: e for e in elements}
    children: dict[int, list[UIElement]] = {}
    for e in elements:
        if e.parent is not None:
            children.setdefault(e.parent, []).append(e)

    def clickable_ancestor(e: UIElement) -> bool:
        p = e.parent
        while p is not None:
            anc = by_index.get(p)
            if anc is None:
                return False
            if anc.clickable:
                return True
            p = anc.parent
        return False

    out: list[list[Any]] = []
    for e in elements:
        if len(out) >= cap:
            break
        if not (e.clickable or (e.checkable and not clickable_ancestor(e))):
            continue
        b = e.bounds
        if b.width <= 0 or b.height <= 0 or b.right <= 0 or b.bottom <= 0:
            continue
        if b.left >= w or b.top >= h or e.resource_id.startswith("com.android.systemui:"):
            continue  # the nav bar: back/home are actions of their own
        texts = [t for t in (e.text, e.content_desc) if t]
        flags = ((_F_CLICK if e.clickable else 0) | (_F_CHECKABLE if e.checkable else 0)
                 | (_F_CHECKED if e.checked else 0) | (_F_SCROLL if e.scrollable else 0)
                 | (_F_SELECTED if e.selected else 0) | (_F_FOCUSED if e.focused else 0))
        under_tap = last_tap is not None and b.contains(last_tap[0] * w, last_tap[1] * h)
        stack = list(children.get(e.index, ()))
        seen = 0
        while stack and seen < 12:  # a row's label lives in its children
            c = stack.pop(0)
            seen += 1
            texts += [t for t in (c.text, c.content_desc) if t]
            if c.checkable:
                flags |= _F_CHECKABLE | (_F_CHECKED if c.checked else 0)
            stack.extend(children.get(c.index, ()))
        label = " ".join(dict.fromkeys(texts))[:120]
        rid = e.resource_id.rpartition("/")[2][:40]
        cls = e.class_name.rpartition(".")[2][:24]
        if under_tap and (tapped is None or (label, rid, cls) in tapped):
            flags |= _F_LAST_TAPPED
        box = [round(min(max(v, 0.0), 1.0), 4)
               for v in (b.left / w, b.top / h, b.right / w, b.bottom / h)]
        out.append(["tap", label, rid, cls, flags, *box])
    return out


def _text_focused(elements: Sequence[UIElement]) -> bool:
    """A text field has the focus (what typing and ENTER act on)."""
    return any(e.focused and e.is_text_field for e in elements)


def _neighbour(token: str) -> str:
    """A span's neighbour as its context reads it: glue words as themselves ("for",
    "from", "named"), every other word by its shape ("Umbrella" → "~Aa", "8" → "~9").
    The other words are the task's values too (the "8" beside "42" in "8:42"): by name
    they would tie the context to the training instances' values."""
    low = token.lower()
    return low if low in _SPAN_STOP else f"~{_shape(token)}"


def _span_sites(instruction: str) -> list[tuple[str, list[str], list[str], float, float]]:
    """Each span a person might type (:func:`instruction_spans`) with where it sits: the
    two words before and after it (:func:`_neighbour`), its first word's position ÷ the
    instruction's words, and its words ÷ 4."""
    out: dict[str, tuple[str, list[str], list[str], float, float]] = {}
    n_all = max(1, len(_words(instruction)))
    for m in _QUOTED.finditer(instruction):
        before = _WORD_CASED.findall(instruction[:m.start()])
        after = _WORD_CASED.findall(instruction[m.end():])
        out.setdefault(m.group(1), (m.group(1), [_neighbour(w) for w in before[-2:]],
                                    [_neighbour(w) for w in after[:2]],
                                    len(before) / n_all,
                                    min(len(_words(m.group(1))), 4) / 4))
    body = _QUOTED.sub(" ", instruction)
    toks = [t.strip(_SPAN_TRIM) for t in _SPAN_TOKEN.findall(body)]
    toks = [t[:-2] if t.lower().endswith(("'s", "\u2019s")) else t for t in toks]
    near = [_neighbour(t) if t else "" for t in toks]
    ok = [bool(t) and t.lower() not in _SPAN_STOP for t in toks]
    for i in range(len(toks)):
        if not ok[i]:
            continue
        for j in range(i, min(i + 4, len(toks))):
            if not toks[j]:
                break
            if ok[j]:
                span = " ".join(toks[i:j + 1])
                out.setdefault(span, (span, [w for w in near[max(0, i - 2):i] if w],
                                      [w for w in near[j + 1:j + 3] if w], i / len(toks),
                                      (j - i + 1) / 4))
    return list(out.values())


def instruction_spans(instruction: str) -> list[str]:
    """What a person might type from the instruction: quoted phrases, then every run of
    1–4 words (``9:13`` split at the colon) that neither starts nor ends with glue."""
    return [site[0] for site in _span_sites(instruction)]


def _shape(text: str) -> str:
    """A word-shape token: digits → 9, capitals → A, other letters → a, repeats folded
    ("Hannah" → "Aa", "$90.00" → "$9.9", "Pick up kids" → "Aa_a_a"): what a held-out
    name or number has in common with the training ones."""
    out: list[str] = []
    for ch in text[:40]:
        c = "9" if ch.isdigit() else "A" if ch.isupper() else "a" if ch.isalpha() \
            else "_" if ch.isspace() else ch
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)


def _context(before: Sequence[str], after: Sequence[str], text: str,
             extra: Sequence[str] = ()) -> str:
    """A candidate's context tokens, space-separated: neighbours by side and distance
    (``p1:`` the nearest word before, ``n1:`` the nearest after …), its shape, extras."""
    toks = [f"p{k + 1}:{w}" for k, w in enumerate(reversed(before))]
    toks += [f"n{k + 1}:{w}" for k, w in enumerate(after)]
    shapes = dict.fromkeys(f"ws:{_shape(w)}" for w in text.split()[:12])
    return " ".join([*toks, f"sh:{_shape(text)}", *shapes, *extra])


def _text_elements(elements: Sequence[UIElement]) -> list[UIElement]:
    """Texts shown on screen, in document order (not the bars)."""
    return [e for e in elements
            if e.text and e.bounds.width > 0 and e.bounds.height > 0
            and not e.resource_id.startswith("com.android.systemui:")]


def _answer_candidates(elements: Sequence[UIElement], size: tuple[int, int], cap: int,
                       context: bool) -> list[list[Any]]:
    """Texts that could answer a question (not buttons, not fields), each with its bounds
    and, as context, the texts shown just before and after it (a row's label)."""
    w, h = max(1, size[0]), max(1, size[1])
    shown = _text_elements(elements)
    out: list[list[Any]] = []
    seen: set[str] = set()
    for k, e in enumerate(shown):
        if len(out) >= cap:
            break
        text = e.text[:240]  # whole sentences: the value may come late
        if e.clickable or e.is_text_field or text in seen:
            continue
        seen.add(text)
        b = e.bounds
        box = [round(min(max(v, 0.0), 1.0), 4)
               for v in (b.left / w, b.top / h, b.right / w, b.bottom / h)]
        ctx = _context(_words(shown[k - 1].text)[-3:] if k else [],
                       _words(shown[k + 1].text)[:3] if k + 1 < len(shown) else [],
                       text) if context else ""
        out.append(["answer", text, "", "", 0, *box, ctx])
    return out


def _rank_money(cands: list[list[Any]], kind: str) -> None:
    """Add ``mr:lo`` / ``mr:hi`` / ``mr:mid`` to the context of each ``kind`` candidate
    whose text shows an amount of money (its first), by where the amount stands among
    theirs — when they show at least two different amounts."""
    amounts: dict[int, float] = {}
    for j, cand in enumerate(cands):
        m = _MONEY.search(str(cand[1])) if cand[0] == kind else None
        if m:
            amounts[j] = float(m.group(1).replace(",", ""))
    if len(set(amounts.values())) < 2:
        return
    lo, hi = min(amounts.values()), max(amounts.values())
    for j, amount in amounts.items():
        token = "mr:lo" if amount == lo else "mr:hi" if amount == hi else "mr:mid"
        cand = cands[j]
        if len(cand) > 9:
            cand[9] = f"{cand[9]} {token}".strip()
        else:
            cand.append(token)


def _focused_field(elements: Sequence[UIElement]) -> list[str]:
    """Context tokens of the focused text field: its text (the hint while empty) and its
    id's words — what it asks for."""
    for e in elements:
        if e.focused and e.is_text_field:
            return ([f"f:{w}" for w in _words(e.text)[:4]]
                    + [f"fi:{w}" for w in _words(_rid_text(e.resource_id))[:4]])
    return []


def _shows(elements: Sequence[UIElement], text: str) -> bool:
    """``text`` is on screen: some element says exactly it, or a field holds it."""
    t = text.casefold()
    return any(e.text.casefold() == t or (e.is_text_field and t in e.text.casefold())
               for e in elements if e.text)


def _screen_overlap(instruction: str, elements: Sequence[UIElement]) -> float:
    """How much of the instruction's content words the screen shows (a done task often
    shows what it asked for)."""
    want = _content(instruction)
    if not want:
        return 0.0
    shown: set[str] = set()
    for e in _text_elements(elements):
        shown.update(_words(e.text))
    return round(len(want & shown) / len(want), 3)


def encode_observation(obs: Observation, config: UITreeConfig) -> dict[str, Any]:
    """The compact JSON of what the policy sees: instruction, step, history, how much of
    the instruction the screen shows (``so``), candidates.

    A candidate is ``[kind, text, resource-id name, class, flags, l, t, r, b]`` with
    bounds normalised to the screen (zeros for actions without an element); flags are
    bits: clickable, checkable, checked (a row's switch counts), scrollable, selected,
    "the previous action tapped here", focused (a text field) and "already on screen" (a
    typed span). Text candidates (type, answer) add ``ctx`` (context tokens, see
    ``UITreeConfig.candidate_context``), and typed spans their position in the
    instruction and length: ``[…, ctx, position, words ÷ 4]``. With
    ``UITreeConfig.money_rank`` a tap candidate showing an amount of money adds a ctx
    of its own (its rank among the screen's amounts); ``last_tap_same_element`` narrows
    the "tapped here" flag to the element the previous tap hit."""
    fixed: list[list[Any]] = [["open_app", app, "", "", 0, 0, 0, 0, 0] for app in config.apps]
    fixed += [[k, "", "", "", 0, 0, 0, 0, 0] for k in ("scroll_down", "scroll_up", "back",
                                                        "home")]
    ctx_on = config.candidate_context
    sites = _span_sites(obs.instruction)
    quoted = list(dict.fromkeys(_QUOTED.findall(obs.instruction)))[:2]
    focused = _text_focused(obs.elements)
    field = _focused_field(obs.elements) if ctx_on else []
    # text goes nowhere without a focused field (Android and the sims drop it): no type
    # candidate then, where one was a no-op the policy could learn to like
    typed = ([site for site in sites if site[0] in quoted]
             if config.type_quoted and focused else [])
    if config.type_spans and focused:
        fixed.append(["enter", "", "", "", 0, 0, 0, 0, 0])
        typed += [site for site in sites
                  if not (config.type_quoted and site[0] in quoted)][:config.max_spans]
    for text, before, after, pos, words in typed:
        flags = _F_ON_SCREEN if ctx_on and _shows(obs.elements, text) else 0
        fixed.append(["type", text, "", "", flags, 0, 0, 0, 0,
                      _context(before, after, text, field) if ctx_on else "",
                      round(pos, 3) if ctx_on else 0, words if ctx_on else 0])
    fixed.append(["complete", "", "", "", 0, 0, 0, 0, 0])
    if config.answers and _QUESTION.search(obs.instruction):
        fixed += _answer_candidates(obs.elements, obs.screen_size, config.max_answers, ctx_on)
    last = obs.history[-1] if obs.history else None
    last_tap = (float(last.x), float(last.y)) if isinstance(last, Tap) else None
    tapped = None
    if last_tap is not None and config.last_tap_same_element \
            and obs.previous_elements is not None:
        tapped = {(c[1], c[2], c[3]) for c in _element_candidates(
            obs.previous_elements, obs.screen_size, config.max_elements, last_tap)
            if c[4] & _F_LAST_TAPPED}
    taps = _element_candidates(obs.elements, obs.screen_size,
                               max(0, config.max_elements - len(fixed)), last_tap, tapped)
    if config.money_rank and not (config.money_rank_asked
                                  and not _PRICE_ASK.search(obs.instruction)):
        _rank_money(taps, "tap")
        if ctx_on:  # an answer with a context is read without its own words: not without
            _rank_money(fixed, "answer")
    hist = [_history_kind(a) for a in obs.history[-_HISTORY:]]
    return {"v": _ENC_VERSION, "i": obs.instruction, "s": int(obs.step), "h": hist,
            "so": _screen_overlap(obs.instruction, obs.elements) if ctx_on else 0.0,
            "c": taps + fixed}


def candidate_action(cand: Sequence[Any]) -> Any:
    """The SDK action a candidate stands for (taps at the element's centre)."""
    kind = cand[0]
    if kind == "tap":
        left, top, right, bottom = (float(v) for v in cand[5:9])
        return Tap(min(max((left + right) / 2, 0.0), 1.0),
                   min(max((top + bottom) / 2, 0.0), 1.0))
    if kind == "open_app":
        return OpenApp(str(cand[1]))
    if kind in ("scroll_down", "scroll_up"):
        return Scroll("down" if kind == "scroll_down" else "up")
    if kind in ("back", "home"):
        return Key("back" if kind == "back" else "home")
    if kind == "type":
        return TypeText(str(cand[1]))
    if kind == "complete":
        return Complete()
    if kind == "enter":
        return Key("enter")
    if kind == "answer":
        return Answer(str(cand[1]))
    raise ValueError(f"unknown uitree candidate kind {kind!r}")


def match_action(encoded: Mapping[str, Any], action: Any) -> int | None:
    """The index of the candidate that stands for ``action`` (an oracle's, a person's), or
    None when the action space cannot express it. A tap goes to the smallest tappable
    element containing the point (tapping its centre does what tapping the point did on
    every sample task: ``tests/test_expressivity.py`` replays them); typed text and
    answers match exactly, else ignoring case; an answer also matches a shown text that
    contains it."""
    cands: list[Any] = list(encoded.get("c", ()))
    kind = getattr(action, "kind", None)

    def first(pred: Any) -> int | None:
        return next((i for i, c in enumerate(cands) if pred(c)), None)

    if isinstance(action, Tap):
        best: tuple[float, int] | None = None
        for i, c in enumerate(cands):
            if c[0] != "tap":
                continue
            left, top, right, bottom = (float(v) for v in c[5:9])
            if left <= action.x <= right and top <= action.y <= bottom:
                area = (right - left) * (bottom - top)
                if best is None or area < best[0]:
                    best = (area, i)
        return None if best is None else best[1]
    if isinstance(action, OpenApp):
        return first(lambda c: c[0] == "open_app" and str(c[1]).lower()
                     == action.app_name.lower())
    if isinstance(action, Scroll) and action.direction in ("up", "down"):
        return first(lambda c: c[0] == f"scroll_{action.direction}")
    if isinstance(action, Key) and action.key in ("back", "home", "enter"):
        return first(lambda c: c[0] == action.key)
    if isinstance(action, TypeText | Answer):
        want = action.text
        ck = "type" if isinstance(action, TypeText) else "answer"
        hit = first(lambda c: c[0] == ck and c[1] == want)
        if hit is None:
            hit = first(lambda c: c[0] == ck and str(c[1]).casefold() == want.casefold())
        if hit is None and ck == "answer" and want.strip():
            hit = first(lambda c: c[0] == ck and want.casefold() in str(c[1]).casefold())
        return hit
    if kind == "complete":
        return first(lambda c: c[0] == "complete")
    return None


# -- JSON → arrays (once per step) → tensors (per batch) -----------------------------------
@dataclass(frozen=True)
class StepArrays:
    """One encoded observation as compact arrays: what :func:`step_arrays` computes once
    and a batch collates with block copies (the learner replays a step many times; its
    JSON is never re-read after the first)."""

    instr_ids: Any  # [Li] hashed token ids of the instruction (uint16, int32 past 65536 buckets)
    glob: Any  # float32 [_GLOBAL] step and history one-hots
    cand_ids: Any  # [Lc] hashed ids of every candidate, concatenated in order (as instr_ids)
    cand_len: Any  # int32 [C] how many of cand_ids each candidate owns
    dense: Any  # float32 [C, _DENSE] kind one-hot, flag bits, bounds, overlap, span site
    ctx_ids: Any  # [Lx] hashed context tokens of every candidate, concatenated (as cand_ids)
    ctx_len: Any  # int32 [C] how many of ctx_ids each candidate owns

    @property
    def count(self) -> int:
        return int(self.cand_len.shape[0])

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in (self.instr_ids, self.glob, self.cand_ids,
                                          self.cand_len, self.dense, self.ctx_ids,
                                          self.ctx_len)))


def step_arrays(enc: Mapping[str, Any], buckets: int, overlap: bool = True,
                named_words: bool = False) -> StepArrays:
    """Featurise one encoded observation (the JSON of :func:`encode_observation`);
    ``named_words``: see ``UITreeConfig.named_words`` (needs ``overlap``)."""
    import numpy as np

    instr = str(enc["i"])
    want = _content(instr) if overlap else frozenset()
    instr_words = _words(instr)
    glob = np.zeros(_GLOBAL, dtype=np.float32)
    glob[0] = min(float(enc.get("s", 0)), 20.0) / 10.0
    hist = list(enc.get("h", []))[-_HISTORY:]
    hist = ["none"] * (_HISTORY - len(hist)) + hist
    for j, hk in enumerate(hist):
        k = HIST_KINDS.index(hk) if hk in HIST_KINDS else HIST_KINDS.index("other")
        glob[1 + j * len(HIST_KINDS) + k] = 1.0
    # the instruction compared with the screen is the overlap input's kind of help: off
    # with it (so, and the on-screen flag below)
    glob[-1] = float(enc.get("so", 0.0)) if overlap else 0.0
    cands = enc["c"]
    dense = np.zeros((len(cands), _DENSE), dtype=np.float32)
    ids: list[int] = []
    lens = np.zeros(len(cands), dtype=np.int32)
    ctx_ids: list[int] = []
    ctx_lens = np.zeros(len(cands), dtype=np.int32)
    o = len(KINDS) + _FLAG_BITS
    for j, cand in enumerate(cands):
        kind, text, rid, cls, flags = cand[:5]
        before = len(ids)
        has_ctx = len(cand) > 9 and bool(cand[9])
        if not (has_ctx and kind in ("type", "answer")):
            # a typed span or an answer is read by its context and shape only: its own
            # words are the task's parameters (held-out names, numbers), which no
            # training instance taught — their hashed vectors would be noise
            ids.extend(_hashed(str(text), "", buckets, want if named_words else frozenset()))
        if rid:
            ids.extend(_hashed(_rid_text(str(rid)), "r", buckets))
        if cls:
            ids.extend(_hashed(str(cls), "k", buckets))
        lens[j] = len(ids) - before
        row = dense[j]
        row[KINDS.index(kind)] = 1.0
        bits = int(flags) if overlap else int(flags) & ~_F_ON_SCREEN
        row[len(KINDS):o] = [(bits >> bit) & 1 for bit in range(_FLAG_BITS)]
        row[o:o + 4] = [float(v) for v in cand[5:9]]
        if want:
            named = want & _content(str(text))
            hit = len(named) / len(want)
            row[o + 4], row[o + 5] = hit, float(hit > 0)
            if named and kind == "tap":
                # where in the instruction the element's words stand, as a typed span's
                # place: "10" or "20" on a clock dial for "Set an alarm for 10:20 PM"
                at = [i for i, w in enumerate(instr_words) if w in named]
                row[o + 6], row[o + 7] = at[0] / len(instr_words), min(len(at), 4) / 4
        if len(cand) > 9 and cand[9]:
            toks = _context_ids(str(cand[9]), buckets)
            ctx_ids.extend(toks)
            ctx_lens[j] = len(toks)
        if len(cand) > 11:
            row[o + 6], row[o + 7] = float(cand[10]), float(cand[11])
    id_type = np.uint16 if buckets <= 1 << 16 else np.int32  # exact either way, half the bytes
    return StepArrays(np.asarray(_hashed(instr, "", buckets), dtype=id_type), glob,
                      np.asarray(ids, dtype=id_type), lens, dense,
                      np.asarray(ctx_ids, dtype=id_type), ctx_lens)


@functools.lru_cache(maxsize=65536)
def _context_ids(context: str, buckets: int) -> tuple[int, ...]:
    """Bucket ids of context tokens (each whole, prefixed so none collides with a word)."""
    return tuple(zlib.crc32(f"x{t}".encode()) % buckets for t in context.split())


@dataclass
class _Batch:
    instr_ids: torch.Tensor  # flat token ids of every instruction
    instr_off: torch.Tensor  # [B] offsets into instr_ids
    glob: torch.Tensor  # [B, _GLOBAL]
    cand_ids: torch.Tensor  # flat token ids of every candidate (row-major over B × N)
    cand_off: torch.Tensor  # [B * N] offsets (padding candidates: empty bags)
    dense: torch.Tensor  # [B, N, _DENSE]
    mask: torch.Tensor  # [B, N] True for real candidates
    ctx_ids: torch.Tensor  # flat context token ids (row-major over B × N, as cand_ids)
    ctx_off: torch.Tensor  # [B * N] offsets (candidates without context: empty bags)
    counts: list[int] = field(default_factory=list)


def collate(rows: Sequence[StepArrays]) -> _Batch:
    """Stack featurised steps into one padded batch: concatenations and one block copy
    per step, no per-scalar Python work (padding candidates are empty bags)."""
    import numpy as np
    import torch

    bsz = len(rows)
    counts = [r.count for r in rows]
    n = max(1, max(counts, default=1))
    instr_len = np.fromiter((r.instr_ids.shape[0] for r in rows), dtype=np.int64, count=bsz)
    instr_off = np.zeros(bsz, dtype=np.int64)
    np.cumsum(instr_len[:-1], out=instr_off[1:])
    lens = np.zeros((bsz, n), dtype=np.int64)
    ctx_lens = np.zeros((bsz, n), dtype=np.int64)
    dense = np.zeros((bsz, n, _DENSE), dtype=np.float32)
    for b, r in enumerate(rows):
        lens[b, :r.count] = r.cand_len
        ctx_lens[b, :r.count] = r.ctx_len
        dense[b, :r.count] = r.dense
    empty = np.zeros(0, dtype=np.int32)

    def flat_bags(per_row: list[Any], sizes: Any) -> tuple[torch.Tensor, torch.Tensor]:
        flat = sizes.reshape(-1)
        off = np.zeros(flat.shape[0], dtype=np.int64)
        np.cumsum(flat[:-1], out=off[1:])
        ids = np.concatenate(per_row) if per_row else empty
        return torch.from_numpy(ids.astype(np.int64)), torch.from_numpy(off)

    instr_ids = np.concatenate([r.instr_ids for r in rows]) if rows else empty
    cand_ids, cand_off = flat_bags([r.cand_ids for r in rows], lens)
    ctx_ids, ctx_off = flat_bags([r.ctx_ids for r in rows], ctx_lens)
    mask = np.arange(n)[None, :] < np.asarray(counts, dtype=np.int64).reshape(-1, 1)
    return _Batch(torch.from_numpy(instr_ids.astype(np.int64)), torch.from_numpy(instr_off),
                  torch.from_numpy(np.stack([r.glob for r in rows]) if rows
                                   else np.zeros((0, _GLOBAL), dtype=np.float32)),
                  cand_ids, cand_off, torch.from_numpy(dense), torch.from_numpy(mask),
                  ctx_ids, ctx_off, counts)


def _featurize(encoded: Sequence[Mapping[str, Any]], buckets: int,
                overlap: bool = True, named_words: bool = False) -> _Batch:
    return collate([step_arrays(e, buckets, overlap, named_words) for e in encoded])


def _drop_tokens(ids: torch.Tensor, offsets: torch.Tensor, p: float,
                 gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Flat bags (``ids`` with bag ``offsets``) with each token kept with probability
    1 − p; a bag that loses every token becomes empty (a zero vector)."""
    import torch

    if p <= 0.0 or ids.numel() == 0:
        return ids, offsets
    keep = torch.rand(ids.shape[0], generator=gen) >= p
    bag = torch.searchsorted(offsets, torch.arange(ids.shape[0]), right=True) - 1
    counts = torch.bincount(bag[keep], minlength=offsets.shape[0])
    new_off = torch.zeros_like(offsets)
    new_off[1:] = torch.cumsum(counts, 0)[:-1]
    return ids[keep], new_off


def _build_model(cfg: UITreeConfig) -> torch.nn.Module:
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            e, h = cfg.embed_dim, cfg.hidden
            self.embed = nn.EmbeddingBag(cfg.buckets, e, mode="mean")
            self.instr = nn.Sequential(nn.Linear(e + _GLOBAL, h), nn.ReLU(), nn.Linear(h, h))
            # a candidate: its own words, its context tokens (pooled apart), dense features
            self.cand = nn.Sequential(nn.Linear(2 * e + _DENSE, h), nn.ReLU(),
                                      nn.Linear(h, h))
            self.attn = nn.Linear(h, h, bias=False)
            self.score_hidden = nn.Linear(4 * h + 2, h)
            self.score_out = nn.Linear(h, 1)
            nn.init.zeros_(self.score_out.weight)  # uniform policy at the start …
            nn.init.zeros_(self.score_out.bias)
            self.prior = nn.Parameter(torch.tensor(float(cfg.overlap_prior)))  # … or not
            self.drop_rng = torch.Generator().manual_seed(cfg.seed)  # token dropout's own

        def forward(self, x: _Batch, instruction_only: bool = False
                    ) -> tuple[torch.Tensor, torch.Tensor]:
            """Masked logits [B, N] and features [B, 2h] (``instruction_only``: the
            logits are empty and the screen half of the features zero)."""
            bsz, n = x.mask.shape
            # only in gradient passes while set_training(True) (SFT, an actor pass with
            # actor_dropout): acting and the learner's ratio and target passes read all
            p = cfg.token_dropout if self.training and torch.is_grad_enabled() else 0.0

            def bag(ids: torch.Tensor, off: torch.Tensor) -> torch.Tensor:
                pooled: torch.Tensor = self.embed(*_drop_tokens(ids, off, p, self.drop_rng))
                return pooled

            q = self.instr(torch.cat([bag(x.instr_ids, x.instr_off), x.glob], -1))
            if instruction_only:
                return q.new_zeros(bsz, 0), torch.cat([q, torch.zeros_like(q)], -1)
            ce = bag(x.cand_ids, x.cand_off).view(bsz, n, -1)
            xe = bag(x.ctx_ids, x.ctx_off).view(bsz, n, -1)
            c = self.cand(torch.cat([ce, xe, x.dense], -1))  # [B, N, h]
            a = (c @ self.attn(q).unsqueeze(-1)).squeeze(-1) / c.shape[-1] ** 0.5
            a = torch.softmax(a.masked_fill(~x.mask, float("-inf")), -1)
            ctx = (a.unsqueeze(-1) * c).sum(1)  # [B, h]: what the screen offers
            qn = q.unsqueeze(1).expand(-1, n, -1)
            o = len(KINDS) + _FLAG_BITS + 4
            z = torch.cat([c, qn, c * qn, ctx.unsqueeze(1).expand(-1, n, -1),
                           x.dense[..., o:o + 2]], -1)
            logits = self.score_out(torch.relu(self.score_hidden(z))).squeeze(-1)
            logits = logits + self.prior * x.dense[..., o]
            if cfg.logit_cap > 0:
                logits = cfg.logit_cap * torch.tanh(logits / cfg.logit_cap)
            return logits.masked_fill(~x.mask, float("-inf")), torch.cat([q, ctx], -1)

    torch.manual_seed(cfg.seed)  # the global RNG only seeds init; restored below
    return Net()


def _likeliest(cands: Sequence[Sequence[Any]], logp: torch.Tensor, chosen: int, n: int
               ) -> list[dict[str, Any]]:
    """The ``n`` likeliest candidates, most likely first (the chosen one first among
    equals: an untrained policy ties everywhere): index, kind, label (an element's text,
    a typed span …) and probability."""
    lps = logp[:len(cands)].tolist()  # a batch's padding lies past the candidates
    order = sorted(range(len(cands)), key=lambda k: (-lps[k], k != chosen, k))[:n]
    return [{"index": k, "kind": cands[k][0], "label": str(cands[k][1])[:40],
             "p": round(math.exp(lps[k]), 4)} for k in order]


class UITreePolicy:
    """See the module docstring. ``UITreePolicy.from_config({"seed": 1})``."""

    kind = "uitree"

    def __init__(self, config: UITreeConfig | None = None) -> None:
        import torch

        self.config = config or UITreeConfig()
        state = torch.random.get_rng_state()
        try:
            self.model = _build_model(self.config)
        finally:
            torch.random.set_rng_state(state)  # building a policy leaves others' RNG alone
        self.model.eval()  # no token dropout unless set_training(True)
        self.feature_dim = 2 * self.config.hidden
        self._rng = torch.Generator().manual_seed(self.config.seed)
        # keep each step's featurisation in StepRecord.cache (False: recompute every
        # time; the benchmark's "before" arm, and a way to rule the cache out)
        self.step_cache = True
        # > 0: each Decision's info lists the N likeliest candidates with their
        # probabilities (``distrl eval --alternatives``: why a held-out step went wrong).
        # Off in training, where info travels in every trajectory.
        self.alternatives = 0
        c = self.config
        self._cache_key = (f"uitree/v{_ENC_VERSION}/{c.buckets}/{int(c.overlap_feature)}"
                           f"/{int(c.named_words)}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> UITreePolicy:
        return cls(UITreeConfig.from_dict(config))

    def config_dict(self) -> dict[str, Any]:
        return self.config.as_dict()

    def _batch(self, encoded: Sequence[Mapping[str, Any]]) -> _Batch:
        c = self.config
        return _featurize(encoded, c.buckets, c.overlap_feature, c.named_words)

    def reseed(self, seed: int) -> None:
        """Restart the sampling RNG (weights untouched)."""
        self._rng.manual_seed(seed)

    # -- acting (farm) ---------------------------------------------------------------------
    def decide(self, observations: Sequence[Observation], *, greedy: bool = False
               ) -> list[Decision]:
        import torch

        if not observations:
            return []
        encoded = [encode_observation(o, self.config) for o in observations]
        with torch.no_grad():
            logits, _ = self.model(self._batch(encoded))
            logp = torch.log_softmax(logits, -1)
            if greedy:
                picks = logp.argmax(-1)
            else:
                picks = torch.multinomial(logp.exp(), 1, generator=self._rng).squeeze(-1)
            ent = -(logp.exp() * logp.nan_to_num(neginf=0.0)).sum(-1)
        out: list[Decision] = []
        for b, enc in enumerate(encoded):
            k = int(picks[b])
            cand = enc["c"][k]
            info: dict[str, Any] = {"entropy": round(float(ent[b]), 4),
                                    "candidates": len(enc["c"])}
            if self.alternatives > 0:
                info["alternatives"] = _likeliest(enc["c"], logp[b], k, self.alternatives)
            out.append(Decision(
                action=candidate_action(cand), log_prob=float(logp[b, k]), obs=enc,
                choice={"index": k, "kind": cand[0], "label": str(cand[1])[:40]},
                info=info))
        return out

    # -- learning (learner) ------------------------------------------------------------------
    def prepare(self, steps: Sequence[StepRecord]) -> int:
        """Featurise steps into their ``StepRecord.cache`` now (e.g. when an episode enters
        replay, off the update path); returns the bytes the arrays take."""
        return sum(self._arrays(s).nbytes for s in steps)

    def _step_arrays(self, enc: Mapping[str, Any]) -> StepArrays:
        c = self.config
        return step_arrays(enc, c.buckets, c.overlap_feature, c.named_words)

    def _arrays(self, step: StepRecord) -> StepArrays:
        if not self.step_cache:
            return self._step_arrays(step.obs)
        hit = step.cache.get(self._cache_key)
        if not isinstance(hit, StepArrays):
            hit = self._step_arrays(step.obs)
            step.cache[self._cache_key] = hit
        return hit

    def evaluate(self, steps: Sequence[StepRecord], *, grad: bool = True) -> PolicyOutput:
        """log π(choice | obs), entropy and features of recorded steps. ``grad=False``: a
        pass under ``torch.inference_mode`` for ratios and targets (outputs are plain
        tensors a critic may take as input)."""
        import torch

        if grad:
            return self._evaluate(steps)
        with torch.inference_mode():
            out = self._evaluate(steps)
        return type(out)(log_prob=out.log_prob.clone(), entropy=out.entropy.clone(),
                         features=out.features.clone())

    def _evaluate(self, steps: Sequence[StepRecord]) -> PolicyOutput:
        import torch

        from distrl_sdk.learn.api import PolicyOutput

        encoded = [s.obs for s in steps]
        idx: list[int] = []
        for s in steps:
            k = s.choice.get("index")
            if not isinstance(k, int) or not 0 <= k < len(s.obs.get("c", ())):
                raise ValueError(f"uitree choice {s.choice!r} does not index the recorded "
                                 "candidates (a step from another policy kind?)")
            idx.append(k)
        if any(e.get("v") != _ENC_VERSION for e in encoded):
            raise ValueError(f"uitree obs encoding is not version {_ENC_VERSION}")
        logits, feats = self.model(collate([self._arrays(s) for s in steps]))
        logp = torch.log_softmax(logits, -1)
        chosen = logp.gather(1, torch.tensor(idx, dtype=torch.long).unsqueeze(1)).squeeze(1)
        probs = logp.exp()
        entropy = -(probs * logp.masked_fill(torch.isinf(logp), 0.0)).sum(-1)
        return PolicyOutput(log_prob=chosen, entropy=entropy, features=feats)

    def instruction_features(self, instructions: Sequence[str]) -> torch.Tensor:
        """[B, 2h]: the instruction encoding at step 0, with an empty screen's context."""
        enc = [{"v": _ENC_VERSION, "i": i, "s": 0, "h": [], "c": []} for i in instructions]
        out: tuple[torch.Tensor, torch.Tensor] = self.model(
            self._batch(enc), True)
        return out[1]

    def set_training(self, on: bool) -> None:
        """Training mode on (gradient passes drop ``config.token_dropout`` of the tokens)
        or off (every pass reads every token: acting, ratios, evaluation)."""
        self.model.train(on)

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return list(self.model.parameters())

    def weights(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def load_weights(self, weights: Mapping[str, torch.Tensor]) -> None:
        self.model.load_state_dict(dict(weights), strict=True)
