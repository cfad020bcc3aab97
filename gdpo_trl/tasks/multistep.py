"""A warm start that writes two equations per completion, some of them wrong: the task of the process-reward seed
study (docs/results/README.md, H5).

``builtin:warmstart`` writes one equation (``<think>3*4=12</think>``), too few steps to test credit for steps. This
warm start is the same ``mini`` model and SFT, on two-step problems (``multiply_groups`` with numbers up to 7:
``3*4=12, 12+5=17``) whose traces get each equation's result wrong with probability
:attr:`MultistepRecipe.wrong_step`. A later equation uses the result as written, so a wrong first step makes a
wrong answer from a right second step: the ``equations`` process reward and the correctness reward then disagree
about which tokens were at fault, which is what token-level credit is for. Format and integer imperfections are the
demo's (:class:`gdpo_trl.tasks.traces.TraceMix`), with no extra wrong answers: an answer is wrong only through a step.

    python -m gdpo_trl.tasks.multistep outputs/models/multistep_warmstart --data outputs/data/multistep_rl.jsonl

writes the model (about 3 minutes on one CPU core) and the RL prompts: held-out problems as a GSM8K-style
``.jsonl`` (``question``, ``answer`` ending in ``#### N``), which a recipe names as its ``dataset_name``.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from gdpo_trl.data.gsm8k import make_prompt
from gdpo_trl.models.build_cli import build_parser, start_build
from gdpo_trl.tasks.sft import train_sft
from gdpo_trl.tasks.traces import TraceMix, gold_answer, make_trace
from gdpo_trl.tasks.warmstart_data import Recipe, warmstart_problems

STEP_ERRORS = (1, 2, 3)
OPERATIONS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a // b}


@dataclass(frozen=True)
class MultistepRecipe(Recipe):
    """The warm start's SFT: :class:`gdpo_trl.tasks.warmstart.Recipe` with more steps, two-step templates and step
    errors."""

    steps: int = 800
    templates: tuple[str, ...] = ("multiply_groups",)
    mix: TraceMix = field(default_factory=lambda: TraceMix(broken_format=0.5, wrong_answer=0.0, non_integer=0.45))
    wrong_step: float = 0.2  # per equation: its written result is too high by 1 to 3


def written_equations(equations: list, rng: random.Random, wrong_step: float) -> list[list]:
    """The equations as a flawed trace writes them: each result too high by 1 to 3 with probability ``wrong_step``,
    and a step's left operand, where it is the previous step's result (``multiply_groups`` chains that way), replaced by
    that result as written. Errors only add, so a later subtraction never goes below 0."""
    written, previous = [], None  # previous: (true result, result as written)
    for left, op, right, result in equations:
        if previous is not None and left == previous[0]:
            left = previous[1]
        value = OPERATIONS[op](left, right)
        if rng.random() < wrong_step:
            value += rng.choice(STEP_ERRORS)
        previous = (result, value)
        written.append([left, op, right, value])
    return written


def multistep_trace(row: dict, rng: random.Random, recipe: MultistepRecipe) -> tuple[str, list[list]]:
    """A completion for ``row`` (its equations as :func:`written_equations` writes them, the answer the last written
    result, format and integer flaws from ``recipe.mix``) and the written equations."""
    written = written_equations(row["equations"], rng, recipe.wrong_step)
    text, _ = make_trace({"equations": written}, rng, recipe.mix)
    return text, written


def sft_rows(n: int, seed: int, recipe: MultistepRecipe) -> list[dict]:
    rows = warmstart_problems(n, seed, split="train", recipe=recipe)
    rng = random.Random(seed)
    return [
        {"prompt": make_prompt(row["question"]), "completion": [{"role": "assistant", "content": text}]}
        for row in rows
        for text, _ in [multistep_trace(row, rng, recipe)]
    ]


def write_rl_data(path: str | Path, n: int = 2000, seed: int = 0, recipe: MultistepRecipe | None = None) -> Path:
    """``n`` held-out problems (never SFT examples) as GSM8K-style rows: ``question``, ``answer`` ``... #### N``."""
    recipe = recipe or MultistepRecipe()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = warmstart_problems(n, seed, split="eval", recipe=recipe)
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            steps = ", ".join(f"{a}{op}{b}={c}" for a, op, b, c in row["equations"])
            f.write(json.dumps({"question": row["question"], "answer": f"{steps}\n#### {gold_answer(row)}"}) + "\n")
    return path


def build(path: str | Path, seed: int = 0, recipe: MultistepRecipe | None = None) -> Path:
    """SFT a fresh ``recipe.architecture`` model on the flawed two-step traces; save model and tokenizer."""
    import datasets
    import torch

    from gdpo_trl.models.tiny import build_model, build_tokenizer

    recipe = recipe or MultistepRecipe()
    torch.manual_seed(seed)
    tokenizer = build_tokenizer()
    model = build_model(tokenizer, recipe.architecture, seed)
    rows = sft_rows(recipe.steps * recipe.batch_size, seed, recipe)
    return train_sft(model, tokenizer, datasets.Dataset.from_list(rows), recipe, seed, path)


def main(argv: list[str] | None = None) -> None:
    parser = build_parser(__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="also write the RL prompts here (.jsonl)")
    parser.add_argument("--data-size", type=int, default=2000)
    args = parser.parse_args(argv)
    start_build(args, "multistep warm start: loading TRL (about 10 s), then SFT")
    recipe = MultistepRecipe() if args.steps is None else MultistepRecipe(steps=args.steps)
    if args.data:
        print(f"RL prompts: {write_rl_data(args.data, args.data_size, args.seed, recipe)}")
    print(f"model: {build(args.path, args.seed, recipe)}")


if __name__ == "__main__":
    main()
