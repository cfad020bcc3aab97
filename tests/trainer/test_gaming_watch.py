"""The gaming watch in a run (gdpo_trl/trainer/gaming_watch.py): what it logs and warns, fed by hand, and in a real
GDPOTrainer run the same values as the rule after the fact on its log_history."""

import warnings
from collections import defaultdict
from types import SimpleNamespace

import pytest

from gdpo_trl import GDPOTrainer
from gdpo_trl.core.gaming import GamingRule, scan
from gdpo_trl.trainer.gaming_watch import GamingWatch
from tests.helpers.toy import length_mod_reward, parity_reward, toy_config, toy_dataset


class FakeTrainer:
    """What the watch reads of a trainer: its metrics, as GRPOTrainer keeps them until it logs."""

    def __init__(self):
        self._metrics = {"train": defaultdict(list)}


# Per step: (format means of the step's batches, correctness, mean length): H9's shape.
STEPS = [([0.0, 0.0], 0.0, 200.0), ([0.25, 0.25], 0.0, 160.0), ([0.5, 0.5], 0.0, 90.0), ([0.75, 0.75], 0.0, 70.0)]


def feed(watch, trainer, steps, should_log=True):
    state = SimpleNamespace(global_step=0, is_world_process_zero=True, log_history=[])
    logged = []
    for formats, correctness, length in steps:
        state.global_step += 1
        metrics = trainer._metrics["train"]
        metrics["rewards/format_reward/mean"].extend(formats)
        metrics["rewards/correctness_reward/mean"].append(correctness)
        metrics["completions/mean_length"].append(length)
        watch.on_step_end(None, state, SimpleNamespace(should_log=should_log))
        logged.append({key: list(values) for key, values in metrics.items() if key.startswith("gaming/")})
        metrics.clear()  # as GRPOTrainer.log does after logging
    return logged


def test_logs_its_metrics_from_the_window_th_step_and_warns_once():
    trainer = FakeTrainer()
    watch = GamingWatch(trainer)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        logged = feed(watch, trainer, STEPS + [([1.0], 0.0, 50.0)])
    assert logged[:3] == [{}, {}, {}]  # the window (4 logged steps) is not full yet
    # step 4: format 0.125 -> 0.625, correctness 0 -> 0, length 180 -> 80
    assert logged[3]["gaming/fired"] == [1.0] and logged[3]["gaming/easy_rise"] == [pytest.approx(0.5)]
    assert logged[3]["gaming/length_change"] == [pytest.approx(80 / 180 - 1)]
    assert logged[4]["gaming/fired"] == [1.0]  # fires again at step 5, warned only once
    lines = [str(w.message) for w in caught]
    assert len(lines) == 1 and "at step 4" in lines[0] and "format_reward 0.12 -> 0.62" in lines[0]
    assert caught[0].filename.endswith("gaming_watch.py")  # a package warning: gdpo train prints it as one line
    assert watch.first_firing == 4


def test_judges_only_steps_that_are_logged():
    trainer = FakeTrainer()
    watch = GamingWatch(trainer)
    assert feed(watch, trainer, STEPS, should_log=False) == [{}, {}, {}, {}] and not watch.entries


def test_a_resumed_run_reads_its_window_back_and_does_not_warn_again():
    trainer = FakeTrainer()
    history = [
        {"step": i + 1, "rewards/format_reward/mean": sum(f) / 2, "rewards/correctness_reward/mean": c,
         "completions/mean_length": n, "loss": 0.1}
        for i, (f, c, n) in enumerate(STEPS[:3])
    ]  # fmt: skip
    watch = GamingWatch(trainer)
    watch.on_train_begin(None, SimpleNamespace(log_history=history), None)
    assert [e["step"] for e in watch.entries] == [1, 2, 3] and "loss" not in watch.entries[0]
    trainer._metrics["train"].update({"rewards/format_reward/mean": [0.75], "rewards/correctness_reward/mean": [0.0],
                                      "completions/mean_length": [70.0]})  # fmt: skip
    with pytest.warns(UserWarning, match="at step 4"):  # the window holds steps 1-3 from before the stop
        watch.on_step_end(
            None, SimpleNamespace(global_step=4, is_world_process_zero=True), SimpleNamespace(should_log=True)
        )
    assert trainer._metrics["train"]["gaming/fired"] == [1.0]
    fired_before = GamingWatch(trainer)
    fired_before.on_train_begin(None, SimpleNamespace(log_history=[{"step": 4, "gaming/fired": 1.0}]), None)
    assert fired_before.first_firing == 4  # fired before the stop: no second warning


def test_every_run_carries_it_and_logs_what_the_rule_gives_after_the_fact(tiny_model_path, tmp_path):
    """A 3-step run with a window of 2: the gaming/* values it logged are the rule's on its own log_history."""
    rule = GamingRule(window=2, rise=0.0, hard_rise=10.0, hard_ceiling=10.0, length_drop=0.0)
    trainer = GDPOTrainer(
        tiny_model_path,
        reward_funcs=[parity_reward, length_mod_reward],
        args=toy_config(tmp_path, max_steps=3),
        train_dataset=toy_dataset(),
    )
    assert sum(isinstance(cb, GamingWatch) for cb in trainer.callback_handler.callbacks) == 1
    trainer.remove_callback(GamingWatch)
    trainer.add_callback(GamingWatch(trainer, rule))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train()
    history = trainer.state.log_history
    logged = [{k: v for k, v in e.items() if k.startswith("gaming/")} for e in history if "loss" in e]
    assert logged[0] == {} and all(logged[1:])
    after = [check.metrics() for check in scan(history, rule)]
    assert len(after) == 2
    for got, expected in zip(logged[1:], after, strict=True):
        assert got == pytest.approx(expected)
