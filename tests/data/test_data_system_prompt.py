"""A recipe's system_prompt replaces the system turn of any loader's prompts; the default prompt is unchanged."""

import datasets
import pytest

from gdpo_trl.data.gsm8k import SYSTEM_PROMPT, load_gsm8k, make_prompt, with_system_prompt


def test_make_prompt_default_and_custom():
    assert make_prompt("Q?")[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert make_prompt("Q?", system_prompt="S") == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Q?"},
    ]


def test_with_system_prompt_replaces_or_inserts_and_keeps_other_columns():
    rows = {
        "prompt": [make_prompt("a"), [{"role": "user", "content": "b"}]],
        "answer": ["1", "2"],
    }
    ds = with_system_prompt(datasets.Dataset.from_dict(rows), "Think, then answer.")
    assert ds["prompt"] == [
        [{"role": "system", "content": "Think, then answer."}, {"role": "user", "content": "a"}],
        [{"role": "system", "content": "Think, then answer."}, {"role": "user", "content": "b"}],
    ]
    assert ds["answer"] == ["1", "2"]
    sample = load_gsm8k("sample", limit=2)
    assert with_system_prompt(sample, None) is sample
    assert with_system_prompt(sample, "X")["prompt"][1][0]["content"] == "X"


@pytest.mark.parametrize("bad", ["", "   ", 3])
def test_blank_system_prompt_is_refused(bad):
    with pytest.raises(ValueError, match="system_prompt must be a non-blank string"):
        with_system_prompt(load_gsm8k("sample", limit=1), bad)
