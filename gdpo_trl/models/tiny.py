"""A tiny Qwen2-architecture causal LM and character-level tokenizer, built locally from a config.

Why: the Hub is out of reach on CPU CI machines and in offline demos, and no package ships a small pretrained causal
LM. A character-level tokenizer needs no training data, makes every digit a token of its own (so arithmetic answers
are easy to produce), and the four GDPO tags are single tokens, so a policy can learn the format in a few steps.

``resolve_model("builtin:tiny")`` (:mod:`gdpo_trl.core.plugins`, through :mod:`gdpo_trl.models.builtins`) builds
them once, caches them on disk and returns a path that ``from_pretrained`` loads like any Hub model; a path is needed
rather than an in-memory model because TRL reloads the reference model from it when ``beta > 0``.
"""

from __future__ import annotations

import os
import string
from pathlib import Path

TAGS = ["<think>", "</think>", "<answer>", "</answer>"]
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# A ChatML template (the format Qwen2.5 uses), written for this tokenizer.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
# Part of every cache key. Bump it with any code change that changes built weights without changing a recipe (the
# tokenizer or model builder here, the traces or problem generator, the SFT loop): caches then rebuild.
BUILD_VERSION = 2
# Architectures by name: small enough to train a GRPO step in well under a second on one CPU core.
ARCHITECTURES = {
    "tiny": dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2
    ),
    # The warm start's size (gdpo_trl.tasks.warmstart): three layers learn to copy numbers from the question within a
    # minute of CPU training, where two layers often do not.
    "mini": dict(
        hidden_size=64, intermediate_size=192, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2
    ),
    "small": dict(
        hidden_size=128, intermediate_size=384, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2
    ),
    "base": dict(
        hidden_size=256, intermediate_size=768, num_hidden_layers=6, num_attention_heads=8, num_key_value_heads=4
    ),
    # What vLLM's CPU backend can load: head size 32 (its attention needs >= 32) and untied embeddings (a weight
    # reload leaves tied ones stale). Used by the vLLM tests and recipes/cpu/vllm_*.
    "vllm": dict(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        tie_word_embeddings=False,
    ),
}


def build_tokenizer():
    """A character-level ``Qwen2Tokenizer`` over printable ASCII, with ChatML special tokens and the GDPO tags.

    Why a ``Qwen2Tokenizer`` (byte-level BPE with no merges) rather than a plain character vocabulary: transformers 5's
    ``AutoTokenizer`` loads every ``model_type == "qwen2"`` folder as ``Qwen2Tokenizer``, whatever ``tokenizer.json``
    says, and that class re-creates its own byte-level pre-tokenizer. A plain vocabulary then silently loses spaces and
    newlines on reload (they become the byte symbols ``Ġ``/``Ċ``, which it lacks), so training and RL would see
    different text. Written in the byte-level alphabet, the vocabulary tokenizes the same either way: with no merges,
    every character is one token. Characters outside the vocabulary (non-ASCII) are dropped.
    """
    from tokenizers import pre_tokenizers
    from transformers import Qwen2Tokenizer

    chars = sorted(set(string.printable) - set("\x0b\x0c\r"))
    # Each character as the byte-level pre-tokenizer writes it (" " -> "Ġ", "\n" -> "Ċ"; printable ASCII unchanged).
    to_symbol = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    symbols = [to_symbol.pre_tokenize_str(char)[0][0] for char in chars]
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS + ["<unk>"] + TAGS + symbols)}
    tokenizer = Qwen2Tokenizer(
        vocab=vocab,
        merges=[],
        unk_token="<unk>",
        pad_token="<|endoftext|>",
        eos_token="<|im_end|>",
        bos_token=None,
        additional_special_tokens=SPECIAL_TOKENS[1:],
        chat_template=CHAT_TEMPLATE,
    )
    # The tags are ordinary (non-special) added tokens: matched whole, but kept when decoding with
    # skip_special_tokens, so rewards see them in the completion text.
    tokenizer.add_tokens(TAGS)
    return tokenizer


def build_model(tokenizer, architecture: str = "tiny", seed: int = 0):
    """A randomly initialized ``Qwen2ForCausalLM`` sized by ``ARCHITECTURES[architecture]``."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    if architecture not in ARCHITECTURES:
        raise ValueError(f"Unknown tiny architecture {architecture!r}; choose one of {sorted(ARCHITECTURES)}.")
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        max_position_embeddings=2048,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        **{"tie_word_embeddings": True, **ARCHITECTURES[architecture]},  # tied unless the entry says not
    )
    torch.manual_seed(seed)
    return Qwen2ForCausalLM(config)


def save_tiny_model(path: str | os.PathLike, architecture: str = "tiny", seed: int = 0) -> Path:
    """Build a tokenizer and model and save both to ``path`` (a folder ``from_pretrained`` can load)."""
    path = Path(path)
    tokenizer = build_tokenizer()
    model = build_model(tokenizer, architecture, seed)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    model.generation_config.save_pretrained(path)
    return path
