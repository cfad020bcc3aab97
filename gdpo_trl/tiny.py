"""A tiny Qwen2-architecture causal LM and character-level tokenizer, built locally from a config.

Why: the Hub is out of reach on CPU CI machines and in offline demos, and no package ships a small pretrained causal
LM. A character-level tokenizer needs no training data, makes every digit a token of its own (so arithmetic answers
are easy to produce), and the four GDPO tags are single tokens, so a policy can learn the format in a few steps.

``resolve_model("builtin:tiny")`` builds (once, cached on disk) and returns a path that ``from_pretrained`` loads
like any Hub model; a path is needed rather than an in-memory model because TRL reloads the reference model from it
when ``beta > 0``.
"""

from __future__ import annotations

import hashlib
import json
import os
import string
from pathlib import Path

BUILTIN_PREFIX = "builtin:"
TAGS = ["<think>", "</think>", "<answer>", "</answer>"]
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# A ChatML template (the format Qwen2.5 uses), written for this tokenizer.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
# Architectures by name: small enough to train a GRPO step in well under a second on one CPU core.
ARCHITECTURES = {
    "tiny": dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2
    ),
    "small": dict(
        hidden_size=128, intermediate_size=384, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2
    ),
    "base": dict(
        hidden_size=256, intermediate_size=768, num_hidden_layers=6, num_attention_heads=8, num_key_value_heads=4
    ),
}


def build_tokenizer():
    """A ``PreTrainedTokenizerFast`` over printable ASCII characters, with ChatML special tokens and the GDPO tags."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = sorted(set(string.printable) - set("\x0b\x0c\r"))
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS + ["<unk>"] + TAGS + chars)}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")  # one token per character
    backend.decoder = decoders.Fuse()  # join characters back without spaces
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
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
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        **ARCHITECTURES[architecture],
    )
    torch.manual_seed(seed)
    return Qwen2ForCausalLM(config)


def cache_dir() -> Path:
    """Where built models are kept: ``$GDPO_TRL_CACHE``, else ``~/.cache/gdpo_trl``."""
    return Path(os.environ.get("GDPO_TRL_CACHE", Path.home() / ".cache" / "gdpo_trl"))


def save_tiny_model(path: str | os.PathLike, architecture: str = "tiny", seed: int = 0) -> Path:
    """Build a tokenizer and model and save both to ``path`` (a folder ``from_pretrained`` can load)."""
    path = Path(path)
    tokenizer = build_tokenizer()
    model = build_model(tokenizer, architecture, seed)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    model.generation_config.save_pretrained(path)
    return path


def _build_id(name: str, architecture: str, seed: int) -> str:
    # Key the cache on what determines the weights, plus this file's contents, so an edit here rebuilds.
    recipe = json.dumps([name, architecture, seed, Path(__file__).read_text()])
    return hashlib.sha1(recipe.encode()).hexdigest()[:10]


def resolve_model(name_or_path: str) -> str:
    """Return a loadable path for ``name_or_path``.

    ``builtin:tiny`` (or ``builtin:small``, ``builtin:base``, optionally ``@seed``, e.g. ``builtin:tiny@3``) builds the
    random-initialized model on first use and caches it; ``builtin:warmstart`` resolves to the SFT warm start when
    that module is available. Anything else (a Hub id or a local path) is returned unchanged.
    """
    if not name_or_path.startswith(BUILTIN_PREFIX):
        return name_or_path
    name = name_or_path[len(BUILTIN_PREFIX) :]
    architecture, _, seed = name.partition("@")
    if architecture not in ARCHITECTURES:
        raise ValueError(
            f"Unknown built-in model {name_or_path!r}: use one of "
            f"{[BUILTIN_PREFIX + a for a in sorted(ARCHITECTURES)]}, optionally with '@<seed>'."
        )
    seed = int(seed or 0)
    target = cache_dir() / f"{architecture}-seed{seed}-{_build_id(name, architecture, seed)}"
    if not (target / "config.json").exists():
        # Build next to the target and rename, so an interrupted build never leaves a half-written model behind
        # and two processes building at once both end with a complete folder.
        tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
        save_tiny_model(tmp, architecture, seed)
        try:
            tmp.rename(target)
        except OSError:  # another process won the race
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    return str(target)
