"""The silent and poor cases of the sweep over the task surface (own datasets, reward files, the command line), one
row each: one line, exit 2, the output folder untouched (:func:`tests.helpers.bad_inputs.check_train_rejects`), or
the warning that says what happened. Row ids are the sweep's case ids."""

import pytest

from tests.helpers.bad_inputs import check_train_rejects

# --- reward files -------------------------------------------------------------------------------------------------


def test_c_rf_exit_import(tmp_path, capsys, monkeypatch):
    """Before: a reward file whose top level called sys.exit(3) ended gdpo train with status 3 and no word."""
    (tmp_path / "script_rewards.py").write_text(
        "import sys\n\ndef score(completions, **kwargs):\n    return [1.0] * len(completions)\n\nsys.exit(3)\n"
    )
    spec = f"{tmp_path}/script_rewards.py:score"
    words = [f"reward path {spec!r}: importing", "script_rewards.py called sys.exit(3) at its top level",
             'under `if __name__ == "__main__":`']  # fmt: skip
    check_train_rejects(tmp_path, capsys, monkeypatch, {"reward_funcs": ["format", spec]}, [], None, words)


def test_c_rf_exit_import_module(tmp_path, capsys, monkeypatch):
    """The same by import path: the line names the module's file."""
    (tmp_path / "exiting_module.py").write_text(
        "raise SystemExit('done')\n\ndef score(completions, **kw):\n    pass\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    words = ["importing exiting_module.py called sys.exit('done') at its top level"]
    overrides = {"reward_funcs": ["format", "exiting_module.score"]}
    check_train_rejects(tmp_path, capsys, monkeypatch, overrides, [], None, words)


TWO_FILES = "def score(completions, **kwargs):\n    return {values}\n"


def test_a_failing_reward_names_its_file_when_two_files_define_its_name(tmp_path, monkeypatch):
    """Before: "Reward function 'score' returned 1 values for 2 completions", with two files defining ``score``."""
    from gdpo_trl.rewards.locate import import_reward
    from gdpo_trl.trainer.reward_checks import CheckedReward, RewardFunctionError, RewardOutputError

    for folder, values in (("task_a", "[1.0] * len(completions)"), ("task_b", "[1.0]")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "rewards.py").write_text(TWO_FILES.format(values=values))
    (tmp_path / "task_c.py").write_text("def score(completions, **kwargs):\n    raise KeyError('color')\n")
    monkeypatch.chdir(tmp_path)
    good, short = import_reward("task_a/rewards.py:score"), import_reward("task_b/rewards.py:score")
    raising = import_reward("task_c.py:score")
    call = {"prompts": ["p"] * 2, "completions": ["a", "b"]}
    assert CheckedReward(good)(**call) == [1.0, 1.0]
    with pytest.raises(RewardOutputError) as short_error:
        CheckedReward(short)(**call)
    assert str(short_error.value).startswith("Reward function 'score' returned 1 values for 2 completions")
    assert str(short_error.value).endswith("(defined at task_b/rewards.py:1)")
    with pytest.raises(RewardFunctionError) as raised:
        CheckedReward(raising, timeout=5)(**call)
    assert str(raised.value) == "Reward function 'score' raised KeyError: 'color' (defined at task_c.py:1)"
    assert isinstance(raised.value.__cause__, KeyError)
