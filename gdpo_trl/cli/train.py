"""``gdpo-train``: GDPO (or GRPO) fine-tuning on GSM8K-style data, configured by a TRL-style YAML recipe.

Usage::

    gdpo-train --config recipes/cpu/gdpo/config.yaml                  # one process
    gdpo-train --config recipes/cpu/gdpo/config.yaml --max_steps 2    # flags override the YAML
    accelerate launch --config_file accelerate_configs/zero3.yaml -m gdpo_trl.cli.train \\
        --config recipes/Qwen2.5-1.5B-Instruct/gdpo/config.yaml     # 8 GPUs, DeepSpeed ZeRO-3

The YAML holds flat keys of three dataclasses: :class:`GDPOScriptArguments` (data and rewards), ``GDPOConfig``
(training) and TRL's ``ModelConfig`` (model and LoRA), plus an optional ``env:`` block of environment variables.
Run ``gdpo-train --help`` for every field.
"""

from __future__ import annotations

import difflib
import json
import logging
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from trl import ModelConfig, ScriptArguments, TrlParser

from gdpo_trl.checkpoints import prepare_run
from gdpo_trl.cli.errors import cli_errors, input_stage
from gdpo_trl.config import GDPOConfig
from gdpo_trl.validation import check_prompt_lengths, check_recipe, check_recipe_yaml, check_rewards

logger = logging.getLogger("gdpo_trl.train")

# Columns every dataset must have after loading: GRPO generates from `prompt`, the correctness reward reads `answer`.
REQUIRED_COLUMNS = ("prompt", "answer")
# Values of `resume_from_checkpoint` that mean "the last checkpoint in output_dir" rather than a path.
RESUME_LAST = {"true", "last", "yes", "1"}
RESUME_NEVER = {"", "false", "no", "0", "none"}


@dataclass
class GDPOScriptArguments(ScriptArguments):
    """Data and reward arguments of ``gdpo-train``, on top of TRL's ``ScriptArguments``.

    To resume, use the training argument ``resume_from_checkpoint`` (it already exists in ``TrainingArguments``, so
    it cannot be declared here): ``true`` resumes from the last checkpoint in ``output_dir``, a path from that
    checkpoint.
    """

    reward_funcs: list[str] = field(
        default_factory=lambda: ["format", "correctness", "integer"],
        metadata={
            "help": "Reward functions, in order (their weights follow the same order in `reward_weights`): registry "
            "names ('format', 'correctness', 'integer') or dotted import paths such as 'my_pkg.rewards.my_fn'."
        },
    )
    reward_kwargs: dict[str, Any] | str | None = field(
        default=None,
        metadata={
            "help": "Keyword arguments per reward function, bound when it is built: "
            '{reward name: {argument: value}}, e.g. {"length": {"max_tokens": 256}}. A JSON string on the '
            "command line."
        },
    )
    dataset_name: str = field(
        default="openai/gsm8k",
        metadata={
            "help": "GSM8K-shaped training data: a Hub dataset id (with `dataset_config` and `dataset_train_split`), "
            "a local dataset folder, a local .json/.jsonl/.parquet file with `question` and `answer` columns, "
            "'sample' (the small GSM8K-style sample shipped with gdpo-trl), 'synthetic' (generated offline, see "
            "`synthetic_size`) or 'warmstart' (generated problems of the kind builtin:warmstart was trained on, none "
            "of them seen in its SFT)."
        },
    )
    dataset_config: str | None = field(
        default="main",
        metadata={"help": "Hub dataset configuration ('main' or 'socratic' for GSM8K). Ignored for local files."},
    )
    synthetic_size: int = field(
        default=1000,
        metadata={"help": "Number of problems generated when `dataset_name` is 'synthetic'."},
    )
    synthetic_seed: int = field(
        default=0,
        metadata={"help": "Seed of the problem generator when `dataset_name` is 'synthetic'."},
    )
    max_train_samples: int | None = field(
        default=None,
        metadata={"help": "Keep only the first N training examples (quick runs and debugging). Default: all."},
    )
    cpu_threads: int | None = field(
        default=None,
        metadata={
            "help": "Intra-op CPU threads for torch (`torch.set_num_threads`); default: torch's choice. The CPU "
            "recipe uses 1: a tiny model gains nothing from more, and on a busy machine threads waiting for each "
            "other made it many times slower."
        },
    )


@cli_errors("gdpo-train")
def main(argv: list[str] | None = None) -> None:
    """Parse the recipe and flags, train, save the model and print a before/after summary of the rewards."""
    check_recipe_yaml(argv)
    with input_stage("recipe"):
        script_args, training_args, model_args = parse_args(argv)
    check_recipe(script_args, training_args, model_args)
    setup_logging(training_args)
    set_threads(script_args.cpu_threads)
    set_seed(training_args.seed)

    # Everything that can be checked without loading a model is checked first, so a bad recipe fails in seconds.
    check_vllm(training_args)
    reward_funcs = build_reward_funcs(script_args)
    check_rewards(reward_funcs, training_args)
    checkpoint = prepare_run(training_args)
    # The main process goes first: it builds or caches the model and data, and the other ranks then read its files
    # instead of racing to write the same ones.
    with (
        input_stage("model or dataset", OSError),
        training_args.main_process_first(local=False, desc="model and dataset"),
    ):
        model_path = resolve_model_path(model_args)
        train_dataset = load_dataset_for(script_args)
    check_columns(train_dataset, script_args.dataset_name)

    tokenizer = load_tokenizer(model_path, model_args, training_args)
    check_prompt_lengths(train_dataset, tokenizer, model_path, training_args.max_completion_length)
    configure_model_loading(training_args, model_args)
    trainer = build_trainer(model_path, reward_funcs, training_args, train_dataset, tokenizer, model_args)

    trainer.train(resume_from_checkpoint=checkpoint)
    save(trainer, training_args.output_dir)
    print_summary(trainer, training_args.output_dir)


# --- arguments ---------------------------------------------------------------------------------------------------

DATACLASSES = (GDPOScriptArguments, GDPOConfig, ModelConfig)


def parse_args(argv: list[str] | None = None) -> tuple[GDPOScriptArguments, GDPOConfig, ModelConfig]:
    """Parse ``--config`` YAML and command-line flags (flags win) into the three dataclasses.

    Unknown YAML keys and unknown flags raise a ``ValueError`` naming them, before any dataclass is built: otherwise
    a check of another field (e.g. bf16 on a machine without GPU) could fail first and hide the misspelled key.
    TrlParser would reject them too, but later, and telling the user to change a parser argument they cannot reach.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    # allow_abbrev=False: with hundreds of flags, argparse's prefix matching would silently read a typo such as
    # `--max_step` as `--max_steps`.
    parser = TrlParser(DATACLASSES, allow_abbrev=False)
    check_unknown(yaml_keys=unknown_yaml_keys(args), cli_args=unknown_flags(parser, args))
    return tuple(parser.parse_args_and_config(args=args))


def known_fields() -> set[str]:
    """Every key a recipe or a flag may set."""
    return {f.name for dataclass_type in DATACLASSES for f in fields(dataclass_type)}


def unknown_yaml_keys(args: list[str]) -> list[str]:
    """Top-level keys of the ``--config`` YAML that are no dataclass field (``env`` is TrlParser's own block)."""
    if "--config" not in args or args.index("--config") + 1 >= len(args):
        return []  # TrlParser reports a missing path itself
    import yaml

    path = Path(args[args.index("--config") + 1])
    if not path.is_file():
        raise FileNotFoundError(
            f"Recipe {str(path)!r} not found: pass --config with a YAML file, e.g. recipes/cpu/gdpo/config.yaml."
        )
    config = yaml.safe_load(path.read_text())
    if not isinstance(config, dict):
        return []  # TrlParser raises a clear error for a YAML that is not a mapping
    known = known_fields()
    return [key for key in config if key != "env" and key not in known]


def unknown_flags(parser: TrlParser, args: list[str]) -> list[str]:
    """Command-line flags the parser does not know (stray values when there is no flag to blame)."""
    if "--config" in args:
        at = args.index("--config")
        args = args[:at] + args[at + 2 :]
    _, remaining = parser.parse_known_args(args)
    return [item for item in remaining if item.startswith("-")] or remaining


def check_unknown(yaml_keys: list[str], cli_args: list[str]) -> None:
    """Raise a ``ValueError`` naming unknown YAML keys and command-line arguments, with close field names."""
    if not yaml_keys and not cli_args:
        return
    known = sorted(known_fields())
    problems = []
    for label, names in (("YAML key", yaml_keys), ("command-line argument", cli_args)):
        for name in names:
            close = difflib.get_close_matches(name.lstrip("-").replace("-", "_"), known, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            problems.append(f"unknown {label} {name!r}{hint}")
    expected = ", ".join(dataclass_type.__name__ for dataclass_type in DATACLASSES)
    raise ValueError(
        "; ".join(problems) + f". Every key must be a field of {expected} (or the 'env' block of the YAML); "
        "run `gdpo-train --help` for the list."
    )


def setup_logging(training_args: GDPOConfig) -> None:
    """Log to stdout at the level the Trainer picks for this process (quieter on non-main ranks)."""
    import datasets
    import transformers

    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        handlers=[logging.StreamHandler(sys.stdout)],
    )
    level = training_args.get_process_log_level()
    logger.setLevel(level)
    datasets.utils.logging.set_verbosity(level)
    transformers.utils.logging.set_verbosity(level)


def set_threads(cpu_threads: int | None) -> None:
    """Set torch's intra-op thread count when asked (OMP_NUM_THREADS in the recipe's `env:` comes too late: torch is
    already imported when the YAML is read)."""
    if cpu_threads is not None:
        import torch

        torch.set_num_threads(cpu_threads)


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and torch before the data and model are built."""
    from transformers import set_seed as hf_set_seed

    hf_set_seed(seed)


# --- checks and inputs ---------------------------------------------------------------------------------------------


def check_vllm(training_args: GDPOConfig) -> None:
    """Fail before any model is loaded when vLLM generation is asked for but vLLM is not installed."""
    if not training_args.use_vllm:
        return
    # Looks up the installed package without importing it (importing vLLM takes long and touches the GPU).
    from trl.import_utils import is_vllm_available

    if not is_vllm_available():
        raise ImportError(
            "use_vllm is true but vLLM is not installed: `pip install gdpo-trl[vllm]`, or set `use_vllm: false` "
            "(generation then runs in transformers, slower)."
        )


def build_reward_funcs(script_args: GDPOScriptArguments) -> list:
    """Resolve registry names and dotted paths; unknown names raise a ``ValueError`` listing the known ones."""
    from gdpo_trl.rewards import get_reward_funcs

    kwargs = script_args.reward_kwargs
    if isinstance(kwargs, str):
        kwargs = json.loads(kwargs)
    return get_reward_funcs(script_args.reward_funcs, kwargs)


def load_dataset_for(script_args: GDPOScriptArguments):
    """Load the training split as a ``datasets.Dataset`` with conversational ``prompt`` and gold ``answer``."""
    from gdpo_trl.data import load_gsm8k, load_synthetic

    limit = script_args.max_train_samples
    size = script_args.synthetic_size if limit is None else min(limit, script_args.synthetic_size)
    if script_args.dataset_name == "synthetic":
        return load_synthetic(size, seed=script_args.synthetic_seed)
    if script_args.dataset_name == "warmstart":
        from gdpo_trl.warmstart import load_warmstart_dataset

        # Problems from the warm start's distribution that its SFT never saw (its held-out split).
        return load_warmstart_dataset(size, seed=script_args.synthetic_seed, split="eval")
    return load_gsm8k(
        script_args.dataset_name,
        split=script_args.dataset_train_split,
        config=script_args.dataset_config,
        limit=limit,
    )


def check_columns(dataset, source: str) -> None:
    """Fail early when the dataset lacks a column GRPO or the rewards read."""
    missing = [column for column in REQUIRED_COLUMNS if column not in dataset.column_names]
    if missing:
        raise ValueError(
            f"Dataset {source!r} has no {missing} column(s) (found {dataset.column_names}); the trainer needs "
            f"{list(REQUIRED_COLUMNS)}: 'prompt' to generate from and 'answer' for the correctness reward."
        )
    if len(dataset) == 0:
        raise ValueError(f"Dataset {source!r} is empty (check `max_train_samples` and the split).")


def resolve_model_path(model_args: ModelConfig) -> str:
    """A loadable path or Hub id; ``builtin:tiny`` and friends are built locally on first use."""
    from gdpo_trl.tiny import resolve_model

    if not model_args.model_name_or_path:
        raise ValueError("model_name_or_path is not set: give a Hub id, a local folder or 'builtin:tiny'.")
    return resolve_model(model_args.model_name_or_path)


def load_tokenizer(model_path: str, model_args: ModelConfig, training_args: GDPOConfig):
    """The model's tokenizer, with a pad token (GRPO pads prompts and completions)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(
        model_path, revision=model_args.model_revision, trust_remote_code=training_args.trust_remote_code
    )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def configure_model_loading(training_args: GDPOConfig, model_args: ModelConfig) -> None:
    """Tell the trainer how to load the model: ``ModelConfig``'s dtype and attention, under any YAML overrides.

    The trainer gets the model *path*, not a loaded model: TRL then calls ``from_pretrained`` after
    ``GDPOConfig`` exists, which is when transformers knows about DeepSpeed ZeRO-3 and can shard the weights while
    loading (a model loaded up front would sit whole on every GPU first). TRL also loads the reference model
    (``beta > 0``) with the same arguments and picks ``device_map`` for distributed runs.
    """
    model_init_kwargs = {
        "revision": model_args.model_revision,
        "dtype": model_args.dtype,
        "attn_implementation": model_args.attn_implementation,
    }
    # Explicit `model_init_kwargs` in the recipe win over the ModelConfig fields.
    model_init_kwargs.update(training_args.model_init_kwargs or {})
    training_args.model_init_kwargs = model_init_kwargs


def build_trainer(model_path, reward_funcs, training_args, train_dataset, tokenizer, model_args):
    """A ``GDPOTrainer``; with ``use_peft``, LoRA adapters (``lora_*`` fields) wrap the model."""
    from trl import get_peft_config, get_quantization_config

    from gdpo_trl.trainer import GDPOTrainer

    return GDPOTrainer(
        model_path,
        reward_funcs=reward_funcs,
        args=training_args,
        train_dataset=train_dataset,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
        quantization_config=get_quantization_config(model_args),
    )


def find_resume_checkpoint(training_args: GDPOConfig) -> str | None:
    """The checkpoint to resume from, or None to start fresh.

    ``resume_from_checkpoint`` is ``true``/``last`` for the last ``checkpoint-<step>`` in ``output_dir`` (if there
    is none, that is logged and training starts fresh, so the same command works for the first run and for
    restarts), or a path to a checkpoint folder.
    """
    from transformers.trainer_utils import get_last_checkpoint

    value = training_args.resume_from_checkpoint
    if value is None or value is False or str(value).strip().lower() in RESUME_NEVER:
        return None
    if value is True or str(value).strip().lower() in RESUME_LAST:
        output_dir = Path(training_args.output_dir)
        last = get_last_checkpoint(str(output_dir)) if output_dir.is_dir() else None
        if last is None:
            logger.warning("resume_from_checkpoint: no checkpoint in %s, starting from scratch.", output_dir)
        else:
            logger.info("Resuming from %s.", last)
        return last
    if not Path(value).is_dir():
        raise FileNotFoundError(
            f"resume_from_checkpoint={value!r} is not a checkpoint folder; use 'true' for the last checkpoint in "
            f"output_dir ({training_args.output_dir})."
        )
    return str(value)


# --- outputs -------------------------------------------------------------------------------------------------------


def save(trainer, output_dir: str) -> None:
    """Save the model (or LoRA adapter), tokenizer and ``trainer_state.json`` (read by ``scripts/plot_runs.py``)."""
    # save_model also saves the processing class; under ZeRO-3 it gathers the shards (zero3_save_16bit_model).
    trainer.save_model(output_dir)
    trainer.save_state()


def summary_window(num_logged: int) -> int:
    """How many logged steps to average at each end: one step's reward mean is noisy (a handful of prompts), so
    average up to 5, but never more than a quarter of the run so the two ends stay apart."""
    return max(1, min(5, num_logged // 4))


def reward_summary(log_history: list[dict], reward_names: list[str]) -> tuple[list[tuple[str, float, float]], int]:
    """``(metric, mean of the first w logged values, mean of the last w)`` for each reward's mean and the total
    ``reward``, and ``w`` (see :func:`summary_window`)."""
    series = {}
    for metric in [f"rewards/{name}/mean" for name in reward_names] + ["reward"]:
        values = [entry[metric] for entry in log_history if metric in entry]
        if values:
            series[metric] = values
    window = summary_window(min((len(v) for v in series.values()), default=0))
    rows = [(metric, sum(v[:window]) / window, sum(v[-window:]) / window) for metric, v in series.items()]
    return rows, window


def format_summary(
    rows: list[tuple[str, float, float]], window: int, global_step: int, num_processes: int, output_dir: str
) -> str:
    """A small plain-text table of the rewards before/after, and where the model is."""
    width = max([len("metric"), *(len(metric) for metric, _, _ in rows)])
    processes = f"{num_processes} process" + ("es" if num_processes > 1 else "")
    first, last = ("first", "last") if window == 1 else (f"first {window}", f"last {window}")
    lines = [
        f"Training finished after {global_step} steps on {processes}.",
        f"{'metric':<{width}}  {first:>8}  {last:>8}" + ("   (mean over logged steps)" if window > 1 else ""),
    ]
    lines += [f"{metric:<{width}}  {a:>8.3f}  {b:>8.3f}" for metric, a, b in rows]
    if not rows:
        lines.append("(no reward was logged: set logging_steps to log them)")
    lines.append(f"Model saved to {output_dir}")
    return "\n".join(lines)


def print_summary(trainer, output_dir: str) -> None:
    """Print the reward table on the main process only, so a multi-process run prints it once."""
    if trainer.accelerator.is_main_process:
        rows, window = reward_summary(trainer.state.log_history, trainer.reward_func_names)
        state = trainer.state
        summary = format_summary(rows, window, state.global_step, trainer.accelerator.num_processes, output_dir)
        print(summary, flush=True)


if __name__ == "__main__":
    main()
