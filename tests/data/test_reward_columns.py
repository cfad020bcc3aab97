"""A reward that requires a column the rows lack is refused once the rows are loaded (gdpo train) or when GDPOTrainer
is built (Python), before the model (a GSM8K-style file drops every other column, and the reward then failed
inside TRL at the first step)."""

import functools

import datasets
import pytest

from gdpo_trl.core.errors import InputError
from gdpo_trl.data.prompt_rows import check_reward_columns, missing_reward_arguments

ROWS = datasets.Dataset.from_dict({"prompt": ["Name a red fruit."], "color": ["red"]})


def says_color(completions, color, **kwargs):
    return [1.0] * len(completions)


def says_topic(prompts, completions, topic, completion_ids=None, *, log_metric=None, **kwargs):
    return [1.0] * len(completions)


def scaled(completions, scale: float = 1.0, **kwargs):
    return [scale] * len(completions)


def test_required_arguments_that_trl_will_not_pass_are_named():
    assert missing_reward_arguments(says_color, ROWS.column_names) == []
    assert missing_reward_arguments(says_topic, ROWS.column_names) == ["topic"]
    assert missing_reward_arguments(scaled, []) == []  # a default: never required
    assert missing_reward_arguments(functools.partial(says_topic, topic=["x"]), ROWS.column_names) == []
    check_reward_columns(ROWS, [says_color, scaled, "some/reward-model"])


def test_a_missing_column_is_one_line_naming_reward_argument_and_columns():
    with pytest.raises(InputError) as caught:
        check_reward_columns(ROWS, [says_color, says_topic])
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(
        "reward 'says_topic' requires the argument 'topic', which is not a column of the dataset (columns: "
        "['prompt', 'color'])"
    )
    assert "give the argument a default" in message


def test_a_streaming_dataset_is_left_to_trl():
    def rows():
        yield {"prompt": "x"}

    check_reward_columns(datasets.IterableDataset.from_generator(rows), [says_topic])
