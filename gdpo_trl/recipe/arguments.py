"""``gdpo train``'s arguments: the data and reward fields, and parsing a recipe plus flags with TrlParser."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, fields
from typing import Any

from trl import ModelConfig, ScriptArguments, TrlParser

from gdpo_trl.core.argparsing import OneLineErrors, read_negative_numbers
from gdpo_trl.core.config import GDPOConfig, parse_json_dict
from gdpo_trl.core.errors import InputError, input_stage
from gdpo_trl.recipe import early_parse
from gdpo_trl.recipe.early_checks import check_script_ranges
from gdpo_trl.recipe.names import resolve_config_flag
from gdpo_trl.recipe.recipe_file import Recipe, recipe_of
from gdpo_trl.recipe.recipe_values import read_values


@dataclass
class GDPOScriptArguments(ScriptArguments):
    """Data and reward arguments of ``gdpo train``, on top of TRL's ``ScriptArguments``.

    To resume, use the training argument ``resume_from_checkpoint`` (it already exists in ``TrainingArguments``, so
    it cannot be declared here): ``true`` resumes from the last checkpoint in ``output_dir``, a path from that
    checkpoint.
    """

    reward_funcs: list[str] = field(
        default_factory=lambda: ["format", "correctness", "integer"],
        metadata={
            "help": "Reward functions, in order (their weights follow the same order in `reward_weights`): registry "
            "names ('format', 'correctness', 'integer'), import paths ('my_pkg.rewards.my_fn', a module in the current "
            "folder included) or a file and a function ('path/to/rewards.py:my_fn')."
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
            "help": "Training data, a source of gdpo_trl.data.sources: 'gsm8k', 'sample' (the small GSM8K-style "
            "sample shipped with gdpo-trl), 'synthetic' (generated offline, see `synthetic_size`), 'warmstart' "
            "(generated problems of the kind builtin:warmstart was trained on, none of them seen in its SFT), a local "
            ".json/.jsonl/.parquet/.csv file or dataset folder, or a Hub dataset id (with `dataset_config` and "
            "`dataset_train_split`), whose rows have a `prompt` (text or chat messages: used as it is, every other "
            "column passed to the rewards by name) or GSM8K's `question` and `answer` (see `dataset_format`). Tool "
            "calling: 'toolcall' (generated requests for "
            "builtin:toolcall_warmstart), 'toolrl_sample' (the ToolRL-format sample shipped with gdpo-trl) or "
            "'toolrl' (ToolRL-format rows read from `dataset_path`)."
        },
    )
    dataset_path: str | None = field(
        default=None,
        metadata={
            "help": "Where `dataset_name: toolrl` reads its rows: a .parquet/.jsonl/.json file (ToolRL's "
            "rlla_4k/train.parquet, for one), a dataset folder or a Hub id. Only that source takes a path."
        },
    )
    dataset_format: str = field(
        default="auto",
        metadata={
            "help": "How a file, folder or Hub id in `dataset_name` is read: 'auto' (its columns decide: a `prompt` "
            "column, else `question` and `answer`), 'prompt' (rows with their own prompt, every column kept for the "
            "rewards) or 'gsm8k' (`question` and a solution ending '#### N' in `answer`: a chat prompt with "
            "`system_prompt`, the gold number in `answer`, other columns dropped).",
            "choices": ["auto", "prompt", "gsm8k"],
        },
    )
    system_prompt: str | None = field(
        default=None,
        metadata={
            "help": "System message for every training prompt of a GSM8K-style source, replacing the loader's "
            "(gdpo_trl.data.gsm8k.SYSTEM_PROMPT, written for the tiny CPU model). Pass the same text to gdpo eval "
            "--system_prompt. On rows with their own `prompt`: chat prompts get it as their system message, text "
            "prompts become a chat of it and the text. Refused for the tool-calling sources, whose system message "
            "lists the tools."
        },
    )
    dataset_config: str | None = field(
        default="main",
        metadata={"help": "Hub dataset configuration ('main' or 'socratic' for GSM8K). Ignored for local files."},
    )
    synthetic_size: int = field(
        default=1000,
        metadata={
            "help": "Number of problems generated when `dataset_name` is 'synthetic', 'warmstart' or 'toolcall'."
        },
    )
    synthetic_seed: int = field(
        default=0,
        metadata={
            "help": "Seed of the problem generator when `dataset_name` is 'synthetic', 'warmstart' or 'toolcall'."
        },
    )
    max_train_samples: int | None = field(
        default=None,
        metadata={"help": "Keep only the first N training examples (quick runs and debugging). Default: all."},
    )
    resume_with_changed_sources: bool = field(
        default=False,
        metadata={
            "help": "Resume even though a reward's source file or a data file changed since the checkpoint was "
            "saved (every checkpoint records their SHA-256; a resume whose files changed is refused by default, "
            "naming them). The remaining steps train with the new files. Default: false."
        },
    )

    def __post_init__(self):  # TRL's ScriptArguments has none of its own
        check_script_args(self)


def parse_reward_kwargs(value) -> dict | None:
    """``reward_kwargs`` as ``{reward: {argument: value}}``; a JSON string from the command line is parsed."""
    value = parse_json_dict(value, "reward_kwargs")
    if value is not None and not all(isinstance(v, dict) for v in value.values()):
        raise InputError(
            f'reward_kwargs must map a reward name to its arguments, e.g. {{"length": {{"max_tokens": 256}}}}; '
            f"got {value!r}."
        )
    return value


def check_script_args(script_args) -> None:
    """``GDPOScriptArguments``' own checks (ranges, JSON), run by its ``__post_init__``; parses ``reward_kwargs``."""
    check_script_ranges(script_args)
    script_args.reward_kwargs = parse_reward_kwargs(script_args.reward_kwargs)


DATACLASSES = (GDPOScriptArguments, GDPOConfig, ModelConfig)


class RecipeParser(OneLineErrors, TrlParser):
    """TrlParser for ``gdpo train``: a usage error is one line (an InputError), ``-1e-3`` is a value, and the recipe's
    values are read as their flags would be (:func:`gdpo_trl.recipe.recipe_values.read_values`), naming the file."""

    def __init__(self, dataclass_types=DATACLASSES, recipe: str | None = None, **kwargs):
        super().__init__(dataclass_types, prog="gdpo train", allow_abbrev=False, **kwargs)
        read_negative_numbers(self)
        self.recipe = recipe

    def set_defaults_with_config(self, **config) -> list[str]:
        return super().set_defaults_with_config(**read_values(self._actions, config, self.recipe))

    def parse_recipe(self, flags: list[str], values: dict | None) -> tuple:
        """What TrlParser's ``parse_args_and_config`` returns with ``separate_remaining_strings``, from the recipe's
        values as :func:`~gdpo_trl.recipe.recipe_file.load_recipe` read them rather than from the file again: the
        ``env:`` block exported (as TRL does), the rest the fields' defaults, then ``flags`` (no ``--config``) win."""
        values = dict(values or {})
        for key, value in (values.pop("env", None) or {}).items():
            os.environ[key] = str(value)
        yaml_unknown = self.set_defaults_with_config(**values) if values else []
        *parsed, cli_unknown = self.parse_args_into_dataclasses(args=flags, return_remaining_strings=True)
        return (*parsed, yaml_unknown, cli_unknown)


def config_for_processes(num_processes: int) -> type[GDPOConfig]:
    """``GDPOConfig`` as each of ``num_processes`` processes builds it. TRL derives the generation batch from
    ``world_size``, which is 1 in ``gdpo train``'s launcher, where the recipe is checked before the processes start."""
    if num_processes == 1:
        return GDPOConfig
    attributes = {"world_size": property(lambda self: num_processes), "planned_processes": num_processes}
    return type("GDPOConfig", (GDPOConfig,), attributes)


def parse_args(
    argv: list[str] | None = None, num_processes: int = 1, recipe: Recipe | None = None
) -> tuple[GDPOScriptArguments, GDPOConfig, ModelConfig]:
    """Parse ``--config`` YAML and command-line flags (flags win) into the three dataclasses; ``num_processes``: the
    processes the run will have, when parsed before they start (:func:`config_for_processes`); ``recipe``: the
    ``--config`` file as ``gdpo train`` read it already, else it is read here (once).

    The recipe file is checked as it is read (:func:`gdpo_trl.recipe.recipe_file.load_recipe`: missing, binary, not
    UTF-8, bad YAML, a key twice). Every mistake is an :class:`~gdpo_trl.core.errors.InputError` (a ``ValueError``)
    whose message starts ``recipe:`` where the dataclasses or TRL raised it: unknown YAML keys and flags are named
    each with the closest field names. ``allow_abbrev=False``: with hundreds of flags, argparse's prefix matching
    would silently read a typo such as ``--max_step`` as ``--max_steps``.
    """
    with input_stage("recipe"):  # the dataclasses' and TRL's ValueErrors are the recipe's mistakes
        args = resolve_config_flag(sys.argv[1:] if argv is None else argv)  # a recipe name -> its shipped file
        if recipe is None:
            recipe = recipe_of(args)
        if "--config" in args:
            i = args.index("--config")
            del args[i : i + 2]
        dataclass_types = (GDPOScriptArguments, config_for_processes(num_processes), ModelConfig)
        parser = RecipeParser(dataclass_types, recipe=None if recipe is None else recipe.path)
        *parsed, yaml_unknown, cli_unknown = parser.parse_recipe(args, None if recipe is None else recipe.values)
        unknown_flags = [a for a in cli_unknown if a.startswith("-")] or cli_unknown
        check_unknown(yaml_keys=yaml_unknown[::2], cli_args=unknown_flags)
    return tuple(parsed)


def check_unknown(yaml_keys: list[str], cli_args: list[str]) -> None:
    """Raise a ``ValueError`` naming unknown YAML keys and command-line arguments, with close field names."""
    early_parse.check_unknown(yaml_keys, cli_args, {f.name for cls in DATACLASSES for f in fields(cls)})


def build_reward_funcs(script_args: GDPOScriptArguments) -> list:
    """The recipe's reward functions: registry names or dotted paths, with ``reward_kwargs`` bound (a JSON string on
    the command line, parsed by ``GDPOScriptArguments.__post_init__``). Unknown names raise a ``ValueError``
    listing the known ones."""
    from gdpo_trl.rewards import get_reward_funcs

    return get_reward_funcs(script_args.reward_funcs, script_args.reward_kwargs)
