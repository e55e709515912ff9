"""UITreePolicy: a small torch model that scores candidate actions on a UI tree.

What the demo trains on a CPU from scratch, in minutes. Each observation becomes a
short list of **candidate actions**: tap each clickable element (labelled with its own
text, content-desc and its children's texts, since Android rows keep the text in child
TextViews), open one of the sim's apps, scroll up/down, back, home, type a quoted
phrase of the instruction (if it has one) and complete. The model embeds the
instruction and every candidate with one shared hashed bag of words, word bigrams and
character trigrams (a fixed hashing trick: no vocabulary to download, the same word
always lands in the same bucket for instruction and screen, so matching is easy to
learn), scores each candidate against the instruction and an attention summary of the
screen, and samples from the softmax over the valid candidates. One trainable scalar,
``overlap_prior``, adds a bonus to candidates that name the instruction's words.

    decide(observations)  → Decision(action, log_prob, obs=JSON of the candidates, choice)
    evaluate(steps)       → log π(choice | obs), entropy, features — from that JSON alone

``decide`` featurises through the same JSON encoding ``evaluate`` reads, so the
behaviour log-prob recorded on the farm equals the learner's recomputation for the same
weights (up to float rounding). The scorer's last layer starts at zero: with
``overlap_prior=0`` a fresh policy is uniform over its candidates; by default it starts
near-random, with only the reading prior above.
"""

from __future__ import annotations

import functools
import itertools
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from distrl_sdk.actions import Complete, Key, OpenApp, Scroll, Tap, TypeText
from distrl_sdk.policy import Decision, Observation
from distrl_sdk.uitree import UIElement

if TYPE_CHECKING:
    import torch

    from distrl_sdk.learn.api import PolicyOutput, StepRecord

__all__ = ["KINDS", "SIM_APPS", "UITreeConfig", "UITreePolicy"]

#: Candidate kinds, in the order of the one-hot the model reads.
KINDS: tuple[str, ...] = ("tap", "open_app", "scroll_down", "scroll_up", "back", "home",
                          "type", "complete")
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
_QUOTED = re.compile(r"\"([^\"]{1,60})\"")
_HISTORY = 2  # earlier actions the model sees
# flag bits of a candidate (element state; descendants' switches count for a row)
_F_CLICK, _F_CHECKABLE, _F_CHECKED, _F_SCROLL, _F_SELECTED = 1, 2, 4, 8, 16
_F_LAST_TAPPED = 32  # the previous action tapped inside this element (don't toggle twice)
_FLAG_BITS = 6
_DENSE = len(KINDS) + _FLAG_BITS + 4 + 2  # kind, flags, bounds, overlap (fraction, any)
_GLOBAL = 1 + _HISTORY * len(HIST_KINDS)
_ENC_VERSION = 2


@dataclass(frozen=True)
class UITreeConfig:
    """The architecture and action space (JSON-able: it travels in checkpoints)."""

    buckets: int = 16384  # hashing-trick buckets of the shared token embedding
    embed_dim: int = 32  # token embedding width
    hidden: int = 64  # width of instruction/candidate encodings (features = 2 × hidden)
    max_elements: int = 64  # candidates per screen at most (fixed actions included)
    apps: tuple[str, ...] = SIM_APPS  # open_app candidates
    type_quoted: bool = True  # offer typing a "quoted phrase" of the instruction
    # initial logit bonus per unit of instruction-word overlap (a trainable scalar). 0 = a
    # uniform start; > 0 = a reading prior, like a pretrained model's: a candidate naming
    # all the instruction's words is e^prior times likelier than one naming none. It does
    # not know which app to open or when to stop: easy tasks start at a few % success
    # (2.0; 0 gives ~0 %), and on realistic phone latency only the prior lets the
    # demo learn visibly within minutes.
    overlap_prior: float = 2.0
    seed: int = 0  # initial weights and the sampling RNG

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
        return cfg

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["apps"] = list(self.apps)
        return d


# -- text → hashed ids ----------------------------------------------------------------------
def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@functools.lru_cache(maxsize=65536)
def _hashed(text: str, prefix: str, buckets: int) -> tuple[int, ...]:
    """Bucket ids of words, word bigrams and char trigrams (crc32: stable across runs,
    unlike ``hash()``)."""
    words = _words(text)
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
                        last_tap: tuple[float, float] | None = None) -> list[list[Any]]:
    """Clickable elements (and checkables with no clickable ancestor) as candidates."""
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
                 | (_F_SELECTED if e.selected else 0))
        if last_tap is not None and b.contains(last_tap[0] * w, last_tap[1] * h):
            flags |= _F_LAST_TAPPED
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
        box = [round(min(max(v, 0.0), 1.0), 4)
               for v in (b.left / w, b.top / h, b.right / w, b.bottom / h)]
        out.append(["tap", label, rid, e.class_name.rpartition(".")[2][:24], flags, *box])
    return out


def encode_observation(obs: Observation, config: UITreeConfig) -> dict[str, Any]:
    """The compact JSON of what the policy sees: instruction, step, history, candidates.

    A candidate is ``[kind, text, resource-id name, class, flags, l, t, r, b]`` with
    bounds normalised to the screen (zeros for non-element actions); flags are bits:
    clickable, checkable, checked (a row's switch counts), scrollable, selected, and
    "the previous action tapped here"."""
    fixed: list[list[Any]] = [["open_app", app, "", "", 0, 0, 0, 0, 0] for app in config.apps]
    fixed += [[k, "", "", "", 0, 0, 0, 0, 0] for k in ("scroll_down", "scroll_up", "back",
                                                        "home")]
    if config.type_quoted:
        fixed += [["type", q, "", "", 0, 0, 0, 0, 0]
                  for q in dict.fromkeys(_QUOTED.findall(obs.instruction))][:2]
    fixed.append(["complete", "", "", "", 0, 0, 0, 0, 0])
    last = obs.history[-1] if obs.history else None
    last_tap = (float(last.x), float(last.y)) if isinstance(last, Tap) else None
    taps = _element_candidates(obs.elements, obs.screen_size,
                               max(0, config.max_elements - len(fixed)), last_tap)
    hist = [_history_kind(a) for a in obs.history[-_HISTORY:]]
    return {"v": _ENC_VERSION, "i": obs.instruction, "s": int(obs.step), "h": hist,
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
    raise ValueError(f"unknown uitree candidate kind {kind!r}")


# -- JSON → tensors ------------------------------------------------------------------------
@dataclass
class _Batch:
    instr_ids: torch.Tensor  # flat token ids of every instruction
    instr_off: torch.Tensor  # [B] offsets into instr_ids
    glob: torch.Tensor  # [B, _GLOBAL]
    cand_ids: torch.Tensor  # flat token ids of every candidate (row-major over B × N)
    cand_off: torch.Tensor  # [B * N] offsets (padding candidates: empty bags)
    dense: torch.Tensor  # [B, N, _DENSE]
    mask: torch.Tensor  # [B, N] True for real candidates
    counts: list[int] = field(default_factory=list)


def _featurize(encoded: Sequence[Mapping[str, Any]], buckets: int) -> _Batch:
    import torch

    bsz = len(encoded)
    n = max(1, max((len(e["c"]) for e in encoded), default=1))
    instr_ids: list[int] = []
    instr_off: list[int] = []
    glob = torch.zeros(bsz, _GLOBAL)
    cand_ids: list[int] = []
    cand_off: list[int] = []
    dense = torch.zeros(bsz, n, _DENSE)
    mask = torch.zeros(bsz, n, dtype=torch.bool)
    counts: list[int] = []
    for b, enc in enumerate(encoded):
        instr = str(enc["i"])
        instr_off.append(len(instr_ids))
        instr_ids.extend(_hashed(instr, "", buckets))
        want = _content(instr)
        glob[b, 0] = min(float(enc.get("s", 0)), 20.0) / 10.0
        hist = list(enc.get("h", []))[-_HISTORY:]
        hist = ["none"] * (_HISTORY - len(hist)) + hist
        for j, hk in enumerate(hist):
            k = HIST_KINDS.index(hk) if hk in HIST_KINDS else HIST_KINDS.index("other")
            glob[b, 1 + j * len(HIST_KINDS) + k] = 1.0
        cands = enc["c"]
        counts.append(len(cands))
        for j in range(n):
            cand_off.append(len(cand_ids))
            if j >= len(cands):
                continue
            kind, text, rid, cls, flags = cands[j][:5]
            cand_ids.extend(_hashed(str(text), "", buckets))
            if rid:
                cand_ids.extend(_hashed(_rid_text(str(rid)), "r", buckets))
            if cls:
                cand_ids.extend(_hashed(str(cls), "k", buckets))
            mask[b, j] = True
            row = dense[b, j]
            row[KINDS.index(kind)] = 1.0
            for bit in range(_FLAG_BITS):
                row[len(KINDS) + bit] = float((int(flags) >> bit) & 1)
            o = len(KINDS) + _FLAG_BITS
            row[o:o + 4] = torch.tensor([float(v) for v in cands[j][5:9]])
            if want:
                hit = len(want & _content(str(text))) / len(want)
                row[o + 4], row[o + 5] = hit, float(hit > 0)
    return _Batch(torch.tensor(instr_ids, dtype=torch.long),
                  torch.tensor(instr_off, dtype=torch.long), glob,
                  torch.tensor(cand_ids, dtype=torch.long),
                  torch.tensor(cand_off, dtype=torch.long), dense, mask, counts)


def _build_model(cfg: UITreeConfig) -> torch.nn.Module:
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            e, h = cfg.embed_dim, cfg.hidden
            self.embed = nn.EmbeddingBag(cfg.buckets, e, mode="mean")
            self.instr = nn.Sequential(nn.Linear(e + _GLOBAL, h), nn.ReLU(), nn.Linear(h, h))
            self.cand = nn.Sequential(nn.Linear(e + _DENSE, h), nn.ReLU(), nn.Linear(h, h))
            self.attn = nn.Linear(h, h, bias=False)
            self.score_hidden = nn.Linear(4 * h + 2, h)
            self.score_out = nn.Linear(h, 1)
            nn.init.zeros_(self.score_out.weight)  # uniform policy at the start …
            nn.init.zeros_(self.score_out.bias)
            self.prior = nn.Parameter(torch.tensor(float(cfg.overlap_prior)))  # … or not

        def forward(self, x: _Batch, instruction_only: bool = False
                    ) -> tuple[torch.Tensor, torch.Tensor]:
            """Masked logits [B, N] and features [B, 2h] (``instruction_only``: the
            logits are empty and the screen half of the features zero)."""
            bsz, n = x.mask.shape
            q = self.instr(torch.cat([self.embed(x.instr_ids, x.instr_off), x.glob], -1))
            if instruction_only:
                return q.new_zeros(bsz, 0), torch.cat([q, torch.zeros_like(q)], -1)
            ce = self.embed(x.cand_ids, x.cand_off).view(bsz, n, -1)
            c = self.cand(torch.cat([ce, x.dense], -1))  # [B, N, h]
            a = (c @ self.attn(q).unsqueeze(-1)).squeeze(-1) / c.shape[-1] ** 0.5
            a = torch.softmax(a.masked_fill(~x.mask, float("-inf")), -1)
            ctx = (a.unsqueeze(-1) * c).sum(1)  # [B, h]: what the screen offers
            qn = q.unsqueeze(1).expand(-1, n, -1)
            o = len(KINDS) + _FLAG_BITS + 4
            z = torch.cat([c, qn, c * qn, ctx.unsqueeze(1).expand(-1, n, -1),
                           x.dense[..., o:o + 2]], -1)
            logits = self.score_out(torch.relu(self.score_hidden(z))).squeeze(-1)
            logits = logits + self.prior * x.dense[..., o]
            return logits.masked_fill(~x.mask, float("-inf")), torch.cat([q, ctx], -1)

    torch.manual_seed(cfg.seed)  # the global RNG only seeds init; restored below
    return Net()


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
        self.feature_dim = 2 * self.config.hidden
        self._rng = torch.Generator().manual_seed(self.config.seed)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> UITreePolicy:
        return cls(UITreeConfig.from_dict(config))

    def config_dict(self) -> dict[str, Any]:
        return self.config.as_dict()

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
            logits, _ = self.model(_featurize(encoded, self.config.buckets))
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
            out.append(Decision(
                action=candidate_action(cand), log_prob=float(logp[b, k]), obs=enc,
                choice={"index": k, "kind": cand[0], "label": str(cand[1])[:40]},
                info={"entropy": round(float(ent[b]), 4), "candidates": len(enc["c"])}))
        return out

    # -- learning (learner) ------------------------------------------------------------------
    def evaluate(self, steps: Sequence[StepRecord]) -> PolicyOutput:
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
        logits, feats = self.model(_featurize(encoded, self.config.buckets))
        logp = torch.log_softmax(logits, -1)
        chosen = logp.gather(1, torch.tensor(idx, dtype=torch.long).unsqueeze(1)).squeeze(1)
        probs = logp.exp()
        entropy = -(probs * logp.masked_fill(torch.isinf(logp), 0.0)).sum(-1)
        return PolicyOutput(log_prob=chosen, entropy=entropy, features=feats)

    def instruction_features(self, instructions: Sequence[str]) -> torch.Tensor:
        """[B, 2h]: the instruction encoding at step 0, with an empty screen's context."""
        enc = [{"v": _ENC_VERSION, "i": i, "s": 0, "h": [], "c": []} for i in instructions]
        out: tuple[torch.Tensor, torch.Tensor] = self.model(
            _featurize(enc, self.config.buckets), True)
        return out[1]

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return list(self.model.parameters())

    def weights(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def load_weights(self, weights: Mapping[str, torch.Tensor]) -> None:
        self.model.load_state_dict(dict(weights), strict=True)
