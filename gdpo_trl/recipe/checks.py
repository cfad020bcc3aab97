"""Checks of a ``gdpo train`` run's inputs that need no model, plus one that needs only the tokenizer.

Each raises :class:`~gdpo_trl.core.errors.InputError` with a one-line message naming the culprit and the fix, so that a
bad recipe fails in seconds instead of after the model is built, or after hours of training on garbage.
"""

from __future__ import annotations

import logging
from pathlib import Path

from gdpo_trl.core.errors import InputError
from gdpo_trl.recipe.names import resolve_recipe
from gdpo_trl.recipe.output_checks import check_output_dir

logger = logging.getLogger("gdpo_trl.recipe.checks")

# Config keys where a model stores how many positions it has, most common first.
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")


def check_recipe_yaml(argv: list[str]) -> None:
    """A ``--config`` YAML that does not parse fails naming the file, line and column (PyYAML names neither file).

    ``--config`` with no value (last, or followed by another flag) is an error too: TrlParser would fail with an
    ``IndexError`` traceback, or read the next flag as the file name.
    """
    if "--config" not in argv:
        return
    if argv.index("--config") + 1 >= len(argv) or argv[argv.index("--config") + 1].startswith("--"):
        raise InputError("--config needs a recipe file or name: gdpo train --config cpu/gdpo (`gdpo recipes list`)")
    import yaml

    path = Path(resolve_recipe(argv[argv.index("--config") + 1]))  # a file, or a shipped recipe's name
    try:
        config = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = getattr(error, "problem", None) or str(error)
        raise InputError(f"recipe {where}: YAML syntax error: {problem}") from None
    if config is not None and not isinstance(config, dict):
        raise InputError(f"recipe {path}: must be a mapping of field: value, got a {type(config).__name__}.")


def fit_to_machine(training_args, model_args) -> None:
    """Adapt what a GPU recipe asks for and this machine cannot give, saying so in a warning line each.

    - ``attn_implementation: flash_attention_2`` without a CUDA device (or with ``use_cpu``): PyTorch's ``sdpa``,
      the same attention computed another way (flash-attn cannot run on a CPU).
    - ``report_to`` naming a tracker that is not installed (``wandb`` in the paper's recipes): left out, so a run
      tried on another machine does not die at the first log line; ``pip install wandb`` brings it back.
    """
    import torch

    if model_args.attn_implementation == "flash_attention_2" and (training_args.use_cpu or not torch.cuda.is_available()):
        logger.warning("attn_implementation: flash_attention_2 needs a CUDA GPU; using sdpa on this machine.")
        model_args.attn_implementation = "sdpa"
    requested = [name for name in (training_args.report_to or []) if name not in ("none", "all")]
    if requested:
        from transformers.integrations import get_available_reporting_integrations

        available = set(get_available_reporting_integrations())
        missing = [name for name in requested if name not in available]
        if missing:
            logger.warning(
                "report_to: %s not installed here, so this run does not report to %s (pip install %s to keep it).",
                ", ".join(missing), "it" if len(missing) == 1 else "them", " ".join(missing),
            )  # fmt: skip
            training_args.report_to = [name for name in requested if name in available]  # [] reports nowhere


def check_recipe(script_args, training_args, model_args) -> None:
    """The checks across the three parsed dataclasses that need no model (each checks its own fields in
    ``__post_init__``): the model source, vLLM installed, one weight per reward."""
    check_model_source(model_args.model_name_or_path)
    if training_args.use_vllm:
        from trl.import_utils import is_vllm_available  # looks the package up without importing it

        if not is_vllm_available():
            raise InputError(
                "use_vllm is true but vLLM is not installed: `pip install gdpo-trl[vllm]`, or set `use_vllm: false` "
                "(generation then runs in transformers, slower)."
            )
    num_rewards = len(script_args.reward_funcs or [])
    for name in ("reward_weights", "reward_weights_final"):
        weights = getattr(training_args, name, None)
        if weights is not None and len(weights) != num_rewards:
            raise InputError(
                f"{name} has {len(weights)} weights for {num_rewards} reward functions {script_args.reward_funcs}: "
                "give one per reward, in the same order."
            )
    check_output_dir(script_args, training_args, model_args)  # writable, room on disk, overwrite keeps inputs


def check_model_source(name: str | None) -> None:
    """A missing model name, or a local path (absolute, relative with ./ or ../, or ~) that is no folder."""
    if not name:
        raise InputError("model_name_or_path is not set: give a Hub id, a local folder or 'builtin:tiny'.")
    if name.startswith(("/", "./", "../", "~")) and not Path(name).expanduser().is_dir():
        raise InputError(f"model_name_or_path {name!r} is not a folder: give a saved model's folder or a Hub id.")
    folder = Path(name).expanduser()
    model_files = ("config.json", "adapter_config.json", "model.safetensors", "model.safetensors.index.json")
    if folder.is_dir() and not any((folder / f).is_file() for f in model_files):
        # transformers would fail later, trying to build a tokenizer, with a message about sentencepiece.
        inside = sorted(p.name for p in folder.iterdir())[:5]
        raise InputError(
            f"model_name_or_path {name!r} is a folder without a model (no config.json; it holds {inside or 'nothing'}): "
            "give the folder a run saved its model to (its output_dir), a checkpoint-N folder, or a Hub id."
        )


def check_rewards(reward_funcs: list, training_args) -> None:
    """Apply ``reward_conditions`` to the built reward functions once, as the trainer will, so an unknown name fails
    before the model is loaded (wrapping is pure: nothing is called)."""
    from gdpo_trl.rewards.conditioned import apply_reward_conditions

    apply_reward_conditions(list(reward_funcs), getattr(training_args, "reward_conditions", None))


def model_context(model_path: str) -> int | None:
    """How many positions the model at ``model_path`` has (None when its config does not say)."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model_path)
    config = getattr(config, "text_config", None) or config
    return next((getattr(config, key) for key in CONTEXT_KEYS if isinstance(getattr(config, key, None), int)), None)


def prompt_lengths(prompts: list, tokenizer) -> list[int]:
    """Token counts of ``prompts`` as the trainer will feed them (chat template and generation prompt applied)."""
    if prompts and not isinstance(prompts[0], str):
        ids = tokenizer.apply_chat_template(prompts, add_generation_prompt=True, tokenize=True)
        ids = ids["input_ids"] if hasattr(ids, "keys") else ids  # transformers 5 returns a BatchEncoding
    else:
        ids = tokenizer(prompts, add_special_tokens=False)["input_ids"]
    return [len(x) for x in ids]


def check_prompt_lengths(dataset, tokenizer, model_path: str, max_completion_length: int) -> None:
    """Error when any prompt plus ``max_completion_length`` tokens exceeds the model's positions.

    Such prompts make generation run past the model's context: garbage positions, and on a small model a run many
    times slower, with only a tokenizer warning in the log. The message names how many prompts and the longest.
    """
    context = model_context(model_path)
    if context is None:
        return
    lengths = prompt_lengths(list(dataset["prompt"]), tokenizer)
    budget = context - (max_completion_length or 0)
    too_long = [i for i, n in enumerate(lengths) if n > budget]
    if too_long:
        longest = max(too_long, key=lengths.__getitem__)
        raise InputError(
            f"{len(too_long)} of {len(lengths)} prompts do not fit the model: the longest (row {longest}) has "
            f"{lengths[longest]} tokens, and with max_completion_length={max_completion_length} the limit is "
            f"{max(budget, 0)} of the model's {context} positions. Drop or shorten them, or lower "
            "max_completion_length."
        )
