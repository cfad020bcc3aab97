"""What a run prints: the compact step line, and the known warnings silenced (and only those)."""

import warnings

import pytest

from gdpo_trl.cli.console import bound_completions_logging, compact_line, quiet_known_warnings


def test_compact_line():
    logs = {
        "loss": 0.0922,
        "rewards/format_reward/mean": 0.5,
        "rewards/format_reward/std": 0.4,
        "rewards/correctness_reward/mean": 0.25,
        "rewards/length_reward_if_correctness_reward/mean": 0.125,
        "reward": 0.875,
        "completions/mean_length": 14.04,
        "advantages/distinct_per_group": 3.0,
    }
    assert compact_line(logs, 4, 40) == (
        "step 4/40 | format 0.50 correctness 0.25 length_reward_if_correctness 0.12 | total 0.88 | len 14.0 | "
        "loss 0.0922"
    )
    assert compact_line({"train_runtime": 12.0, "train_loss": 0.1}, 40, 40) is None  # the Trainer's own summary


def test_only_known_warnings_are_silenced():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_known_warnings()
        warnings.warn("`gradient_checkpointing` is deprecated and will be removed in v6.", FutureWarning, stacklevel=1)
        warnings.warn("`max_steps` is deprecated", FutureWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["`max_steps` is deprecated"]


@pytest.mark.parametrize(("log", "given", "expected"), [(True, None, 4), (True, 10, 10), (False, None, None)])
def test_completions_logging_is_bounded(log, given, expected):
    class Args:
        log_completions, num_completions_to_print = log, given

    args = Args()
    bound_completions_logging(args)
    assert args.num_completions_to_print == expected
