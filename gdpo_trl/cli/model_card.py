"""The model card ``gdpo train`` leaves in ``output_dir`` (``README.md``), as open-r1's ``grpo.py`` does: TRL's card,
which ``GDPOTrainer`` fills with its own name, tags and paper, plus what this run was.

:func:`quick_start` replaces TRL's generic usage example with this model answering one of its training prompts.
:func:`training_procedure` fills the card's "Training procedure" from the parsed recipe and the trainer: method
(GDPO or GRPO, with the fields that choose it), steps, batch, hardware, time (the training loop's and the whole
process's), and the rewards with their weights and means at the start and end of training. :func:`run_card_notes` adds base model, data, the exact command (launch
flags included) and the recipe itself. :func:`attach_run_card` gives both to the trainer before training, so every
card written has them: with ``push_to_hub: true`` transformers pushes model and card when the model is saved at the
end; otherwise :func:`write_card` writes the card into ``output_dir``.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from pathlib import Path

# The command line ``gdpo train`` was given, launch flags included, for the processes it starts (their own argv
# holds only the recipe's flags).
COMMAND_ENV = "GDPO_TRL_COMMAND"


def method_line(trainer, training_args) -> str:
    """What computed the advantages, in words, with the recipe fields that chose it."""
    from gdpo_trl.core.rules import RULES
    from gdpo_trl.trainer.card import RULE_CARDS

    rule = getattr(trainer, "advantage_rule", None)
    if rule in RULE_CARDS and trainer._name == RULE_CARDS[rule][0]:  # a published follow-up (docs/rules.md)
        return (
            f"{trainer._name}: {RULES[rule].summary} (`multi_objective_aggregation: "
            f"{training_args.multi_objective_aggregation}`; {RULES[rule].source})."
        )
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
    from gdpo_trl.results.runs import TOTAL_REWARD, reward_ends, reward_key  # read after training: not on the way in

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


def hardware(trainer, training_args, processes: int) -> str:
    """What trained, in words: the device kind (the GPU's name) and how many processes."""
    device = training_args.device
    if device.type == "cuda":
        import torch

        kind = torch.cuda.get_device_name(device)
    else:
        kind = {"cpu": "CPU", "mps": "Apple GPU (MPS)", "xpu": "Intel GPU (XPU)"}.get(device.type, device.type)
    return f"{kind}, {processes} process{'es' * (processes > 1)}"


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{seconds:.0f} s" if minutes == 0 else f"{minutes} min {rest} s ({seconds:.0f} s)"


def run_time(log_history: list[dict], since_start: float | None = None) -> str:
    """What the run took, saying what each figure covers: the training loop transformers timed (``train_runtime``:
    generation, rewards and updates), then the whole process so far (imports, model and data loading, the training
    loop; ``since_start``, default: since this process started). A checkpoint's card, written before the loop ends,
    says so. The loop alone can be a small part of the whole: a tiny model trains in a second of a 40-second run."""
    seconds = next((entry["train_runtime"] for entry in reversed(log_history) if "train_runtime" in entry), None)
    if since_start is None:
        import psutil  # an accelerate dependency

        since_start = time.time() - psutil.Process().create_time()
    whole = f"{_duration(since_start)} since the process started (imports, model and data loading included)"
    if seconds is None:
        return f"training in progress; {whole}"
    return f"{_duration(seconds)} in the training loop (generation, rewards and updates); {whole}"


def training_procedure(trainer, training_args) -> str:
    """The card's "Training procedure": method, rewards and weights, steps, batch, hardware and time."""
    state, processes = trainer.state, trainer.accelerator.num_processes
    per_device, accumulation = training_args.per_device_train_batch_size, training_args.gradient_accumulation_steps
    groups, generation_batch = training_args.num_generations, training_args.generation_batch_size
    lines = [
        "## Training procedure",
        "",
        f"- **Method:** {method_line(trainer, training_args)}",
        f"- **Training:** {state.global_step} optimizer step{'s' * (state.global_step != 1)} on {processes} "
        f"process{'es' * (processes > 1)}, "
        f"{groups} completions per prompt, learning rate {training_args.learning_rate:g}.",
        f"- **Batch:** {per_device} completions per device x {processes} process{'es' * (processes > 1)} x "
        f"{accumulation} accumulation step{'s' * (accumulation > 1)} = {per_device * processes * accumulation} "
        f"completions per optimizer step; generation batch {generation_batch} completions "
        f"({generation_batch // groups} prompt{'s' * (generation_batch // groups > 1)} x {groups}).",
        f"- **Hardware:** {hardware(trainer, training_args, processes)}.",
        f"- **Time:** {run_time(state.log_history)}.",
        "- **Rewards and weights:**",
        "",
        *reward_table(trainer),
    ]
    return "\n".join(lines) + "\n"


def quick_start(trainer, training_args) -> str:
    """The card's "Quick start": this model answering one of its own training prompts (its system prompt included)
    with the run's sampling settings, in place of TRL's generic question. From the Hub id where the run is pushed,
    else from ``output_dir``."""
    prompt = trainer.train_dataset[0]["prompt"] if trainer.train_dataset is not None else "Hello!"
    model = training_args.hub_model_id if training_args.push_to_hub else None
    model = model or training_args.output_dir
    settings = f"max_new_tokens={training_args.max_completion_length}"
    if training_args.temperature > 0:
        settings += f", do_sample=True, temperature={training_args.temperature:g}"
    lines = [
        "## Quick start",
        "",
        "A prompt of the kind it was trained on (the first of its training data), sampled as in training:",
        "",
        "```python",
        "from transformers import pipeline",
        "",
        f"prompt = {json.dumps(prompt, indent=4, ensure_ascii=False)}",
        f'generator = pipeline("text-generation", model={json.dumps(model)})',
        f"output = generator(prompt, {settings}, return_full_text=False)[0]",
        'print(output["generated_text"])',
        "```",
    ]
    return "\n".join(lines) + "\n"


def run_command(argv: list[str], processes: int) -> str:
    """The command that started the run: ``gdpo train`` with its launch flags (the launcher passes it to the
    processes), else the equivalent ``accelerate launch`` of a run started by accelerate itself."""
    command = os.environ.get(COMMAND_ENV)
    if command:
        return command
    if processes > 1:
        return f"accelerate launch --num_processes {processes} -m gdpo_trl.cli.train {shlex.join(argv)}"
    return f"gdpo train {shlex.join(argv)}"


def base_model_source(name_or_path: str) -> str:
    """``" (SmolLM2-135M-Instruct, converted from the GGUF file ...)"`` where the base model's folder records a GGUF
    origin (:mod:`gdpo_trl.models.gguf`), else ``""``."""
    from gdpo_trl.core.plugins import resolve_model
    from gdpo_trl.storage.model_source import describe_source, source_record

    try:
        record = source_record(Path(resolve_model(name_or_path)))
    except Exception:  # a Hub id offline, a name that no longer resolves: the card names what was given
        return ""
    return f" ({describe_source(record)})" if record else ""


def run_card_notes(trainer, script_args, model_args, recipe: str | None, argv: list[str]) -> str:
    """The card's section about this run (Markdown): base model, data, the command and the recipe (its text, as
    ``gdpo train`` read it)."""
    data = f"`{script_args.dataset_name}`"
    if script_args.dataset_path:
        data += f" from `{script_args.dataset_path}`"
    lines = [
        "## This run (gdpo-trl)",
        "",
        f"- **Base model:** `{model_args.model_name_or_path}`{base_model_source(model_args.model_name_or_path)}",
        f"- **Data:** {data}, split `{script_args.dataset_train_split}`",
        "",
        "### Recipe",
        "",
        f"`{run_command(argv, trainer.accelerator.num_processes)}`",
    ]
    if recipe is not None:
        lines += ["", "```yaml", recipe.rstrip(), "```"]
    return "\n".join(lines) + "\n"


def attach_run_card(trainer, script_args, training_args, model_args, recipe: str | None, argv: list[str]) -> None:
    """Give the trainer's model card this run's section, computed whenever a card is written: at a checkpoint, when
    ``save_model`` pushes (``push_to_hub: true``: transformers pushes the model with its card there), at the end."""
    trainer.model_card_base_model = model_args.model_name_or_path
    trainer.model_card_notes = [
        lambda: quick_start(trainer, training_args),
        lambda: training_procedure(trainer, training_args),
        lambda: run_card_notes(trainer, script_args, model_args, recipe, argv),
    ]


def write_card(trainer, training_args) -> None:
    """The card in ``output_dir`` at the end, unless saving the model already pushed it with the model."""
    if not training_args.push_to_hub:
        trainer.create_model_card(model_name=Path(training_args.output_dir).name)
