"""Tiny random image-text-to-text models built entirely in code: tests and CPU demos.

``build_tiny_vlm(TinyVLMConfig(seed=0))`` returns a LLaVA-architecture model (a CLIP
vision tower + a Llama text model, ~60k parameters) and its processor — no hub, no
files; ``arch="qwen2_vl"`` a Qwen2-VL one (3-D rope positions, merged vision patches,
``mm_token_type_ids``), so code meant for "any image-text-to-text model" meets two
rather different ones. Everything is a pure function of the config: two
processes building the same config get bit-identical weights and tokenizers, which is
what lets a farm worker rebuild the learner's policy from ``config_dict()`` and load
only the LoRA adapter on top.

The tokenizer is byte-level BPE (any text encodes, so instructions and the model's own
output round-trip) whose merges are derived deterministically from the action-schema
prompt: a JSON action costs ~23 tokens instead of ~45 bytes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Final

from distrl_sdk.errors import ConfigError

__all__ = ["ARCHS", "CHAT_TEMPLATE", "SPECIAL_TOKENS", "TinyVLMConfig", "build_tiny_vlm"]

ARCHS: Final = ("llava", "qwen2_vl")
PAD, BOS, EOS, IMAGE = "<pad>", "<s>", "</s>", "<image>"
SPECIAL_TOKENS: Final = (PAD, BOS, EOS, IMAGE, "<|system|>", "<|user|>", "<|assistant|>")

# One turn per message; an image part becomes the processor's image placeholder.
CHAT_TEMPLATE: Final = (
    "{% for m in messages %}<|{{ m['role'] }}|>"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<image>{% else %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


# What a farm builds from a pointer: far above any test model's sizes, and a forged config
# cannot make a farm build a large one.
_SIZE_MAX: Final = {"hidden_size": 1024, "intermediate_size": 4096, "num_layers": 16,
                    "num_heads": 64, "vision_hidden_size": 1024, "image_size": 1024,
                    "patch_size": 256, "vision_layers": 16, "vision_heads": 64}


@dataclass(frozen=True)
class TinyVLMConfig:
    """The tiny model's architecture; every field is part of it."""

    arch: str = "llava"  # "llava" (CLIP + Llama) or "qwen2_vl" (Qwen2-VL: 3-D rope, merged patches)
    seed: int = 0  # torch seed for the random weights
    hidden_size: int = 32  # text model width (= the policy's feature dimension)
    intermediate_size: int = 64  # text model MLP width
    num_layers: int = 2  # text decoder layers
    num_heads: int = 4  # text attention heads (hidden_size must divide by it)
    vision_hidden_size: int = 16  # vision tower width
    image_size: int = 32  # screens become image_size² (llava) / that many pixels (qwen2_vl)
    patch_size: int = 16  # vision patch side; qwen2_vl merges 2×2 patches per token
    vision_layers: int = 1  # vision tower blocks (Qwen2-VL-2B's has 32: bench/gpu_vlm_step.py)
    vision_heads: int = 2  # vision attention heads (vision_hidden_size must divide by it)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TinyVLMConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"tiny model config: unknown key(s) {unknown} "
                              f"(known: {sorted(known)})")
        sizes = {k: v for k, v in d.items() if k != "arch"}
        try:
            cfg = cls(arch=str(d.get("arch", "llava")), **{k: int(v) for k, v in sizes.items()})
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"tiny model config: sizes must be integers ({exc})") from exc
        if cfg.arch not in ARCHS:
            raise ConfigError(f"tiny model config: arch {cfg.arch!r} is not one of {ARCHS}")
        if min(cfg.hidden_size, cfg.intermediate_size, cfg.num_layers, cfg.num_heads,
               cfg.vision_hidden_size, cfg.image_size, cfg.patch_size, cfg.vision_layers,
               cfg.vision_heads) < 1:
            raise ConfigError("tiny model config: sizes must be positive")
        step = cfg.patch_size * (2 if cfg.arch == "qwen2_vl" else 1)
        if cfg.vision_hidden_size % cfg.vision_heads:
            raise ConfigError("tiny model config: vision_hidden_size must divide by "
                              "vision_heads")
        if cfg.hidden_size % cfg.num_heads or cfg.image_size % step:
            raise ConfigError(f"tiny model config: hidden_size must divide by num_heads and "
                              f"image_size by {step} (patch_size, ×2 for qwen2_vl)")
        if cfg.arch == "qwen2_vl" and (cfg.hidden_size // cfg.num_heads) < 6:
            raise ConfigError("tiny model config: qwen2_vl needs a head size ≥ 6 (3-D rope)")
        return cfg

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def check_bounds(self) -> None:
        """Raise ``ConfigError`` when a size is beyond what a farm builds from a policy
        pointer (a local build, e.g. bench/gpu_vlm_step.py at 2B size, is not bounded)."""
        too_big = {k: v for k, v in self.to_dict().items() if k in _SIZE_MAX and v > _SIZE_MAX[k]}
        if too_big:
            raise ConfigError(f"tiny model config: {too_big} above the test model's bounds "
                              f"{ {k: _SIZE_MAX[k] for k in too_big} }")


def _tokenizer(corpus: str, extra_special: tuple[str, ...] = ()) -> Any:
    """Byte-level BPE whose merges spell out every pre-token of ``corpus`` (in order of
    first appearance): deterministic, no training run, no files."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
    specials = [*SPECIAL_TOKENS, *extra_special]
    vocab: dict[str, int] = {t: i for i, t in enumerate(specials)}
    for ch in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab.setdefault(ch, len(vocab))
    merges: list[tuple[str, str]] = []
    for piece, _ in byte_level.pre_tokenize_str(corpus):
        for i in range(2, len(piece) + 1):
            if piece[:i] not in vocab:
                merges.append((piece[: i - 1], piece[i - 1]))
                vocab[piece[:i]] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = byte_level
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(specials)
    fast: Any = transformers.PreTrainedTokenizerFast  # untyped in transformers
    return fast(tokenizer_object=tok, pad_token=PAD, bos_token=BOS,
                                   eos_token=EOS, unk_token=None, padding_side="left")


def build_tiny_vlm(config: TinyVLMConfig, corpus: str = "") -> tuple[Any, Any]:
    """A random tiny model of ``config.arch`` and its processor (image processor +
    tokenizer + chat template), identical for identical ``(config, corpus)``. ``corpus``
    seeds the tokenizer's merges (the VLM policy passes its action-schema prompt)."""
    import torch

    build = _qwen2_vl if config.arch == "qwen2_vl" else _llava
    with torch.random.fork_rng(devices=[]):  # leave the caller's RNG alone
        torch.manual_seed(config.seed)
        model, processor = build(config, corpus)
    return model.eval(), processor


def _llava(c: TinyVLMConfig, corpus: str) -> tuple[Any, Any]:
    import transformers
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig

    tf: Any = transformers  # its processor/model constructors are untyped
    # the PIL image processor needs no torchvision (transformers ≥ 5)
    image_processor = getattr(tf, "CLIPImageProcessorPil", None) or tf.CLIPImageProcessor
    tokenizer = _tokenizer(corpus)
    vocab = tokenizer.get_vocab()
    processor = tf.LlavaProcessor(
        image_processor=image_processor(size={"shortest_edge": c.image_size},
                                        crop_size={"height": c.image_size, "width": c.image_size}),
        tokenizer=tokenizer, patch_size=c.patch_size, vision_feature_select_strategy="default",
        chat_template=CHAT_TEMPLATE, image_token=IMAGE, num_additional_image_tokens=1)
    model_config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=c.vision_hidden_size, intermediate_size=2 * c.vision_hidden_size,
            num_hidden_layers=c.vision_layers, num_attention_heads=c.vision_heads,
            image_size=c.image_size,
            patch_size=c.patch_size, projection_dim=c.vision_hidden_size),
        text_config=LlamaConfig(
            vocab_size=len(vocab), hidden_size=c.hidden_size,
            intermediate_size=c.intermediate_size, num_hidden_layers=c.num_layers,
            num_attention_heads=c.num_heads, num_key_value_heads=c.num_heads,
            max_position_embeddings=4096, pad_token_id=vocab[PAD], bos_token_id=vocab[BOS],
            eos_token_id=vocab[EOS]),
        image_token_index=vocab[IMAGE], vision_feature_select_strategy="default",
        vision_feature_layer=-1)
    return tf.LlavaForConditionalGeneration(model_config), processor


QWEN_SPECIAL: Final = ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
QWEN_CHAT_TEMPLATE: Final = CHAT_TEMPLATE.replace(
    "<image>", "<|vision_start|><|image_pad|><|vision_end|>")


def _qwen2_vl(c: TinyVLMConfig, corpus: str) -> tuple[Any, Any]:
    import transformers

    tf: Any = transformers

    class Processor(tf.Qwen2VLProcessor):  # type: ignore[misc]
        """Images only: Qwen2-VL's video processor needs torchvision, which we lack."""

        def check_argument_for_proper_class(self, name: str, arg: Any) -> Any:
            if arg is None and name == "video_processor":
                return None
            return super().check_argument_for_proper_class(name, arg)

    tokenizer = _tokenizer(corpus, extra_special=QWEN_SPECIAL)
    vocab = tokenizer.get_vocab()
    image_processor = tf.Qwen2VLImageProcessorPil(
        min_pixels=c.image_size ** 2, max_pixels=c.image_size ** 2, patch_size=c.patch_size,
        merge_size=2, temporal_patch_size=2)
    processor = Processor(image_processor=image_processor, tokenizer=tokenizer,
                          chat_template=QWEN_CHAT_TEMPLATE)
    half = c.hidden_size // c.num_heads // 2  # rotary pairs, split over (t, h, w)
    t = max(1, half // 4)
    mrope = [t, (half - t) // 2, half - t - (half - t) // 2]
    model_config = tf.Qwen2VLConfig(
        text_config={
            "vocab_size": len(vocab), "hidden_size": c.hidden_size,
            "intermediate_size": c.intermediate_size, "num_hidden_layers": c.num_layers,
            "num_attention_heads": c.num_heads, "num_key_value_heads": c.num_heads,
            "max_position_embeddings": 4096, "pad_token_id": vocab[PAD],
            "bos_token_id": vocab[BOS], "eos_token_id": vocab[EOS],
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                "mrope_section": mrope}},
        vision_config={"depth": c.vision_layers, "embed_dim": c.vision_hidden_size,
                       "hidden_size": c.hidden_size, "num_heads": c.vision_heads,
                       "patch_size": c.patch_size, "spatial_merge_size": 2,
                       "temporal_patch_size": 2, "in_channels": 3},
        image_token_id=vocab["<|image_pad|>"], video_token_id=vocab["<|video_pad|>"],
        vision_start_token_id=vocab["<|vision_start|>"],
        vision_end_token_id=vocab["<|vision_end|>"])
    return tf.Qwen2VLForConditionalGeneration(model_config), processor
