"""Recorders that spy on GRPOTrainer/GDPOTrainer internals during a test run, and toy process rewards.

A recorder's lists hold one entry per generation batch. Tests that loop over them assert the number of batches
first (``recorder.assert_batches(n)``): a loop over an empty list would pass having checked nothing.
"""

from __future__ import annotations

from trl import GRPOTrainer

from gdpo_trl import GDPOTrainer
from gdpo_trl.rewards.process import completion_text as _text
from gdpo_trl.rewards.process import process_reward


def assert_batches(lists: dict[str, list], expected: int) -> None:
    """Every recorded list has ``expected`` entries (one per generation batch)."""
    sizes = {name: len(values) for name, values in lists.items()}
    assert all(size == expected for size in sizes.values()), f"expected {expected} batches, recorded {sizes}"


class Recorder:
    """Records, for each generation batch, the gathered rewards, TRL's advantages and the ones that trained."""

    def __init__(self, monkeypatch):
        self.rewards, self.trl, self.ours = [], [], []
        recorder = self
        calc, native = GRPOTrainer._calculate_rewards, GRPOTrainer._generate_and_score_completions
        ours = GDPOTrainer._generate_and_score_completions

        def record_rewards(trainer, *args):
            rewards = calc(trainer, *args)
            recorder.rewards.append(rewards.clone())
            return rewards

        def record_native(trainer, inputs):
            output = native(trainer, inputs)
            recorder.trl.append(output["advantages"].clone())
            return output

        def record_ours(trainer, inputs):
            output = ours(trainer, inputs)
            recorder.ours.append(output["advantages"].clone())
            return output

        monkeypatch.setattr(GRPOTrainer, "_calculate_rewards", record_rewards)
        monkeypatch.setattr(GRPOTrainer, "_generate_and_score_completions", record_native)
        monkeypatch.setattr(GDPOTrainer, "_generate_and_score_completions", record_ours)

    def assert_batches(self, expected: int) -> None:
        assert_batches({"rewards": self.rewards, "trl": self.trl, "ours": self.ours}, expected)


@process_reward
def char_steps(completions, **kwargs):
    """A step every 3 characters, scored by the parity of its last character; None for texts under 3 characters."""
    out = []
    for completion in completions:
        text = _text(completion)
        out.append([(end, float(ord(text[end - 1]) % 2)) for end in range(3, len(text) + 1, 3)] or None)
    return out


class TokenRecorder:
    """Records, per generation batch, this process's completion ids and texts, the gathered outcome matrix, and the
    advantages GDPOTrainer trained on."""

    def __init__(self, monkeypatch):
        self.ids, self.texts, self.rewards, self.advantages = [], [], [], []
        calc, ours = GRPOTrainer._calculate_rewards, GDPOTrainer._generate_and_score_completions
        recorder = self

        def record_rewards(trainer, inputs, prompts, completions, completion_ids_list):
            recorder.ids.append([list(ids) for ids in completion_ids_list])
            recorder.texts.append([_text(c) for c in completions])
            rewards = calc(trainer, inputs, prompts, completions, completion_ids_list)
            recorder.rewards.append(rewards.clone())
            return rewards

        def record_ours(trainer, inputs):
            output = ours(trainer, inputs)
            recorder.advantages.append(output["advantages"].clone())
            return output

        monkeypatch.setattr(GRPOTrainer, "_calculate_rewards", record_rewards)
        monkeypatch.setattr(GDPOTrainer, "_generate_and_score_completions", record_ours)

    def assert_batches(self, expected: int) -> None:
        lists = {"ids": self.ids, "texts": self.texts, "rewards": self.rewards, "advantages": self.advantages}
        assert_batches(lists, expected)


def vary_lengths(monkeypatch, rank: int = 0):
    """Cut generated completions to lengths that vary by row and rank, so padding differs per process."""
    generate = GRPOTrainer._generate_single_turn

    def cut(trainer, *args, **kwargs):
        ids, logprobs = generate(trainer, *args, **kwargs)
        return [row[: 1 + (7 * i) % (9 - 4 * rank)] for i, row in enumerate(ids)], logprobs

    monkeypatch.setattr(GRPOTrainer, "_generate_single_turn", cut)


def record_lengths(monkeypatch) -> list:
    """Each batch's token counts as TRL's own completion_mask has them (one process: gathered = local)."""
    from trl import GRPOTrainer

    lengths, native = [], GRPOTrainer._generate_and_score_completions

    def record(trainer, inputs):
        output = native(trainer, inputs)
        lengths.append(output["completion_mask"].sum(dim=1).clone())
        return output

    monkeypatch.setattr(GRPOTrainer, "_generate_and_score_completions", record)
    return lengths


def logged(trainer) -> list[dict]:
    """The trainer's logged training steps (the entries that carry a reward)."""
    return [entry for entry in trainer.state.log_history if "reward" in entry]
