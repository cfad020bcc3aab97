"""Toy data, rewards and configs for trainer tests (imported by tests and by the two-process script)."""

from datasets import Dataset


def toy_dataset(n: int = 16) -> Dataset:
    return Dataset.from_list(
        [{"prompt": [{"role": "user", "content": f"What is {i} + {i}?"}], "answer": str(2 * i)} for i in range(n)]
    )


def _text(completion):
    return completion[0]["content"] if isinstance(completion, list) else completion


def parity_reward(completions, **kwargs):
    """0/1 from the completion's character sum: arbitrary but deterministic, so groups have spread."""
    return [float(sum(map(ord, _text(c))) % 2) for c in completions]


def length_mod_reward(completions, **kwargs):
    """0, 1 or 2 from the text length; None for every third completion (the reward 'does not apply' there)."""
    return [None if i % 3 == 0 else float(len(_text(c)) % 3) for i, c in enumerate(completions)]


def toy_config(output_dir, **overrides):
    from gdpo_trl import GDPOConfig

    settings = dict(
        output_dir=str(output_dir),
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=12,
        max_steps=2,
        learning_rate=1e-2,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        bf16=False,
        use_cpu=True,
        seed=0,
    )
    settings.update(overrides)
    return GDPOConfig(**settings)


def two_process_trainer(reward_funcs):
    """The trainer the torchrun scripts run on each rank: the model of ``GDPO_TEST_MODEL``, 32 toy prompts, writing
    under ``GDPO_TEST_OUT``."""
    import os
    from pathlib import Path

    from gdpo_trl import GDPOTrainer

    return GDPOTrainer(
        os.environ["GDPO_TEST_MODEL"],
        reward_funcs=reward_funcs,
        args=toy_config(Path(os.environ["GDPO_TEST_OUT"]) / "run", use_cpu=True),
        train_dataset=toy_dataset(32),
    )
