"""A tiny Qwen2-architecture causal LM and character-level tokenizer, built locally from a config.

Why: the Hub is out of reach on CPU CI machines and in offline demos, and no package ships a small pretrained causal
LM. A character-level tokenizer needs no training data, makes every digit a token of its own (so arithmetic answers
are easy to produce), and the four GDPO tags are single tokens, so a policy can learn the format in a few steps.

``resolve_model("builtin:tiny")`` builds (once, cached on disk) and returns a path that ``from_pretrained`` loads
like any Hub model; a path is needed rather than an in-memory model because TRL reloads the reference model from it
when ``beta > 0``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
import json
import os
import shutil
import string
from pathlib import Path

BUILTIN_PREFIX = "builtin:"
WARMSTART = "warmstart"  # builtin:warmstart, the SFT warm start of gdpo_trl.demo.warmstart
TOOLCALL_WARMSTART = "toolcall_warmstart"  # builtin:toolcall_warmstart, of gdpo_trl.demo.toolcall_task
# Built-in models trained with SFT on first use -> the module that builds one (`python -m MODULE PATH --seed N
# --threads N`, writing warmstart.json with its build_seconds) and holds its recipe.
WARM_STARTS = {WARMSTART: "gdpo_trl.demo.warmstart", TOOLCALL_WARMSTART: "gdpo_trl.demo.toolcall_task"}
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
    # The warm start's size (gdpo_trl.demo.warmstart): three layers learn to copy numbers from the question within a
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


def _build_id(*recipe) -> str:
    """A short key for a cache folder: a hash of the recipe (whatever determines the weights: architecture, seed,
    SFT settings), the tokenizer's vocabulary and :data:`BUILD_VERSION`. Not the name as spelled ("tiny" and "tiny@0"
    are one model), and not the code: editing a docstring must not cost every user a rebuild."""
    vocabulary = [SPECIAL_TOKENS, TAGS, CHAT_TEMPLATE]
    return hashlib.sha1(json.dumps([BUILD_VERSION, vocabulary, *recipe], default=str).encode()).hexdigest()[:10]


def _cached_build(target: Path, build) -> Path:
    """Return ``target``, first running ``build(tmp_path)`` and renaming the result into place if it is missing.

    Building next to the target and renaming means an interrupted build never leaves a half-written model behind, and
    two processes building at once both end with a complete folder. Where ``fcntl`` exists, a lock file also makes a
    second process wait for the first build instead of repeating it (the warm start takes a minute to train).
    """
    if (target / "config.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _build_lock(target.with_name(f"{target.name}.lock")):
        if not (target / "config.json").exists():  # the process we waited for may have built it
            tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
            try:
                build(tmp)
                if not (tmp / "config.json").exists() or not any(tmp.glob("*.safetensors")):
                    raise RuntimeError(f"Building {target.name} wrote no complete model to {tmp}.")
            except BaseException:  # a failed or interrupted build leaves nothing behind
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            try:
                tmp.rename(target)
            except OSError:  # another process won the race (only possible without fcntl)
                shutil.rmtree(tmp, ignore_errors=True)
    return target


@contextlib.contextmanager
def _build_lock(path: Path):
    """Hold an exclusive lock on ``path`` (created if missing) for the ``with`` block."""
    try:
        import fcntl
    except ImportError:  # Windows: no lock; the rename above still keeps the cache consistent
        yield
        return
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# Set by torchrun/accelerate launchers; a child process that inherited them would try to join the parent's job.
_LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT")


def _run_isolated(args: list[str], what: str, *, show_output: bool = False) -> None:
    """Run ``python ARGS`` in a child process without the launcher's variables (see the callers for why).

    With ``show_output`` the child's output (a progress bar) goes to this process's stderr as it comes; either way
    the end of it is in the error raised when the child fails.
    """
    import subprocess
    import sys
    from collections import deque

    env = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_VARS and not k.startswith("ACCELERATE_")}
    # Make this copy of the package importable in the child even when it is not installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parents[2]), env.get("PYTHONPATH")]))
    command = [sys.executable, *args]
    tail: deque[bytes] = deque(maxlen=64)
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as child:
        while chunk := child.stdout.read1(4096):
            tail.append(chunk)
            if show_output:
                sys.stderr.buffer.write(chunk)
                sys.stderr.flush()
    if child.returncode != 0:
        output = b"".join(tail).decode(errors="replace")[-4000:]
        raise RuntimeError(f"Building {what} failed ({' '.join(command)}):\n{output}")


def _build_warm_start_isolated(path: Path, name: str, seed: int) -> None:
    """Build warm start ``name`` (a key of :data:`WARM_STARTS`) in a child process, showing its progress.

    Why not in this process: SFT training creates accelerate's process-wide state (``use_cpu=True``), which would stick
    to a later GRPO/GDPO trainer in the same process, and under a multi-process launcher (``RANK``/``WORLD_SIZE`` set)
    it would wait for the other ranks to join a training they are not running. The child gets neither. It uses as
    many torch threads as this process (e.g. the recipe's ``cpu_threads``).
    """
    import sys

    import torch

    threads = torch.get_num_threads()
    records = [json.loads(p.read_text()) for p in cache_dir().glob(f"{name}-seed*/warmstart.json")]
    previous = [record["build_seconds"] for record in records if "build_seconds" in record]
    estimate = (
        f"the last build here took {max(previous):.0f} s" if previous else "a progress bar with time left follows"
    )
    print(
        f"Building builtin:{name}@{seed} once for this machine ({threads} torch thread(s); {estimate}). Later runs "
        f"and the tests reuse it from {path.parent}.",
        file=sys.stderr,
        flush=True,
    )
    args = ["-m", WARM_STARTS[name], str(path), "--seed", str(seed), "--threads", str(threads)]
    _run_isolated(args, f"builtin:{name}", show_output=True)


def _build_tiny(path: Path, architecture: str, seed: int) -> None:
    """Build a random tiny model, in a child process when torch.distributed is running.

    Why: under torch.distributed, transformers' ``save_pretrained`` writes weights on rank 0 only, so a rank that
    wins the build race would leave a folder without a model.
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        code = (
            f"from gdpo_trl.demo.tiny import save_tiny_model; save_tiny_model({str(path)!r}, {architecture!r}, {seed})"
        )
        _run_isolated(["-c", code], f"builtin:{architecture}")
    else:
        save_tiny_model(path, architecture, seed)


def resolve_model(name_or_path: str) -> str:
    """Return a loadable path for ``name_or_path``.

    ``builtin:tiny`` (``mini``, ``small``, ``base``; ``@seed`` optional: ``builtin:tiny@3``): a random model, built once
    and cached; ``builtin:warmstart``, ``builtin:toolcall_warmstart`` (``@seed`` too): the SFT warm starts of
    :data:`WARM_STARTS` (minutes on a CPU); ``builtin:qwen2.5-tiny``, ``-0.5b``, ``-1.5b``: :mod:`gdpo_trl.demo.qwen`.
    """
    if not name_or_path.startswith(BUILTIN_PREFIX):
        return name_or_path
    name = name_or_path[len(BUILTIN_PREFIX) :]
    if name.startswith("qwen2.5-"):  # Qwen2.5's real tokenizer
        return importlib.import_module("gdpo_trl.demo.qwen").resolve_qwen(name)
    architecture, _, seed = name.partition("@")
    if architecture not in WARM_STARTS and architecture not in ARCHITECTURES:
        choices = [BUILTIN_PREFIX + a for a in sorted([*ARCHITECTURES, *WARM_STARTS])]
        raise ValueError(f"Unknown built-in model {name_or_path!r}: use one of {choices}, optionally with '@<seed>'.")
    seed = int(seed or 0)
    if architecture in WARM_STARTS:
        recipe = _warm_start_recipe(architecture)
        build_id = _build_id(architecture, dataclasses.asdict(recipe), ARCHITECTURES[recipe.architecture], seed)
        target = cache_dir() / f"{architecture}-seed{seed}-{build_id}"
        return str(_cached_build(target, lambda tmp: _build_warm_start_isolated(tmp, architecture, seed)))
    target = cache_dir() / f"{architecture}-seed{seed}-{_build_id(ARCHITECTURES[architecture], seed)}"
    return str(_cached_build(target, lambda tmp: _build_tiny(tmp, architecture, seed)))


def _warm_start_recipe(name: str):
    """The default recipe of warm start ``name``: with the seed, it determines the weights (hence the cache key)."""
    if name == TOOLCALL_WARMSTART:
        from gdpo_trl.demo.toolcall_task import ToolcallRecipe

        return ToolcallRecipe()
    from gdpo_trl.demo.warmstart import Recipe

    return Recipe()
