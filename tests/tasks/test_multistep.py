"""The two-step warm start of the process-reward seed study: its flawed traces, step by step, and its RL prompts."""

import random

from gdpo_trl.rewards.equations import equation_steps
from gdpo_trl.tasks.multistep import MultistepRecipe, multistep_trace, sft_rows, write_rl_data, written_equations

EQUATIONS = [[3, "*", 4, 12], [12, "+", 5, 17]]


class Scripted(random.Random):
    """``random()`` from a list; ``choice`` takes the first item."""

    def __init__(self, draws):
        super().__init__(0)
        self.draws = list(draws)

    def random(self):
        return self.draws.pop(0)

    def choice(self, seq):
        return seq[0]


def test_written_equations_carry_a_wrong_step():
    assert written_equations(EQUATIONS, random.Random(0), 0.0) == EQUATIONS
    # First step wrong (draw 0.1 < 0.5: 12 + 1), second right on the written 13: 13 + 5 = 18.
    assert written_equations(EQUATIONS, Scripted([0.1, 0.9]), 0.5) == [[3, "*", 4, 13], [13, "+", 5, 18]]
    # Second step wrong only: 12 + 5 = 18.
    assert written_equations(EQUATIONS, Scripted([0.9, 0.1]), 0.5) == [[3, "*", 4, 12], [12, "+", 5, 18]]


def test_trace_steps_score_as_written():
    recipe = MultistepRecipe()
    row = {"equations": EQUATIONS}
    # Draws: step 1 wrong, step 2 right; then make_trace's format (0.9: intact), wrong answer, style (0.9: integer).
    text, written = multistep_trace(row, Scripted([0.1, 0.9, 0.9, 0.9, 0.9]), MultistepRecipe(wrong_step=0.5))
    assert text == "<think>3*4=13, 13+5=18</think>\n<answer>18</answer>"
    assert [score for _, score in equation_steps(text)] == [0.0, 1.0]
    assert recipe.mix.wrong_answer == 0.0  # an answer is wrong only through a step


def test_sft_rows_and_rl_data_are_disjoint(tmp_path):
    from gdpo_trl.data.sources import load_source

    recipe = MultistepRecipe()
    sft = sft_rows(200, 0, recipe)
    assert all(len(equation_steps(r["completion"][0]["content"]) or []) == 2 for r in sft)
    path = write_rl_data(tmp_path / "rl.jsonl", n=50, recipe=recipe)
    rl = load_source(str(path))
    assert len(rl) == 50 and all(int(a) >= 0 for a in rl["answer"])
    questions = {r["prompt"][1]["content"] for r in sft}
    assert not questions & {p[1]["content"] for p in rl["prompt"]}
    assert rl["prompt"][0][0] == sft[0]["prompt"][0]  # the same system message as the SFT's
