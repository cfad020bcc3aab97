"""Checks of a ``gdpo train`` run's inputs that need no model, plus one that needs only the tokenizer.

Each raises :class:`~gdpo_trl.core.errors.InputError` with a one-line message naming the culprit and the fix, so that a
bad recipe fails in seconds instead of after the model is built, or after hours of training on garbage.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

from gdpo_trl.core.config_checks import check_weight_counts
from gdpo_trl.core.errors import InputError, no_chat_template
from gdpo_trl.run.output_checks import check_output_dir
from gdpo_trl.storage.local_paths import missing_folder_line
from gdpo_trl.storage.weight_files import model_folder_problem, nonfinite_weights, scannable

logger = logging.getLogger("gdpo_trl.run.checks")


def fit_to_machine(training_args, model_args) -> None:
    """Adapt what a GPU recipe asks for and this machine cannot give, saying so in a warning line each.

    - ``attn_implementation: flash_attention_2`` without a CUDA device (or with ``use_cpu``): PyTorch's ``sdpa``,
      the same attention computed another way (flash-attn cannot run on a CPU).
    - ``report_to`` naming a tracker that is not installed (``wandb`` in the paper's recipes): left out, so a run
      tried on another machine does not die at the first log line; ``pip install wandb`` brings it back.
    """
    import torch

    if model_args.attn_implementation == "flash_attention_2" and (
        training_args.use_cpu or not torch.cuda.is_available()
    ):
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
    check_weight_counts(script_args.reward_funcs, training_args)
    check_output_dir(script_args, training_args, model_args)  # writable, room on disk, overwrite keeps inputs


def check_model_source(name: str | None) -> None:
    """A missing model name, or a local path (absolute, relative with ./ or ../, or ~) that is no folder."""
    if not name:
        raise InputError("model_name_or_path is not set: give a Hub id, a local folder or 'builtin:tiny'.")
    folder = Path(name).expanduser()
    unconverted = folder.is_dir() and not (folder / "config.json").exists() and any(folder.glob("*.gguf"))
    if folder.suffix.lower() == ".gguf" or unconverted:
        return  # a GGUF checkpoint: checked and converted by its entry point (gdpo_trl.models.gguf) when resolved
    if line := missing_folder_line(name):  # looks local (./, outputs/, a/b/c) and is not there: before any Hub lookup
        raise InputError(line)
    folder = Path(name).expanduser()
    model_files = ("config.json", "adapter_config.json", "model.safetensors", "model.safetensors.index.json")
    if folder.is_dir() and not any((folder / f).is_file() for f in model_files):
        # transformers would fail later, trying to build a tokenizer, with a message about sentencepiece.
        inside = sorted(p.name for p in folder.iterdir())[:5]
        raise InputError(
            f"model_name_or_path {name!r} is a folder without a model (no config.json; it holds {inside or 'nothing'}): "
            "give the folder a run saved its model to (its output_dir), a checkpoint-N folder, or a Hub id."
        )
    if folder.is_dir():
        check_model_folder(folder, name)


def check_model_folder(folder: Path, name: str) -> None:
    """A local model folder whose config or weights are damaged (:func:`gdpo_trl.storage.weight_files.
    model_folder_problem`): transformers would fail while loading, after the tokenizer and data, with a 36-68-line
    traceback."""
    problem = model_folder_problem(folder)
    if problem:
        raise InputError(f"model_name_or_path {name!r}: {problem}, or give another model.")
    # NaN/inf weights train to NaN losses, then fail in sampling with a 74-line traceback; a big model is checked
    # once loaded (check_loaded_weights).
    if scannable(folder) and (found := nonfinite_weights(folder)):
        raise InputError(nonfinite_refusal(name, found))


def nonfinite_refusal(name: str, found: str) -> str:
    return (
        f"model_name_or_path {name!r}: {found} (a run that diverged, or damaged weights): train from an earlier "
        "checkpoint or another model."
    )


def check_loaded_weights(model, model_path: str) -> None:
    """A local model too big to scan before loading (:func:`check_model_folder`): its parameters, once loaded."""
    from gdpo_trl.storage.weight_files import nonfinite_parameter

    folder = Path(model_path).expanduser()
    if folder.is_dir() and not scannable(folder) and (found := nonfinite_parameter(model, folder)):
        raise InputError(nonfinite_refusal(model_path, found))


def check_chat_template(dataset, tokenizer, model_path: str, source: str | None = None) -> None:
    """Conversational prompts need the tokenizer's chat template; without one TRL fails at the first batch. The
    reverse is warned about, for the user's own rows (``source``: a file, folder or Hub id, not a named source of
    the package): text prompts go to a model that has a chat template as they are (TRL's standard format), so an
    instruct model is never shown a chat turn; before, a run of such a CSV rambled, every reward near 0, with only
    "(text)" in the data line to tell."""
    if not len(dataset) or "prompt" not in getattr(dataset, "column_names", ["prompt"]):
        return
    text = isinstance(dataset[0]["prompt"], str)
    if not text and not getattr(tokenizer, "chat_template", None):
        raise InputError(no_chat_template(model_path))
    if text and getattr(tokenizer, "chat_template", None) and own_rows(source) and os.environ.get("RANK", "0") == "0":
        warnings.warn(
            f"the prompts of {source!r} are text and {model_path} has a chat template: TRL gives the model text "
            "prompts as they are, without the template, so an instruct model sees no chat turn. Write each prompt "
            'as chat messages ([{"role": "user", "content": ...}]), or set system_prompt, which makes each text '
            "prompt a chat of it and the text; keep them text for a base model.",
            UserWarning,
            stacklevel=1,  # this file's: gdpo train prints the package's warnings as one line
        )


def own_rows(source: str | None) -> bool:
    """Whether ``source`` names the user's own rows (a file, a folder, a Hub id) rather than a named source."""
    from gdpo_trl.data.sources import find_source

    return isinstance(source, str) and find_source(source) is None


def check_rewards(reward_funcs: list, training_args, **trainer_kwargs):
    """The run's rewards prepared, once, as the trainer calls them
    (:func:`gdpo_trl.trainer.reward_pipeline.prepare_rewards`: conditions, process rewards and the settings they
    need, with ``trainer_kwargs`` such as ``environment_factory``, the checked wrappers), before the model and the
    rows load, so that a mistake fails in seconds (preparing calls no reward). Returns the
    :class:`~gdpo_trl.trainer.reward_pipeline.PreparedRewards`, which checks the rows once they load and which
    ``GDPOTrainer`` takes as it is."""
    from gdpo_trl.trainer.reward_pipeline import prepare_rewards

    try:
        return prepare_rewards(list(reward_funcs), training_args, **trainer_kwargs)
    except InputError:
        raise
    except ValueError as error:  # process rewards' settings (GD2PO, GSPO, ...), a ValueError from the trainer
        raise InputError(str(error)) from None
