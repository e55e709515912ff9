"""A tiny random LLaVA (CLIP vision tower + Llama text model) and its processor, built
in code from configs and a word-level tokenizer: no hub, no files, ~50k parameters."""

from __future__ import annotations

from typing import Any

# the words the model can say; some of them make verdicts, so random output may parse
WORDS = ["<pad>", "<s>", "</s>", "<unk>", "<image>", "Status:", "success", "failure", "yes",
         "no", "the", "screen", "shows", "task", "is", "done", "not", ".", "Task:", "Q:"]

CHAT_TEMPLATE = (
    "{% for m in messages %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<image> {% else %}{{ c['text'] }} {% endif %}"
    "{% endfor %}{% endfor %}"
)


def build_tiny_llava(seed: int = 0) -> tuple[Any, Any]:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import (
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    try:
        from transformers import CLIPImageProcessorPil as ImageProcessor  # no torchvision
    except ImportError:  # transformers < 5
        from transformers import CLIPImageProcessor as ImageProcessor  # type: ignore[assignment]

    vocab = {w: i for i, w in enumerate(WORDS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    tok.add_special_tokens(["<pad>", "<s>", "</s>", "<unk>", "<image>"])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>",
                                        bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    processor = LlavaProcessor(
        image_processor=ImageProcessor(size={"shortest_edge": 32},
                                       crop_size={"height": 32, "width": 32}),
        tokenizer=tokenizer, patch_size=16, vision_feature_select_strategy="default",
        chat_template=CHAT_TEMPLATE, image_token="<image>", num_additional_image_tokens=1)
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=16, intermediate_size=32,
                                       num_hidden_layers=1, num_attention_heads=2,
                                       image_size=32, patch_size=16, projection_dim=16),
        text_config=LlamaConfig(vocab_size=len(WORDS), hidden_size=16, intermediate_size=32,
                                num_hidden_layers=1, num_attention_heads=2,
                                num_key_value_heads=2, max_position_embeddings=512,
                                pad_token_id=0, bos_token_id=1, eos_token_id=2),
        image_token_index=vocab["<image>"], vision_feature_select_strategy="default",
        vision_feature_layer=-1)
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config).eval()
    return model, processor
