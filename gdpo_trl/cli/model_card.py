"""The model card ``gdpo train`` leaves in ``output_dir`` (``README.md``), as open-r1's ``grpo.py`` does: TRL's card,
which ``GDPOTrainer`` fills with its own name, tags and paper, plus what this run was.

:func:`run_card_notes` is that section, from the parsed recipe and the finished trainer: base model, data, method
(GDPO or GRPO, with the fields that choose it), rewards with their weights and means at the start and end of
training, and the recipe itself. :func:`attach_run_card` gives it to the trainer before training, so every card
written has it: with ``push_to_hub: true`` transformers pushes model and card when the model is saved at the end;
otherwise :func:`write_card` writes the card into ``output_dir``.
"""

from __future__ import annotations

from pathlib import Path

from gdpo_trl.results.runs import TOTAL_REWARD, reward_ends, reward_key


def method_line(trainer, training_args) -> str:
    """What computed the advantages, in words, with the recipe fields that chose it."""
    if trainer._name == "GDPO":
        return (
            "GDPO: each reward normalized within its group of completions, the weighted sum then normalized over the "
            f"batch (`multi_objective_aggregation: {training_args.multi_objective_aggregation}`, "
            f"`gdpo_batch_norm: {str(training_args.gdpo_batch_norm).lower()}`)."
        )
    return (
        "GRPO: the weighted sum of rewards normalized within each group "
        f"(`multi_objective_aggregation: {training_args.multi_objective_aggregation}`, "
        f"`scale_rewards: {training_args.scale_rewards}`)."
    )


def reward_table(trainer) -> list[str]:
    """Markdown rows: each reward's weight and its mean over the first and last logged steps."""
    rows, window = reward_ends(trainer.state.log_history, trainer.reward_func_names)
    ends = {metric: (first, last) for metric, first, last in rows}
    steps = "step" if window == 1 else f"{window} steps"
    lines = [f"| reward | weight | mean, first {steps} | mean, last {steps} |", "|---|---:|---:|---:|"]
    weights = trainer.reward_weights.tolist()
    for name, weight in zip([*trainer.reward_func_names, TOTAL_REWARD], [*weights, None], strict=True):
        first, last = ends.get(reward_key(name) if weight is not None else TOTAL_REWARD, (None, None))
        shown = [f"{value:.3f}" if value is not None else "not logged" for value in (first, last)]
        label = "total (weighted sum)" if weight is None else f"`{name}`"
        lines.append(f"| {label} | {'' if weight is None else f'{weight:g}'} | {shown[0]} | {shown[1]} |")
    return lines


def run_card_notes(trainer, script_args, training_args, model_args, recipe: str | None, argv: list[str]) -> str:
    """The card's section about this run (Markdown)."""
    state, processes = trainer.state, trainer.accelerator.num_processes
    data = f"`{script_args.dataset_name}`"
    if script_args.dataset_path:
        data += f" from `{script_args.dataset_path}`"
    lines = [
        "## This run (gdpo-trl)",
        "",
        f"- **Base model:** `{model_args.model_name_or_path}`",
        f"- **Data:** {data}, split `{script_args.dataset_train_split}`",
        f"- **Method:** {method_line(trainer, training_args)}",
        f"- **Training:** {state.global_step} optimizer steps on {processes} process{'es' * (processes > 1)}, "
        f"{training_args.num_generations} completions per prompt, learning rate {training_args.learning_rate:g}.",
        "",
        *reward_table(trainer),
        "",
        "### Recipe",
        "",
        f"`gdpo train {' '.join(argv)}`",
    ]
    if recipe is not None:
        lines += ["", "```yaml", Path(recipe).read_text().rstrip(), "```"]
    return "\n".join(lines) + "\n"


def attach_run_card(trainer, script_args, training_args, model_args, recipe: str | None, argv: list[str]) -> None:
    """Give the trainer's model card this run's section, computed whenever a card is written: at a checkpoint, when
    ``save_model`` pushes (``push_to_hub: true``: transformers pushes the model with its card there), at the end."""
    trainer.model_card_base_model = model_args.model_name_or_path
    trainer.model_card_notes = [
        lambda: run_card_notes(trainer, script_args, training_args, model_args, recipe, argv),
    ]


def write_card(trainer, training_args) -> None:
    """The card in ``output_dir`` at the end, unless saving the model already pushed it with the model."""
    if not training_args.push_to_hub:
        trainer.create_model_card(model_name=Path(training_args.output_dir).name)
