"""VLMPolicy: any transformers image-text-to-text model + PEFT LoRA, emitting JSON actions.

    decide(observations)  → generate (batched, left padding) → parse_action → Decision
    evaluate(steps)       → log π(choice | obs, frame), entropy, features (LoRA grads only)

**The distribution.** π(reply | prompt) is the product over the reply's tokens of
softmax(logits / temperature) restricted to plain-text tokens (special tokens but EOS
are never emitted), plus the end-of-sequence token when generation stopped by itself
(``choice["eos"]``; a reply cut at ``max_new_tokens`` is scored without it). The tokens
are the generated ids (``choice["ids"]``: exactly what was sampled, even where the text
would re-tokenize differently); a hand-made choice without ids is scored on its text's
encoding. ``decide`` samples from exactly this distribution (top-k/top-p/repetition
penalties are switched off, whatever the model's ``generation_config.json`` says) and
then scores its reply with the same batched forward pass ``evaluate`` runs, so the
behaviour log μ recorded on the farm and the learner's log π agree for the same weights
and frame (up to float rounding). ``greedy=True`` decodes the arg-max and still reports
the log-prob of what it chose.

**Prompt.** One user turn: the screenshot (when there is one) and a text of the
instruction, the screen size and step, the last ``history_len`` actions as JSON and the
action schema (``action_prompt``). ``Decision.obs`` = ``{"instruction", "history",
"screen_size", "step", "image"}`` holds everything that text is made of, so the learner
rebuilds the identical prompt; the frame travels separately (``StepRecord.frame``).
An output :func:`~distrl_sdk.actions.parse_action` cannot read becomes an
:class:`~distrl_sdk.actions.InvalidAction`, which the runner does not execute and the
learner penalises. ``Decision.choice`` = ``{"text", "eos", "ids"}``.

**What is trained and broadcast.** Only the LoRA adapter: by default rank-8 adapters on
the *language model's* attention projections (``lora_target_modules``, a PEFT regex or
list of module names). ``weights()`` is the adapter's state dict (PEFT key names),
``save_adapter``/``load_adapter`` use PEFT's ``save_pretrained`` layout (safetensors).

**Real use (GPU).** Point ``model_path`` at a local directory holding a Hugging Face
image-text-to-text checkpoint (e.g. ``huggingface-cli download Qwen/Qwen2-VL-2B-Instruct
--local-dir /models/qwen2-vl-2b`` on a machine with internet, or a LLaVA dir); nothing
is downloaded at run time::

    build_policy("vlm", {"model_path": "/models/qwen2-vl-2b", "dtype": "bfloat16",
                         "device": "cuda", "lora_r": 16, "lora_alpha": 32,
                         "image_max_side": 1024, "max_new_tokens": 96})

**Tests / CPU.** ``{"tiny": {"seed": 0, "hidden_size": 32, …}}`` builds a random tiny
LLaVA in code (``"arch": "qwen2_vl"`` a tiny Qwen2-VL; :mod:`distrl_sdk.policies.tiny`);
``config_dict()`` names it, so a worker rebuilding from the config gets bit-identical
base weights and loads the adapter.

**Learner memory (a 2B model on one GPU).** ``evaluate(steps, grad=False)`` is the
no-grad pass for ratios, critic inputs and priorities; the gradient pass runs in
micro-batches (:func:`distrl_sdk.learn.microbatch.accumulate_gradients`, which asks for
no hidden states: ``evaluate(steps, features=False)``). ``gradient_checkpointing``
recomputes decoder layers in backward (only the layers are put in training mode, so
no dropout switches on); ``autocast`` runs acting and scoring under bf16/fp16 autocast
(both, so log μ and log π still agree). Vision features are cached per frame (keyed by
the frame's SHA-256, ``vision_cache_frames`` of them, LRU) whenever nothing on the vision
path trains (the default LoRA targets only the language model): a step is scored in
``decide``, then in every replay's no-grad and grad pass, and its screen's vision tower
runs once. ``logprob_reduction="mean"`` scores a reply by its mean token log-prob: a
sequence ratio over 30–60 tokens is a product of that many per-token ratios, and it
explodes or vanishes after a few updates (clipping then zeroes most of a batch);
the per-token geometric mean stays near 1. ``decide`` reports the same reduction.

**Frames.** ``decide`` sees ``Observation.screenshot_png``; the learner sees whatever
``StepRecord.frame`` carries. Ship VLM frames losslessly (or decide on the same JPEG):
a JPEG re-encoding changes the pixels, hence log π, hence the importance ratio.
"""

from __future__ import annotations

import io
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from distrl_sdk.actions import InvalidAction, parse_action, to_json
from distrl_sdk.errors import ConfigError
from distrl_sdk.policy import Decision, Observation

if TYPE_CHECKING:
    import torch
    from PIL import Image

    from distrl_sdk.learn.api import PolicyOutput, StepRecord

__all__ = ["ACTION_PROMPT", "DEFAULT_LORA_TARGETS", "Completion", "VLMConfig", "VLMPolicy",
           "encode_observation", "format_prompt", "write_adapter"]

#: The language model's attention projections (LLaVA, Qwen2-VL, …) and not the vision
#: tower's, whose CLIP/ViT blocks use the same q/k/v names.
DEFAULT_LORA_TARGETS: Final = r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj)"

ACTION_PROMPT: Final = """\
Reply with exactly one JSON action and nothing else. x and y are fractions of the \
screen width and height, from 0 to 1.
{"action_type": "click", "x": 0.5, "y": 0.5}
{"action_type": "long_press", "x": 0.5, "y": 0.5}
{"action_type": "swipe", "x1": 0.5, "y1": 0.8, "x2": 0.5, "y2": 0.2}
{"action_type": "scroll", "direction": "down"} (up, down, left, right)
{"action_type": "input_text", "text": "hello"}
{"action_type": "navigate_back"}
{"action_type": "navigate_home"}
{"action_type": "keyboard_enter"}
{"action_type": "open_app", "app_name": "Settings"}
{"action_type": "wait", "seconds": 1.0}
{"action_type": "status", "goal_status": "complete"} (or "infeasible")
{"action_type": "answer", "text": "42"}"""

_DTYPES: Final = ("float32", "bfloat16", "float16", "auto")
_OBS_KEYS: Final = ("instruction", "history", "screen_size", "step", "image")
_REDUCTIONS: Final = ("sum", "mean")
_AUTOCAST: Final = ("bfloat16", "float16")


@dataclass(frozen=True)
class VLMConfig:
    """Everything ``build_policy("vlm", config)`` needs; exactly one of ``model_path``
    and ``tiny`` names the base model."""

    model_path: str | None = None  # local HF image-text-to-text checkpoint dir (real use)
    tiny: dict[str, int] | None = None  # TinyVLMConfig fields: a random tiny LLaVA (tests)
    dtype: str = "float32"  # base weights: float32 | bfloat16 | float16 | auto (checkpoint's)
    device: str = "cpu"  # torch device: "cpu", "cuda", "cuda:1", …
    attn_implementation: str | None = None  # e.g. "sdpa", "flash_attention_2"; None: default
    trust_remote_code: bool = False  # only for checkpoints whose code you have vetted
    lora_r: int = 8  # LoRA rank
    lora_alpha: int = 16  # LoRA scale numerator (scale = alpha / r)
    lora_dropout: float = 0.0  # >0 makes evaluate() stochastic: log π ≠ log μ for same weights
    lora_target_modules: str | list[str] = DEFAULT_LORA_TARGETS  # PEFT regex or module names
    lora_seed: int = 0  # seed of the adapters' initial A matrices (B starts at zero)
    temperature: float = 1.0  # π = softmax(logits / temperature); sampling and scoring alike
    max_new_tokens: int = 64  # reply length cap; a cut reply usually parses as invalid
    history_len: int = 4  # earlier actions shown in the prompt
    image_max_side: int | None = None  # downscale screens to this longest side (pixels)
    action_prompt: str = ACTION_PROMPT  # the action schema appended to every prompt
    # -- training a real (2B) model on one GPU; see "Learner memory" above --
    # log π of a reply: "sum" over its tokens (the exact sequence log-prob) or "mean"
    # (length-normalised: ratios π/μ become per-token geometric means)
    logprob_reduction: str = "sum"
    gradient_checkpointing: bool = False  # recompute decoder layers in backward
    autocast: str | None = None  # "bfloat16" | "float16": torch.autocast for scoring/acting
    vision_cache_frames: int = 128  # per-frame vision features kept (0: off; auto-off
    # when the adapter trains anything on the vision path)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> VLMConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"vlm policy config: unknown key(s) {unknown} "
                              f"(known: {sorted(known)})")
        try:
            cfg = cls(**dict(d))
        except TypeError as exc:
            raise ConfigError(f"vlm policy config: {exc}") from exc
        if (cfg.model_path is None) == (cfg.tiny is None):
            raise ConfigError("vlm policy config: give exactly one of model_path (a local "
                              "Hugging Face model directory) and tiny (a test model's sizes)")
        if cfg.dtype not in _DTYPES:
            raise ConfigError(f"vlm policy config: dtype {cfg.dtype!r} is not one of {_DTYPES}")
        if not (isinstance(cfg.temperature, int | float) and cfg.temperature > 0):
            raise ConfigError("vlm policy config: temperature must be > 0 (use greedy "
                              "decisions for arg-max decoding)")
        if cfg.max_new_tokens < 1 or cfg.history_len < 0 or cfg.lora_r < 1:
            raise ConfigError("vlm policy config: max_new_tokens and lora_r must be ≥ 1, "
                              "history_len ≥ 0")
        if cfg.image_max_side is not None and cfg.image_max_side < 1:
            raise ConfigError("vlm policy config: image_max_side must be ≥ 1 or null")
        if cfg.logprob_reduction not in _REDUCTIONS:
            raise ConfigError(f"vlm policy config: logprob_reduction {cfg.logprob_reduction!r} "
                              f"is not one of {_REDUCTIONS}")
        if cfg.autocast not in (None, *_AUTOCAST):
            raise ConfigError(f"vlm policy config: autocast {cfg.autocast!r} is not null or "
                              f"one of {_AUTOCAST}")
        if cfg.vision_cache_frames < 0:
            raise ConfigError("vlm policy config: vision_cache_frames must be ≥ 0")
        return cfg

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if isinstance(d["lora_target_modules"], tuple):
            d["lora_target_modules"] = list(d["lora_target_modules"])
        return d


def _history_entry(action: Any) -> str:
    if isinstance(action, InvalidAction):
        return f"(invalid output: {action.reason[:80]})"
    try:
        return to_json(action)
    except TypeError:
        return str(action)[:120]


def format_prompt(obs: Mapping[str, Any], action_prompt: str = ACTION_PROMPT) -> str:
    """The text part of the user turn, from a ``Decision.obs`` dict alone."""
    w, h = obs["screen_size"]
    lines = [f"Task: {obs['instruction']}", f"Screen: {w}x{h} pixels, step {obs['step']}."]
    if obs["history"]:
        lines.append("Previous actions, oldest first:")
        lines.extend(f"- {a}" for a in obs["history"])
    else:
        lines.append("No previous actions.")
    lines.append(action_prompt)
    return "\n".join(lines)


def encode_observation(o: Observation, history_len: int) -> dict[str, Any]:
    """``Decision.obs`` of a VLM step: what the prompt is built from (the frame goes
    separately). Shared by :class:`VLMPolicy` and the remote policy, so a step decided
    by an inference server is scored by the learner on the identical prompt."""
    hist = o.history[-history_len:] if history_len else []
    return {"instruction": o.instruction, "history": [_history_entry(a) for a in hist],
            "screen_size": [int(o.screen_size[0]), int(o.screen_size[1])],
            "step": int(o.step), "image": o.screenshot_png is not None}


def _check_step(obs: Any, choice: Any) -> None:
    """Recorded steps come off the wire: refuse malformed ones with a ValueError."""
    ok = (isinstance(obs, Mapping) and all(k in obs for k in _OBS_KEYS)
          and isinstance(obs["instruction"], str) and isinstance(obs["history"], list)
          and all(isinstance(h, str) for h in obs["history"])
          and isinstance(obs["screen_size"], list) and len(obs["screen_size"]) == 2
          and all(isinstance(v, int) for v in obs["screen_size"])
          and isinstance(obs["step"], int) and isinstance(obs["image"], bool))
    if not ok:
        raise ValueError(f"not a vlm observation (needs {list(_OBS_KEYS)} of the right types)")
    if not isinstance(choice, Mapping) or not isinstance(choice.get("text"), str):
        raise ValueError("not a vlm choice (needs a text)")


@dataclass
class _Batch:
    """Prompts (+ choices) laid out for one forward pass, left padded as a whole."""

    inputs: dict[str, Any]
    choice_len: list[int]
    prompt_mask: Any = field(default=None)  # [B, L] 1 on the prompt's tokens


@dataclass(frozen=True)
class Completion:
    """One sampled reply: ``ids`` are the plain-text tokens (EOS not included; ``eos``
    says whether generation stopped by itself), ``token_log_probs`` log π of each of
    ``ids`` and then of EOS where ``eos``; ``log_prob`` their sum (or mean, with
    ``logprob_reduction="mean"``), as ``Decision.log_prob``."""

    text: str
    eos: bool
    ids: list[int]
    log_prob: float
    token_log_probs: list[float]
    entropy: float

    def choice(self) -> dict[str, Any]:
        return {"text": self.text, "eos": self.eos, "ids": list(self.ids)}


class VLMPolicy:
    """A :class:`~distrl_sdk.learn.TrainablePolicy` over a vision-language model."""

    kind = "vlm"

    def __init__(self, model: Any, processor: Any, config: VLMConfig) -> None:
        """``model`` is already wrapped by PEFT (see :meth:`from_config`)."""
        import torch

        self.model, self.processor, self.config = model, processor, config
        # PolicyAgent may run two decide() batches in threads at once, and a learner may
        # evaluate() meanwhile: fast tokenizers are not re-entrant ("Already borrowed")
        self._lock = threading.RLock()
        self.tokenizer = processor.tokenizer
        self.tokenizer.padding_side = "left"  # generation continues every row at the end
        text_cfg = model.get_base_model().config.get_text_config()
        self.feature_dim: int = int(text_cfg.hidden_size)
        eos = self.tokenizer.eos_token_id
        if eos is None:
            raise ConfigError("vlm policy: the tokenizer has no end-of-sequence token")
        self.eos_id: int = int(eos)
        pad = self.tokenizer.pad_token_id
        self.pad_id: int = int(pad) if pad is not None else self.eos_id
        # π never emits special tokens (image slots, role markers, pad) but EOS, nor ids
        # past the tokenizer (padded embedding rows): a reply is plain text
        vocab = int(model.get_base_model().get_output_embeddings().weight.shape[0])
        banned = {i for i, t in self.tokenizer.added_tokens_decoder.items()
                  if t.special and i != self.eos_id and i < vocab}
        banned.update(range(len(self.tokenizer), vocab))
        self.banned_ids: list[int] = sorted(banned)
        self._special_strings = sorted({t.content for t in self.tokenizer.added_tokens_decoder
                                        .values() if t.special and len(t.content) > 1})
        self._allowed = [True] * vocab
        for i in self.banned_ids:
            self._allowed[i] = False
        self._vision = _VisionCache(model, config.vision_cache_frames)
        self._autocast_dtype = getattr(torch, config.autocast) if config.autocast else None

    # ── construction ────────────────────────────────────────────────────────────────
    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> VLMPolicy:
        """Build the base model (tiny or from ``model_path``) and wrap it in LoRA."""
        import warnings

        import torch
        import transformers
        from peft import LoraConfig, get_peft_model

        cfg = VLMConfig.from_dict(config)
        model, processor = _load_base(cfg)
        if cfg.gradient_checkpointing:  # non-reentrant: LoRA inputs need no requires_grad
            kw = {"use_reentrant": False}
            if hasattr(model, "activation_checkpointing_enable"):  # transformers ≥ 5 name
                model.activation_checkpointing_enable(activation_checkpointing_kwargs=kw)
            else:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kw)
        # A neutral generation config: the checkpoint's sampling defaults (top_k, top_p,
        # repetition_penalty …) would make the behaviour differ from π.
        tok = processor.tokenizer
        tf: Any = transformers  # GenerationConfig's constructor is untyped
        model.generation_config = tf.GenerationConfig(
            pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
            eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id)
        targets = cfg.lora_target_modules
        lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha,
                          lora_dropout=cfg.lora_dropout, bias="none",
                          target_modules=targets if isinstance(targets, str) else list(targets))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.lora_seed)
            try:
                with warnings.catch_warnings():  # PEFT calls a renamed transformers API
                    warnings.filterwarnings("ignore", ".*is_gradient_checkpointing",
                                            FutureWarning)
                    peft_model = get_peft_model(model, lora)
            except ValueError as exc:
                raise ConfigError(f"vlm policy: LoRA target modules {targets!r} match "
                                  f"nothing in the model ({exc})") from exc
        peft_model.eval()  # no dropout: decide and evaluate must see the same function
        return cls(peft_model, processor, cfg)

    def config_dict(self) -> dict[str, Any]:
        return self.config.to_dict()

    # ── the learner's interface ─────────────────────────────────────────────────────
    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def weights(self) -> dict[str, torch.Tensor]:
        """The LoRA adapter only (PEFT key names), detached copies on the CPU."""
        from peft import get_peft_model_state_dict

        sd = get_peft_model_state_dict(self.model)
        return {k: v.detach().to("cpu", copy=True).contiguous() for k, v in sd.items()}

    def load_weights(self, weights: Mapping[str, torch.Tensor]) -> None:
        """Load an adapter from :meth:`weights`; refuses anything that does not fit
        exactly (names and shapes), so a stale or foreign blob never half-loads."""
        from peft import set_peft_model_state_dict

        own = self._check_fit(weights)
        set_peft_model_state_dict(
            self.model, {k: weights[k].to(device=v.device, dtype=v.dtype) for k, v in own.items()})

    def _check_fit(self, weights: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """This policy's adapter state dict, once ``weights`` is known to match it exactly."""
        from peft import get_peft_model_state_dict

        own: dict[str, torch.Tensor] = get_peft_model_state_dict(self.model)
        missing, extra = sorted(set(own) - set(weights)), sorted(set(weights) - set(own))
        if missing or extra:
            raise ValueError(f"adapter does not fit this vlm policy: missing {missing[:3]} "
                             f"({len(missing)}), unexpected {extra[:3]} ({len(extra)})")
        for k, v in own.items():
            if tuple(weights[k].shape) != tuple(v.shape):
                raise ValueError(f"adapter tensor {k}: shape {tuple(weights[k].shape)}, "
                                 f"this policy has {tuple(v.shape)}")
        return own

    def save_adapter(self, directory: str | Path) -> Path:
        """PEFT ``save_pretrained``: ``adapter_config.json`` + ``adapter_model.safetensors``."""
        d = Path(directory)
        self.model.save_pretrained(str(d), safe_serialization=True)
        return d

    def load_adapter(self, directory: str | Path) -> None:
        """Load an adapter written by :meth:`save_adapter` (or any PEFT LoRA of the same
        rank, scale and targets on this base model)."""
        self.load_weights(self.read_adapter(directory))

    def read_adapter(self, directory: str | Path) -> dict[str, torch.Tensor]:
        """An adapter directory's weights, checked to fit this policy (rank, scale,
        targets, names and shapes) but not loaded: an inference server keeps several."""
        from peft import LoraConfig
        from peft.utils import load_peft_weights

        d = Path(directory)
        if not (d / "adapter_config.json").is_file():
            raise ConfigError(f"{d} holds no PEFT adapter (adapter_config.json missing)")
        try:
            theirs = LoraConfig.from_pretrained(str(d))
        except (OSError, ValueError, TypeError) as exc:
            raise ConfigError(f"{d}: not a LoRA adapter config ({exc})") from None
        ours = self.model.peft_config["default"]
        for name in ("r", "lora_alpha", "target_modules"):
            a, b = getattr(theirs, name), getattr(ours, name)
            if (sorted(a) if isinstance(a, set | list) else a) != (
                    sorted(b) if isinstance(b, set | list) else b):
                raise ConfigError(f"{d}: adapter {name}={a!r} but this policy has {b!r}")
        try:
            weights: dict[str, torch.Tensor] = load_peft_weights(str(d), device="cpu")
        except Exception as exc:  # a missing or corrupt safetensors file
            raise ConfigError(f"{d}: adapter weights unreadable ({exc})") from None
        try:
            self._check_fit(weights)
        except ValueError as exc:
            raise ConfigError(f"{d}: {exc}") from None
        return weights

    # ── acting ──────────────────────────────────────────────────────────────────────
    def encode_observation(self, o: Observation) -> dict[str, Any]:
        """``Decision.obs``: what the prompt is built from (the frame goes separately)."""
        return encode_observation(o, self.config.history_len)

    def decide(self, observations: Sequence[Observation], *, greedy: bool = False
               ) -> list[Decision]:
        if not observations:
            return []
        with self._lock:
            return self._decide(observations, greedy=greedy)

    def _decide(self, observations: Sequence[Observation], *, greedy: bool) -> list[Decision]:
        obs = [self.encode_observation(o) for o in observations]
        prompts = [format_prompt(o, self.config.action_prompt) for o in obs]
        done = self._complete(prompts, [o.screenshot_png for o in observations], greedy=greedy)
        decisions = []
        for o, ob, c in zip(observations, obs, done, strict=True):
            action = parse_action(c.text, elements=o.elements, screen=o.screen_size)
            decisions.append(Decision(action=action, log_prob=c.log_prob, obs=ob,
                                      choice=c.choice(), info={"entropy": c.entropy}))
        return decisions

    def complete(self, prompts: Sequence[str], frames: Sequence[bytes | None], *,
                 greedy: bool = False, max_new_tokens: int | None = None) -> list[Completion]:
        """Sample (or arg-max) a reply to each prompt text (``format_prompt``'s output)
        with its screenshot: what an inference server does for a chat completion. The
        log-probs are π's, scored by the same forward pass ``evaluate`` runs."""
        if len(prompts) != len(frames):
            raise ValueError("one frame (or None) per prompt")
        if not prompts:
            return []
        with self._lock:
            return self._complete(prompts, frames, greedy=greedy, max_new_tokens=max_new_tokens)

    def _complete(self, prompts: Sequence[str], frames: Sequence[bytes | None], *,
                  greedy: bool, max_new_tokens: int | None = None) -> list[Completion]:
        import torch

        images = [self._image(f) for f in frames]
        batch = self._layout(prompts, images, [[] for _ in prompts])
        sample = {"do_sample": True, "temperature": float(self.config.temperature),
                  "top_k": 0, "top_p": 1.0} if not greedy else {"do_sample": False}
        with torch.no_grad(), self._autocast(), self._vision.frames(frames):
            out = self.model.generate(
                **batch.inputs, max_new_tokens=max_new_tokens or self.config.max_new_tokens,
                pad_token_id=self.pad_id, eos_token_id=self.eos_id, repetition_penalty=1.0,
                suppress_tokens=self.banned_ids or None, **sample)
        new = out[:, batch.inputs["input_ids"].shape[1]:].tolist()
        choices: list[dict[str, Any]] = []
        for row in new:
            eos = self.eos_id in row
            ids = row[: row.index(self.eos_id)] if eos else row
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            choices.append({"text": text, "eos": eos, "ids": ids})
        with torch.no_grad():
            logp, ent, _, toks = self._score(prompts, images, choices, features=False,
                                             frames=frames, per_token=True)
        assert toks is not None
        return [Completion(text=ch["text"], eos=ch["eos"], ids=ch["ids"], log_prob=float(lp),
                           token_log_probs=tl, entropy=float(h))
                for ch, lp, h, tl in zip(choices, logp.tolist(), ent.tolist(), toks,
                                         strict=True)]

    def evaluate(self, steps: Sequence[StepRecord], *, grad: bool = True,
                 features: bool = True) -> PolicyOutput:
        """log π of each step's recorded choice under the current weights (differentiable
        through the LoRA adapter), the mean token entropy along it and the prompt's
        pooled last hidden state. ``grad=False``: no autograd graph (ratios, targets,
        priorities; ``no_grad`` rather than ``inference_mode``, so cached vision features
        stay usable by a later gradient pass). ``features=False``: no hidden states are
        kept (the gradient pass's memory) and ``features`` is ``[B, 0]``."""
        import torch

        if not grad:
            with torch.no_grad():
                return self.evaluate(steps, features=features)

        from distrl_sdk.learn.api import PolicyOutput

        if not steps:
            empty = torch.zeros(0, device=self.model.device)
            return PolicyOutput(log_prob=empty, entropy=empty,
                                features=torch.zeros(0, self.feature_dim, device=empty.device))
        obs, images = [], []
        for s in steps:
            _check_step(s.obs, s.choice)
            if s.obs["image"] and s.frame is None:
                raise ValueError("vlm step was decided on a screenshot but carries no frame "
                                 "(ship frames with VLM trajectories)")
            obs.append(s.obs)
            images.append(self._image(s.frame) if s.obs["image"] else None)
        prompts = [format_prompt(o, self.config.action_prompt) for o in obs]
        with self._lock:
            logp, ent, feats, _ = self._score(prompts, images, [s.choice for s in steps],
                                              features=features,
                                              frames=[s.frame if s.obs["image"] else None
                                                      for s in steps])
        if feats is None:
            feats = logp.new_zeros(len(steps), 0)
        return PolicyOutput(log_prob=logp, entropy=ent, features=feats)

    @property
    def vision_cache_stats(self) -> dict[str, int]:
        """Frames whose vision features came from the cache (hits) or were computed."""
        return {"hits": self._vision.hits, "misses": self._vision.misses,
                "frames": len(self._vision.store), "enabled": int(self._vision.enabled)}

    def instruction_features(self, instructions: Sequence[str]) -> torch.Tensor:
        """[B, D] mean last hidden state over a text-only prompt of the instruction."""
        import torch

        with self._lock, torch.no_grad():
            texts = [self._chat(f"Task: {i}", image=False) for i in instructions]
            enc = self.processor(text=texts, return_tensors="pt", padding=True)
            inputs = self._to_device(dict(enc))
            out = self.model(**inputs, position_ids=self._position_ids(inputs),
                             output_hidden_states=True, logits_to_keep=1)
        mask = inputs["attention_mask"].unsqueeze(-1).float()
        h: torch.Tensor = out.hidden_states[-1].float()
        pooled: torch.Tensor = (h * mask).sum(1) / mask.sum(1).clamp_min(1.0)
        return pooled

    # ── internals ───────────────────────────────────────────────────────────────────
    def _image(self, data: bytes | None) -> Image.Image | None:
        if data is None:
            return None
        from PIL import Image

        img = Image.open(io.BytesIO(data)).convert("RGB")
        side = self.config.image_max_side
        if side is not None and max(img.size) > side:
            scale = side / max(img.size)
            img = img.resize((max(1, round(img.width * scale)), max(1, round(img.height * scale))),
                             Image.Resampling.BILINEAR)
        return img

    def _chat(self, text: str, *, image: bool) -> str:
        for special in self._special_strings:  # "<image>" typed in an instruction stays text
            text = text.replace(special, f"{special[0]}\u200b{special[1:]}")
        content: list[dict[str, str]] = [{"type": "image"}] if image else []
        content.append({"type": "text", "text": text})
        messages = [{"role": "user", "content": content}]
        out = self.processor.apply_chat_template(messages, add_generation_prompt=True,
                                                 tokenize=False)
        return str(out)

    def _choice_ids(self, choice: Mapping[str, Any]) -> list[int]:
        """The tokens scored: the generated ids when recorded (exactly what was sampled),
        else the text's encoding (hand-made choices); EOS appended if generation stopped."""
        raw = choice.get("ids")
        if raw is not None:
            vocab = len(self._allowed)
            if not isinstance(raw, list) or not all(
                    isinstance(i, int) and not isinstance(i, bool) and 0 <= i < vocab
                    and self._allowed[i] for i in raw):
                raise ValueError("vlm choice ids are not plain-text token ids of this model")
            ids: list[int] = list(raw)
        else:
            # special-token strings in text stay text: image slots are the processor's
            ids = list(self.tokenizer(str(choice["text"]), add_special_tokens=False,
                                      split_special_tokens=True)["input_ids"])
        return [*ids, self.eos_id] if choice.get("eos", True) else ids

    def _to_device(self, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        dev, dtype = self.model.device, self.model.dtype
        return {k: (v.to(dev, dtype=dtype) if v.is_floating_point() else v.to(dev))
                if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}

    def _layout(self, prompts: Sequence[str], images: Sequence[Image.Image | None],
                choice_ids: Sequence[list[int]]) -> _Batch:
        """Processor on the prompts, then each row's prompt tokens + its choice tokens
        re-padded on the left as one sequence (choices end-aligned), with per-token
        processor outputs (e.g. Qwen2-VL's mm_token_type_ids) carried along."""
        import torch

        texts = [self._chat(p, image=img is not None)
                 for p, img in zip(prompts, images, strict=True)]
        present = [img for img in images if img is not None]
        enc = dict(self.processor(text=texts, images=present or None, return_tensors="pt",
                                  padding=True))
        ids, mask = enc.pop("input_ids"), enc.pop("attention_mask").bool()
        b, p = ids.shape
        per_token = [k for k, v in enc.items()
                     if isinstance(v, torch.Tensor) and tuple(v.shape[:2]) == (b, p)]
        lens = [int(mask[i].sum()) + len(c) for i, c in enumerate(choice_ids)]
        seq_len = max(lens)
        new_ids = torch.full((b, seq_len), self.pad_id, dtype=ids.dtype)
        new_mask = torch.zeros((b, seq_len), dtype=torch.long)
        prompt_mask = torch.zeros((b, seq_len), dtype=torch.long)
        extra = {k: torch.zeros((b, seq_len, *enc[k].shape[2:]), dtype=enc[k].dtype)
                 for k in per_token}
        for i, c in enumerate(choice_ids):
            start, n = seq_len - lens[i], len(c)
            prompt = ids[i][mask[i]]
            new_ids[i, start:] = torch.cat([prompt, torch.tensor(c, dtype=ids.dtype)])
            new_mask[i, start:] = 1
            prompt_mask[i, start: seq_len - n] = 1
            for k in per_token:
                extra[k][i, start: seq_len - n] = enc[k][i][mask[i]]
        inputs = {**enc, **extra, "input_ids": new_ids, "attention_mask": new_mask}
        return _Batch(self._to_device(inputs), [len(c) for c in choice_ids],
                      prompt_mask.to(self.model.device))

    def _position_ids(self, inputs: dict[str, Any]) -> Any:
        """What ``generate`` would use for these left-padded rows (model-specific: Llama
        counts non-pad tokens, Qwen2-VL builds 3-D rope positions)."""
        base = self.model.get_base_model()
        prep = getattr(base, "_prepare_position_ids_for_generation", None)
        if prep is not None:
            return prep(inputs["input_ids"], dict(inputs))
        mask = inputs["attention_mask"]
        return (mask.long().cumsum(-1) - 1).clamp_min(0)

    def _autocast(self) -> Any:
        import contextlib

        import torch

        if self._autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.model.device.type, dtype=self._autocast_dtype)

    def _checkpointing(self) -> Any:
        """With gradient checkpointing on and gradients enabled: the decoder layers (and
        only them, not their dropout-carrying children) in training mode, which is
        what makes transformers checkpoint them; restored afterwards."""
        import contextlib

        import torch

        @contextlib.contextmanager
        def scope() -> Any:
            if not (self.config.gradient_checkpointing and torch.is_grad_enabled()):
                yield
                return
            layers = [m for m in self.model.modules()
                      if getattr(m, "gradient_checkpointing", False) is True
                      and isinstance(m, torch.nn.Module)]
            for m in layers:
                m.training = True  # not m.train(): that would recurse into dropouts
            try:
                yield
            finally:
                for m in layers:
                    m.training = False
        return scope()

    def _score(self, prompts: Sequence[str], images: Sequence[Image.Image | None],
               choices: Sequence[Mapping[str, Any]], *, features: bool,
               frames: Sequence[bytes | None] | None = None, per_token: bool = False
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None,
                          list[list[float]] | None]:
        """Sum (or mean, ``logprob_reduction``) of log π over each choice's tokens, their
        mean entropy, (optionally) the prompt's mean last hidden state and (``per_token``)
        each choice token's log π, EOS included — one forward pass for the batch."""
        import torch

        cids = [self._choice_ids(c) for c in choices]
        batch = self._layout(prompts, images, cids)
        inputs = batch.inputs
        k = max(batch.choice_len) + 1  # logits at the last k positions predict the choices
        with self._autocast(), self._vision.frames(frames), self._checkpointing():
            out = self.model(**inputs, position_ids=self._position_ids(inputs),
                             output_hidden_states=features, logits_to_keep=k,
                             use_cache=False)
        logits = out.logits[:, -k:-1].float() / float(self.config.temperature)
        allowed = torch.tensor(self._allowed, device=logits.device)
        logp_all = torch.log_softmax(logits.masked_fill(~allowed, -math.inf), dim=-1)
        targets = inputs["input_ids"][:, -(k - 1):] if k > 1 else inputs["input_ids"][:, :0]
        tok_logp = logp_all.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # [B, k-1]
        tok_ent = -(logp_all.exp() * logp_all.masked_fill(~allowed, 0.0)).sum(-1)
        n = torch.tensor(batch.choice_len, device=tok_logp.device)
        pos = torch.arange(k - 1, device=tok_logp.device)
        on = pos.unsqueeze(0) >= (k - 1) - n.unsqueeze(1)  # choice tokens only
        # where() not a product: prompt targets (image slots …) have log-prob -inf
        logp = torch.where(on, tok_logp, 0.0).sum(-1)
        if self.config.logprob_reduction == "mean":
            logp = logp / on.sum(-1).clamp_min(1)
        ent = torch.where(on, tok_ent, 0.0).sum(-1) / on.sum(-1).clamp_min(1)
        feats = None
        if features:
            pm = batch.prompt_mask.unsqueeze(-1).float()
            h = out.hidden_states[-1].float()
            feats = (h * pm).sum(1) / pm.sum(1).clamp_min(1.0)
        toks = None
        if per_token:
            rows = tok_logp.detach().float().tolist()
            toks = [r[len(r) - m:] if m else [] for r, m in zip(rows, batch.choice_len,
                                                                strict=True)]
        return logp, ent, feats, toks


class _VisionCache:
    """Per-frame vision features (the vision tower + projector's output for one image),
    keyed by the frame's SHA-256: installed in place of the base model's
    ``get_image_features``, so the model's own forward and ``generate`` use it. Off when
    any parameter on the vision path trains (its features would go stale) or the model
    has no ``get_image_features`` of the known layouts (LLaVA: one image per row of
    ``pixel_values``; Qwen2-VL: patches split by ``image_grid_thw``)."""

    def __init__(self, peft_model: Any, capacity: int) -> None:
        from collections import OrderedDict

        self.capacity, self.hits, self.misses = capacity, 0, 0
        self.store: OrderedDict[str, Any] = OrderedDict()
        self._keys: list[str] | None = None
        inner: Any = getattr(peft_model.get_base_model(), "model", None)
        original: Any = getattr(inner, "get_image_features", None)
        vision_trains = inner is not None and any(
            p.requires_grad for name, child in inner.named_children()
            if name != "language_model" for p in child.parameters())
        self.enabled = capacity > 0 and original is not None and not vision_trains
        self._original: Any = original
        if self.enabled:
            import inspect

            def features(*args: Any, **kwargs: Any) -> Any:
                return self._features(*args, **kwargs)

            # generate() picks the encoder's inputs by its signature: keep the original's
            features.__signature__ = inspect.signature(original)  # type: ignore[attr-defined]
            inner.get_image_features = features

    def frames(self, frames: Sequence[bytes | None] | None) -> Any:
        """While scoring/generating a batch: the keys of its images, in order."""
        import contextlib
        import hashlib

        @contextlib.contextmanager
        def scope() -> Any:
            self._keys = None if frames is None or not self.enabled else [
                hashlib.sha256(f).hexdigest() for f in frames if f is not None]
            try:
                yield
            finally:
                self._keys = None
        return scope()

    def _features(self, pixel_values: Any, *args: Any, **kwargs: Any) -> Any:
        import torch
        from transformers.modeling_outputs import BaseModelOutputWithPooling

        keys = self._keys
        grid = kwargs.get("image_grid_thw", args[0] if args else None)
        if keys is None or kwargs.get("image_sizes") is not None:
            return self._original(pixel_values, *args, **kwargs)
        if grid is not None:  # Qwen2-VL: flattened patches, image i owns prod(grid[i])
            sizes = grid.prod(-1).tolist()
            if len(sizes) != len(keys):
                return self._original(pixel_values, *args, **kwargs)
            parts = list(torch.split(pixel_values, sizes))
        else:  # LLaVA: one image per row
            if pixel_values.shape[0] != len(keys):
                return self._original(pixel_values, *args, **kwargs)
            parts = list(pixel_values.split(1))
        first = {k: i for i, k in reversed(list(enumerate(keys)))}  # a frame twice: once
        missing = [i for k, i in first.items() if k not in self.store]
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        if missing:
            sub = torch.cat([parts[i] for i in missing])
            rest = dict(kwargs)
            if grid is not None:
                rest["image_grid_thw"] = grid[missing]
                args = ()
            with torch.no_grad():  # the vision path is frozen: features are constants
                pooled = self._original(sub, *args, **rest).pooler_output
            for i, feat in zip(missing, pooled, strict=True):
                self.store[keys[i]] = feat.detach()
        out = []
        for k in keys:
            self.store.move_to_end(k)
            out.append(self.store[k])
        while len(self.store) > self.capacity:
            self.store.popitem(last=False)
        # the models' forward reads only pooler_output, a per-image list (not a tensor)
        return BaseModelOutputWithPooling(pooler_output=out)  # type: ignore[arg-type]


def _load_base(cfg: VLMConfig) -> tuple[Any, Any]:
    """The base model + processor: the tiny builder, or a local checkpoint directory."""
    if cfg.tiny is not None:
        from distrl_sdk.policies.tiny import TinyVLMConfig, build_tiny_vlm

        model, processor = build_tiny_vlm(TinyVLMConfig.from_dict(dict(cfg.tiny)),
                                          corpus=cfg.action_prompt)
        if cfg.dtype not in ("float32", "auto"):  # e.g. to try bfloat16 paths on a CPU
            import torch

            model.to(getattr(torch, cfg.dtype))
    else:
        assert cfg.model_path is not None
        path = Path(cfg.model_path).expanduser()
        if not (path / "config.json").is_file():
            raise ConfigError(
                f"vlm policy: {path} is not a Hugging Face model directory (no config.json); "
                "download one where there is internet (huggingface-cli download "
                "<repo> --local-dir DIR) and point model_path at DIR")
        import torch
        import transformers

        tf: Any = transformers  # the Auto classes' loaders are untyped

        kwargs: dict[str, Any] = {"local_files_only": True,
                                  "trust_remote_code": cfg.trust_remote_code}
        processor = tf.AutoProcessor.from_pretrained(str(path), **kwargs)
        if cfg.attn_implementation:
            kwargs["attn_implementation"] = cfg.attn_implementation
        dtype = "auto" if cfg.dtype == "auto" else getattr(torch, cfg.dtype)
        try:
            model = tf.AutoModelForImageTextToText.from_pretrained(str(path), dtype=dtype, **kwargs)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"vlm policy: cannot load {path} as an image-text-to-text "
                              f"model ({exc})") from exc
    model.to(cfg.device)
    model.eval()
    return model, processor



def write_adapter(weights: Mapping[str, torch.Tensor], config: Mapping[str, Any] | VLMConfig,
                  directory: str | Path) -> Path:
    """Write a LoRA adapter (``weights()``' tensors, PEFT key names) in PEFT's
    ``save_pretrained`` layout without a model at hand: ``adapter_config.json`` from the
    policy's config and ``adapter_model.safetensors``. The learner does this for each
    version it hands to an inference server (vLLM's ``load_lora_adapter`` reads this
    layout); :meth:`VLMPolicy.load_adapter` reads it back."""
    from peft import LoraConfig
    from safetensors.torch import save_file

    cfg = config if isinstance(config, VLMConfig) else VLMConfig.from_dict(config)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    targets = cfg.lora_target_modules
    lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                      bias="none", base_model_name_or_path=cfg.model_path,
                      target_modules=targets if isinstance(targets, str) else list(targets))
    tmp = d / "adapter_model.safetensors.tmp"
    save_file({k: v.detach().contiguous().cpu() for k, v in weights.items()}, str(tmp),
              metadata={"format": "pt"})
    tmp.replace(d / "adapter_model.safetensors")
    lora.save_pretrained(str(d))  # adapter_config.json, written last: the dir is complete
    return d
