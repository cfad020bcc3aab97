"""TRL's GRPO test scenarios that GDPOTrainer refused while GRPOTrainer ran them (TRL's tests/test_grpo_trainer.py at
f2cd577 against trl 1.16.0, run as an outsider would): each runs here on both trainers, on the tiny builtins.

- ``test_train_with_multiple_environments``: a routing dataset with only an ``environment`` column, the environments
  supplying the prompt from ``reset()`` (GDPOTrainer said "train_dataset has no 'prompt' column");
- ``test_environment_owned_reward_mixed_environments``: one environment owning its reward, one not, over such a
  dataset (the same refusal);
- a reward reading a field a ``rollout_func`` returns (TRL passes them by name; GDPOTrainer said the reward requires
  an argument that is not a column);
- ``GDPOTrainer(model, rewards, args, train_dataset, ...)`` with TRL's positional arguments (a ``TypeError``).
"""

import pytest
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from gdpo_trl import GDPOConfig, GDPOTrainer
from gdpo_trl.models.tiny import build_model
from gdpo_trl.tasks.agent_task import build_tokenizer


@pytest.fixture(scope="module")
def tool_model(tmp_path_factory):
    """The tiny model with the tool-rendering chat template (environments expose their methods as tools)."""
    folder = tmp_path_factory.mktemp("tool_model")
    tokenizer = build_tokenizer()
    build_model(tokenizer, "tiny", seed=0).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


SETTINGS = dict(per_device_train_batch_size=4, num_generations=2, max_completion_length=6, max_steps=1,
                report_to="none", save_strategy="no", use_cpu=True, bf16=False, seed=0, shuffle_dataset=False,
                max_tool_calling_iterations=1)  # fmt: skip


def both(config_cls, tmp_path, **overrides):
    return config_cls(output_dir=str(tmp_path / config_cls.__name__), **{**SETTINGS, **overrides})


class CounterEnvironment:
    seen: list = []

    def reset(self, **kwargs):
        CounterEnvironment.seen.append(kwargs)
        return "Count."

    def increment(self, step: int) -> int:
        """
        Increment the internal counter.

        Args:
            step: Value to add to the counter.

        Returns:
            The updated counter value.
        """
        return step


class EchoEnvironment:
    def reset(self, **kwargs):
        return "Echo."

    def shout(self, text: str) -> str:
        """
        Shout the given text.

        Args:
            text: Text to shout.

        Returns:
            The text in upper case.
        """
        return text.upper()


class ScoredEnvironment(EchoEnvironment):
    def get_reward(self) -> float:
        return 1.0


def format_reward(completions, **kwargs):
    return [float(len(str(c)) % 2) for c in completions]


@pytest.mark.parametrize("trainer_cls", [GRPOTrainer, GDPOTrainer])
def test_train_with_multiple_environments(trainer_cls, tool_model, tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    CounterEnvironment.seen.clear()
    dataset = Dataset.from_dict({"environment": ["counter", "echo"] * 4})
    config = both(GDPOConfig if trainer_cls is GDPOTrainer else GRPOConfig, tmp_path)
    trainer = trainer_cls(tool_model, reward_funcs=[format_reward, format_reward], args=config, train_dataset=dataset,
                          environment_factory={"counter": CounterEnvironment, "echo": EchoEnvironment})  # fmt: skip
    assert [tool.__name__ for tool in trainer._env_tools["counter"]] == ["increment"]
    assert [tool.__name__ for tool in trainer._env_tools["echo"]] == ["shout"]
    trainer.train()
    assert trainer.state.global_step == 1
    # reset() got the row's columns but no placeholder prompt, as TRL keeps it out of them
    assert CounterEnvironment.seen and all("prompt" not in kwargs for kwargs in CounterEnvironment.seen)


@pytest.mark.parametrize("trainer_cls", [GRPOTrainer, GDPOTrainer])
def test_environment_owned_reward_mixed_environments(trainer_cls, tool_model, tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    dataset = Dataset.from_dict({"environment": ["scored", "scored2", "plain"]})
    config = both(GDPOConfig if trainer_cls is GDPOTrainer else GRPOConfig, tmp_path, per_device_train_batch_size=3,
                  num_generations=3)  # fmt: skip
    factories = {"scored": ScoredEnvironment, "scored2": ScoredEnvironment, "plain": EchoEnvironment}
    trainer = trainer_cls(tool_model, reward_funcs=format_reward, args=config, train_dataset=dataset,
                          environment_factory=factories)  # fmt: skip
    assert trainer.reward_func_names == ["format_reward", "ScoredEnvironment"]
    assert trainer.reward_weights.tolist() == [1.0, 1.0]
    assert trainer.reward_funcs[-1](environments=[ScoredEnvironment(), EchoEnvironment()]) == [1.0, None]


def judged_reward(completions, judge_score, **kwargs):
    """Reads a field the rollout function returns, not a dataset column."""
    return [float(score) for score in judge_score]


def fixed_rollout(prompts, trainer):
    """A rollout without generation: each prompt's ids, two fixed completion tokens, and a judge's score per
    completion (alternating, so every group has spread)."""
    tokenizer = trainer.processing_class
    prompt_ids = [tokenizer(prompt, add_special_tokens=False)["input_ids"] for prompt in prompts]
    completion = tokenizer("12", add_special_tokens=False)["input_ids"]
    return {
        "prompt_ids": prompt_ids,
        "completion_ids": [list(completion) for _ in prompts],
        "logprobs": [[0.0] * len(completion) for _ in prompts],
        "judge_score": [float(i % 2) for i in range(len(prompts))],
    }


@pytest.mark.parametrize("trainer_cls", [GRPOTrainer, GDPOTrainer])
def test_a_reward_reads_the_rollout_functions_fields(trainer_cls, tiny_model_path, tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    dataset = Dataset.from_dict({"prompt": ["What is 1+1?", "What is 2+2?"] * 4})
    config = both(GDPOConfig if trainer_cls is GDPOTrainer else GRPOConfig, tmp_path, logging_steps=1)
    trainer = trainer_cls(tiny_model_path, reward_funcs=[judged_reward, format_reward], args=config,
                          train_dataset=dataset, rollout_func=fixed_rollout)  # fmt: skip
    trainer.train()
    logged = next(entry for entry in trainer.state.log_history if "rewards/judged_reward/mean" in entry)
    assert logged["rewards/judged_reward/mean"] == pytest.approx(0.5)  # the judge's 0, 1, 0, 1


@pytest.mark.parametrize("trainer_cls", [GRPOTrainer, GDPOTrainer])
def test_trls_positional_arguments(trainer_cls, tiny_model_path, tmp_path):
    from transformers import AutoTokenizer, TrainerCallback

    class Seen(TrainerCallback):
        pass

    dataset = Dataset.from_dict({"prompt": ["What is 1+1?", "What is 2+2?"] * 2})
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
    config = both(GDPOConfig if trainer_cls is GDPOTrainer else GRPOConfig, tmp_path)
    callback = Seen()
    trainer = trainer_cls(tiny_model_path, [format_reward, format_reward], config, dataset, None, tokenizer, None,
                          [callback])  # fmt: skip
    assert trainer.train_dataset is dataset and trainer.processing_class is tokenizer
    assert callback in trainer.callback_handler.callbacks
    with pytest.raises(TypeError, match="multiple values for argument 'train_dataset'"):
        trainer_cls(tiny_model_path, [format_reward, format_reward], config, dataset, train_dataset=dataset)
