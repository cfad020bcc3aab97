"""A run's inputs, in the order a mistake is cheapest to find: first what needs neither the model nor the rows
(:func:`check_inputs`: the recipe, the machine, the rewards prepared once, the agent settings), then, once the output
folder is ready, the model's files, the rows and the tokenizer, loaded and checked against each other
(:func:`load_inputs`) before the model's weights load. Each check raises
:class:`~gdpo_trl.core.errors.InputError` in one line naming the culprit and the fix; :mod:`gdpo_trl.run.build` calls
the two in turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from gdpo_trl.core.cpu_speed import cpu_dtype_choice, trains_on_cpu
from gdpo_trl.core.errors import input_stage
from gdpo_trl.core.plugins import resolve_model
from gdpo_trl.data.prompt_fit import check_prompt_lengths
from gdpo_trl.data.sources import environment_factory, load_source_described, source_options
from gdpo_trl.run.agent_checks import check_agent_recipe, check_environments
from gdpo_trl.run.checks import check_chat_template, check_recipe, check_rewards, fit_to_machine
from gdpo_trl.run.data_checks import check_data
from gdpo_trl.run.offline import check_model_available_offline
from gdpo_trl.run.output_checks import check_free_space


@dataclass
class CheckedInputs:
    """What :func:`check_inputs` found: the rewards as TRL will call them (a
    :class:`~gdpo_trl.trainer.reward_pipeline.PreparedRewards`, which ``GDPOTrainer`` takes as it is), an agent
    source's ``environment_factory`` (None for any other source), and the trainer's keyword arguments for it."""

    rewards: object
    environments: object | None
    environment_kwargs: dict


def check_inputs(script_args, training_args, model_args, reward_funcs: list | None = None) -> CheckedInputs:
    """Everything that needs neither the model nor the rows, so that a misspelled name fails in a second: the
    recipe's ranges, JSON fields, weight counts and vLLM; a GPU recipe fitted to this machine; the rewards built
    (``reward_funcs`` replaces the recipe's: a comparison's method may change them) and prepared once, with the
    source's environment; the agent settings."""
    from gdpo_trl.recipe.arguments import build_reward_funcs  # imports TRL

    check_recipe(script_args, training_args, model_args)  # ranges, JSON fields, weight counts, vLLM installed
    fit_to_machine(training_args, model_args)  # a GPU recipe on a CPU: sdpa for flash-attn, absent trackers left out
    reward_funcs = build_reward_funcs(script_args) if reward_funcs is None else reward_funcs
    environments = environment_factory(script_args.dataset_name)  # an agent source's environment, else None
    kwargs = {"environment_factory": environments} if environments is not None else {}
    rewards = check_rewards(reward_funcs, training_args, **kwargs)  # prepared once, for the trainer
    check_agent_recipe(script_args, training_args, environments)  # agent rewards without one, empty conditions
    return CheckedInputs(rewards, environments, kwargs)


def load_inputs(script_args, training_args, model_args, checked: CheckedInputs):
    """The model's path, the training rows and the tokenizer, each checked against the others before the model's
    weights load; ``training_args.model_init_kwargs`` set for the trainer, which loads the model from its path (so
    ZeRO-3 can shard it while loading) with ``ModelConfig``'s dtype and attention (the recipe's own
    ``model_init_kwargs`` win). The main process goes first: it builds or caches the model and the rows, and the
    other ranks read its files. Returns ``(model_path, train_dataset, tokenizer)``."""
    from transformers import AutoTokenizer

    with (
        input_stage("model or dataset", OSError),
        training_args.main_process_first(local=False, desc="model and dataset"),
    ):
        model_path = resolve_model(model_args.model_name_or_path or "")
        check_model_available_offline(model_path)
        train_dataset, data_line = load_source_described(script_args.dataset_name, **source_options(script_args))
    if data_line and training_args.process_index == 0:  # which kind of rows, and what reaches the rewards
        print(data_line, flush=True)
    check_free_space(training_args.output_dir, model_path)  # again, with the resolved model's real size
    tokenizer = AutoTokenizer.from_pretrained(
        model_path, revision=model_args.model_revision, trust_remote_code=training_args.trust_remote_code
    )
    if tokenizer.pad_token is None:  # GRPO pads prompts and completions
        tokenizer.pad_token = tokenizer.eos_token
    check_chat_template(train_dataset, tokenizer, model_path, script_args.dataset_name)
    check_prompt_lengths(train_dataset, tokenizer, model_path, training_args.max_completion_length)
    check_data(train_dataset, checked.rewards, training_args)  # each reward fits the rows; enough rows for one step
    check_environments(
        checked.environments, train_dataset, tokenizer, model_path
    )  # reset once; template renders tools
    training_args.model_init_kwargs = {
        "revision": model_args.model_revision,
        "dtype": model_args.dtype,
        "attn_implementation": model_args.attn_implementation,
        **(training_args.model_init_kwargs or {}),
    }
    if training_args.cpu_dtype is not None and trains_on_cpu(training_args):
        if training_args.process_index == 0:  # GDPOConfig set bf16 and model_init_kwargs' dtype from this choice
            print(f"dtype {cpu_dtype_choice(training_args.cpu_dtype)[1]}", flush=True)
    return model_path, train_dataset, tokenizer
