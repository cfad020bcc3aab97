"""The Python API as good as the command line: a dataset without a ``prompt`` column, or without a column
a reward requires, is refused when ``GDPOTrainer`` is built, in one line naming the columns (before: a 34-line TRL
``KeyError``, or a ``TypeError``, once training started), and ``GDPOConfig(cpu_threads=...)`` sets torch's threads
as the recipe's ``cpu_threads`` does for ``gdpo train``."""

import datasets
import pytest
import torch

from gdpo_trl import GDPOConfig, GDPOTrainer
from gdpo_trl.core.errors import InputError
from gdpo_trl.data.prompt_rows import check_prompt_column


def brevity(completions, **kwargs):
    return [1.0 / (1 + len(c[0]["content"])) for c in completions]


def config(tmp_path, **kwargs):
    return GDPOConfig(
        str(tmp_path / "out"), use_cpu=True, bf16=False, report_to="none", num_generations=2,
        per_device_train_batch_size=2, max_completion_length=4, max_steps=1, **kwargs,
    )  # fmt: skip


@pytest.fixture
def restore_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def test_a_dataset_without_prompt_is_refused_when_the_trainer_is_built(tmp_path):
    rows = datasets.Dataset.from_dict({"question": ["What is 6 x 7?"], "answer": ["42"]})
    with pytest.raises(InputError) as caught:
        GDPOTrainer("builtin:tiny", reward_funcs=[brevity], args=config(tmp_path), train_dataset=rows)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("train_dataset has no 'prompt' column (columns: ['question', 'answer'])")
    assert "gdpo_trl.data.sources.load_source turns them into prompts" in message  # GSM8K-style: where to go


def says_topic(completions, topic, **kwargs):
    return [float(t in c[0]["content"]) for c, t in zip(completions, topic, strict=True)]


def test_a_column_a_reward_requires_is_checked_when_the_trainer_is_built(tmp_path):
    """Before: TRL called the reward with a TypeError at the first step, after the model had loaded."""
    rows = datasets.Dataset.from_dict({"prompt": ["Name a fruit."], "color": ["red"]})
    with pytest.raises(InputError, match=r"^reward 'says_topic' requires the argument 'topic', which is not a column"):
        GDPOTrainer("builtin:tiny", reward_funcs=[brevity, says_topic], args=config(tmp_path), train_dataset=rows)


def rows_of_text():
    yield {"text": "a"}


def test_prompt_column_check_passes_what_trl_can_read():
    check_prompt_column(None)  # no dataset given: TRL's own message
    check_prompt_column(datasets.Dataset.from_dict({"prompt": ["Hi"], "topic": ["x"]}))
    streaming = datasets.IterableDataset.from_generator(rows_of_text)
    check_prompt_column(streaming)  # columns unknown until read: left to TRL
    with pytest.raises(InputError, match=r"^eval has no 'prompt' column \(columns: \['text'\]\): .*prompts\.$"):
        check_prompt_column(datasets.Dataset.from_dict({"text": ["a"]}), "eval")


def test_cpu_threads_is_applied_by_the_trainer(tmp_path, restore_threads):
    torch.set_num_threads(2)
    rows = datasets.Dataset.from_dict({"prompt": [[{"role": "user", "content": "Hi"}]] * 2})
    GDPOTrainer("builtin:tiny", reward_funcs=[brevity], args=config(tmp_path, cpu_threads=1), train_dataset=rows)
    assert torch.get_num_threads() == 1
    GDPOTrainer("builtin:tiny", reward_funcs=[brevity], args=config(tmp_path / "b"), train_dataset=rows)
    assert torch.get_num_threads() == 1  # unset: torch's setting is left as it is


def test_cpu_threads_below_one_is_refused():
    with pytest.raises(InputError, match=r"^cpu_threads=0: must be at least 1"):
        GDPOConfig("out", use_cpu=True, cpu_threads=0)
