"""Resume is exact or refused: a finished run is left alone, and a setting that differs from the checkpoint's is
either applied and named, or refused naming it.

Why: transformers restores the optimizer, scheduler, RNG and data position from a checkpoint and builds everything
else from the new recipe, without comparing the two. A changed ``learning_rate`` is then ignored (the scheduler's
saved ``base_lrs`` win), a changed batch skips the wrong number of batches, changed rewards change the curve in
mid-run, and a run resumed after it finished trains one step past ``max_steps`` and overwrites its model.

The rule, per field (``docs/training.md``, "Resuming"):

- **applied, and named in one line**: ``max_steps``/``num_train_epochs`` (extend or shorten a run; the learning-rate
  schedule of the remaining steps is that of a run of the new length) and the bookkeeping fields in
  :data:`APPLIED` (logging, saving, trackers, timeouts), which change no number the run computes;
- **ignored**: where the run is (``output_dir``, the resume flag itself, ...; :data:`IGNORED`);
- **refused, naming each field and its class**: everything else: the optimizer (``learning_rate``, ...), the
  schedule's shape, the rewards, the model, the batch, the data, the loss and the sampling. Refusing is the default,
  so a field added later cannot be half-applied silently.

The settings travel inside each checkpoint's ``trainer_state.json`` (a stateful callback, written with the state
itself; :mod:`gdpo_trl.run.recipe_record`), so they are read before the model loads.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

from gdpo_trl.core.errors import GDPOError, InputError
from gdpo_trl.run.fingerprints import SOURCE_KEYS, changed_sources, source_fingerprints
from gdpo_trl.storage.final_model import settle_final_model

logger = logging.getLogger("gdpo_trl.run.resume_settings")

RECORD_NAME = "RecipeRecord"  # the callback's class name: its key in trainer_state.json's stateful_callbacks

# Changes a resume applies in full (and names). The length of the run first: its schedule follows the new length.
LENGTH = ("max_steps", "num_train_epochs")
APPLIED = (
    *LENGTH,
    "logging_steps", "logging_strategy", "logging_first_step", "logging_nan_inf_filter", "log_level",
    "log_level_replica", "log_on_each_node", "log_completions", "num_completions_to_print", "wandb_log_unique_prompts",
    "disable_tqdm", "report_to", "project", "trackio_space_id", "save_steps", "save_strategy", "save_total_limit",
    "save_on_each_node", "save_safetensors", "reward_timeout", "tool_timeout", "cpu_threads", "dataloader_num_workers",
    "dataloader_prefetch_factor", "dataloader_persistent_workers", "push_to_hub", "hub_model_id", "hub_strategy",
    "hub_private_repo", "include_num_input_tokens_seen", "skip_memory_metrics",
)  # fmt: skip
# Fields that say where and how this invocation runs, not what the run is.
IGNORED = (
    "output_dir", "resume_from_checkpoint", "overwrite_output_dir", "logging_dir", "run_name", "hub_token",
    "push_to_hub_token", "debug", "local_rank", "deepspeed", "fsdp", "fsdp_config", "accelerator_config",
    "ddp_backend", "ddp_timeout", "use_cpu", "restore_callback_states_from_checkpoint", "model_init_kwargs",
    "resume_with_changed_sources", *SOURCE_KEYS,  # the sources are compared on their own (changed_sources)
)  # fmt: skip
# The class each refused field is named with (any other refused field is "other").
CLASSES = {
    "optimizer": (
        "learning_rate", "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon", "max_grad_norm", "optim",
        "optim_args", "optim_target_modules",
    ),
    "schedule": ("lr_scheduler_type", "lr_scheduler_kwargs", "warmup_ratio", "warmup_steps"),
    "rewards": (
        "reward_funcs", "reward_weights", "reward_weights_final", "reward_kwargs", "reward_conditions",
        "multi_objective_aggregation", "scale_rewards", "gdpo_batch_norm",
    ),
    "model": (
        "model_name_or_path", "model_revision", "dtype", "use_peft", "lora_r", "lora_alpha", "lora_dropout",
        "lora_target_modules", "lora_modules_to_save", "lora_task_type", "use_rslora", "use_dora",
        "attn_implementation", "load_in_8bit", "load_in_4bit",
    ),
    "batch": (
        "per_device_train_batch_size", "num_generations", "gradient_accumulation_steps", "steps_per_generation",
        "generation_batch_size",
    ),
    "data": (
        "dataset_name", "dataset_path", "dataset_config", "dataset_train_split", "max_train_samples", "synthetic_size",
        "synthetic_seed", "system_prompt", "seed", "data_seed",
    ),
}  # fmt: skip


class RunFinished(GDPOError):
    """Resuming a run that already reached its last step: nothing to do (not an error; ``gdpo train`` exits 0)."""


def json_safe(value):
    """``value`` as it reads back from JSON (tuples become lists, enums and other objects their ``str``)."""
    return json.loads(json.dumps(value, default=str))


def recipe_record(script_args, training_args, model_args) -> dict:
    """Every field of the three parsed dataclasses, JSON-safe: what a checkpoint remembers of its run's recipe."""
    record = {}
    for args in (model_args, script_args):
        record.update({f.name: getattr(args, f.name) for f in dataclasses.fields(args)})
    record.update(training_args.to_dict())  # masks tokens; the training fields win a shared name
    record.update(source_fingerprints(script_args))  # each reward's source file and each data file, by SHA-256
    return json_safe({k: v for k, v in record.items() if not k.startswith("_")})


def read_state(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def saved_record(checkpoint: Path) -> dict | None:
    """The recipe a checkpoint was saved with, or None (saved by a version of gdpo-trl that did not record it)."""
    state = read_state(checkpoint / "trainer_state.json") or {}
    entry = (state.get("stateful_callbacks") or {}).get(RECORD_NAME)
    entry = entry[-1] if isinstance(entry, list) and entry else entry
    return ((entry or {}).get("args") or {}).get("recipe") if isinstance(entry, dict) else None


def class_of(name: str) -> str:
    return next((kind for kind, names in CLASSES.items() if name in names), "other")


def changed_fields(saved: dict, now: dict) -> list[tuple[str, object, object]]:
    """``(field, saved value, new value)`` for every field recorded on both sides that differs, in record order."""
    return [(k, saved[k], now[k]) for k in saved if k in now and k not in IGNORED and saved[k] != now[k]]


def describe(changes: list[tuple[str, object, object]], with_class: bool) -> str:
    def one(name, old, new):
        kind = f" ({class_of(name)})" if with_class else ""
        return f"{name} {old!r} -> {new!r}{kind}"

    return ", ".join(one(*c) for c in changes)


def planned_steps(training_args, state: dict) -> int | None:
    """How many optimizer steps the resumed run will end at: ``max_steps``, or (training by epochs) the count the
    checkpoint's run computed, when the epochs are unchanged."""
    if training_args.max_steps > 0:
        return training_args.max_steps
    return state.get("max_steps") if isinstance(state.get("max_steps"), int) and state.get("max_steps") > 0 else None


def check_not_finished(output_dir: Path, checkpoint: Path, training_args) -> None:
    """Raise :class:`RunFinished` when the run already reached the step it would train to.

    The step reached is the checkpoint's, or that of the final ``trainer_state.json`` a finished run writes at the
    top of ``output_dir`` (its last checkpoint may be older than its last step).
    """
    saved = read_state(checkpoint / "trainer_state.json")
    states = [s for s in (saved, read_state(output_dir / "trainer_state.json")) if s]
    reached = max((s.get("global_step", 0) for s in states), default=0)
    target = planned_steps(training_args, states[0] if states else {})
    if target is None or reached < target:
        return
    # A finished run's final model is checked against what it saved (gdpo_trl.storage.final_model) before it is trusted.
    step, main = (saved or {}).get("global_step", 0), getattr(training_args, "process_index", 0) == 0
    settled = settle_final_model(output_dir, checkpoint, step, reached, main)
    if settled == "retrain":
        return
    model = "its model is in output_dir" if (output_dir / "config.json").is_file() else f"its model is in {checkpoint}"
    changed = (
        f"only its final model was restored from {checkpoint.name}" if settled == "restored" else "nothing changed"
    )
    raise RunFinished(
        f"the run in {str(output_dir)!r} already reached step {reached} of max_steps={target}; nothing to train and "
        f"{changed} ({model}). To train further, raise --max_steps."
    )


def check_sources(folder: Path, saved: dict, now: dict, accepted: bool) -> None:
    """Refuse a resume whose reward files or data files changed since ``folder`` was saved, naming each, unless the
    recipe says so (``resume_with_changed_sources``): then one line says what the run goes on with."""
    changes = changed_sources(saved, now)
    if not changes:
        return
    if accepted:
        logger.warning(
            "Resuming from %s with changed sources, as resume_with_changed_sources asks: %s; the steps from here on "
            "are trained with them (the new fingerprints are recorded).",
            folder.name,
            "; ".join(changes),
        )
        return
    raise InputError(
        f"resume_from_checkpoint: {folder.name} was trained with other code or data: {'; '.join(changes)}. A resume "
        "would go on with rewards or rows the run did not start with: start over (--overwrite_output_dir true, or a "
        "new --output_dir), or say so with --resume_with_changed_sources true."
    )


def check_resume_settings(checkpoint: str | None, script_args, training_args, model_args) -> list[str]:
    """Before the model loads: stop a finished run, refuse changed settings that a resume cannot apply exactly, and
    name the changes it applies (see the module docstring for which are which). Returns the applied fields."""
    if checkpoint is None:
        return []
    folder = Path(checkpoint)
    check_not_finished(Path(training_args.output_dir), folder, training_args)
    saved = saved_record(folder)
    if saved is None:
        logger.warning(
            "Resuming from %s, which records no recipe (saved by an older gdpo-trl): changed settings cannot be "
            "checked; resume with the run's own recipe.",
            folder.name,
        )
        return []
    now = recipe_record(script_args, training_args, model_args)
    check_sources(folder, saved, now, getattr(script_args, "resume_with_changed_sources", False))
    changes = changed_fields(saved, now)
    refused = [c for c in changes if c[0] not in APPLIED]
    if refused:
        raise InputError(
            f"resume_from_checkpoint: {folder.name} was trained with other settings: {describe(refused, True)}. A "
            "resume continues a run exactly as it was set up and cannot apply these: resume with the run's own "
            f"values, or train a new run from this checkpoint (--model_name_or_path {folder} and a new --output_dir)."
        )
    if changes:
        length = " (the learning rates of the remaining steps are those of a run of the new length)"
        logger.warning(
            "Resuming from %s with changed settings, applied from step %s on: %s%s.",
            folder.name,
            (read_state(folder / "trainer_state.json") or {}).get("global_step", 0) + 1,
            describe(changes, False),
            length if any(c[0] in LENGTH for c in changes) else "",
        )
    return [c[0] for c in changes]
