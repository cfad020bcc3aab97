"""The rows for agent settings and for disks and files: each fails in one line naming the culprit and the fix,
before the model loads, and leaves nothing partial behind.

Read-only folders and full disks are simulated (the tests run as root, who writes anywhere, and no disk is filled):
the rename that ends every write raises the errno the kernel would."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

import gdpo_trl.run.build as build
import gdpo_trl.run.inputs as inputs
import gdpo_trl.storage.safe_write as safe_write
from gdpo_trl.cli.plot import main as plot_main
from gdpo_trl.core.errors import InputError
from gdpo_trl.eval.report import write_outputs
from gdpo_trl.run.agent_checks import check_environments
from tests.helpers.bad_inputs import assert_one_line_error, check_train_rejects, run_cli

REASON = safe_write.REASONS
AGENT = {"dataset_name": "agent", "synthetic_size": 8, "reward_funcs": ["agent_success", "agent_format"]}


# --- recipe values ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides, words",
    [
        ({"synthetic_size": 12.7}, ["synthetic_size", "is not an integer"]),
        ({"env": {"X": [1, 2]}}, ["env: X: [1, 2] is not one value", 'X: "1"']),
        ({"env": ["HF_HUB_OFFLINE=1"]}, ["env: must be a mapping of VARIABLE: value", "got a list"]),
        ({"reward_conditions": {}}, ["reward_conditions is empty", "conditions no reward", "remove the field"]),
        ({"reward_funcs": ["agent_success", "agent_cost"]}, ["['agent_success', 'agent_cost']", "no environment"]),
    ],
)
def test_settings_that_can_never_apply_are_refused_in_one_line(tmp_path, capsys, monkeypatch, overrides, words):
    check_train_rejects(tmp_path, capsys, monkeypatch, overrides, [], None, words)


# --- environments, probed before the model loads ----------------------------------------------------------------------


class Raises:
    def reset(self, **kwargs):
        raise KeyError("prices")

    def price(self, item: str) -> int:
        """A price.

        Args:
            item: the item.
        """
        return 1


class FailsToStart(Raises):
    def __init__(self):
        raise OSError("no price list")


class NoReset:
    pass


@pytest.mark.parametrize(
    "factory, words",
    [
        (Raises(), ["environment", "is not callable", "environment=ShopEnv, not ShopEnv()"]),
        (Raises, ["environment Raises", "reset() raised KeyError on the first row", "fix reset()"]),
        ({"shop": 42}, ["environment 'shop' (42) is not callable"]),
        (FailsToStart, ["environment FailsToStart: making one raised OSError: no price list"]),
        (NoReset, ["environment NoReset has no reset() method"]),
    ],
)
def test_an_environment_that_cannot_start_is_named_before_the_model_loads(
    tmp_path, capsys, monkeypatch, factory, words
):
    monkeypatch.setattr(inputs, "environment_factory", lambda name: factory)
    loaded = []
    monkeypatch.setattr(build, "GDPOTrainer", loaded.append, raising=False)  # never reached
    check_train_rejects(tmp_path, capsys, monkeypatch, AGENT, [], None, words)
    assert not loaded


def test_a_chat_template_that_cannot_render_tools_is_named(tmp_path, capsys, monkeypatch):
    """builtin:tiny's template has no tool calls; the agent source's real ShopEnv passes its probe."""
    check_train_rejects(
        tmp_path, capsys, monkeypatch, AGENT, [], None, ["chat template of", "cannot render tool calls"]
    )


def test_a_probed_environment_gets_the_row_without_its_environment_column():
    seen = []

    class Records:
        def reset(self, **kwargs):
            seen.append(kwargs)

    rows = [{"prompt": "p", "environment": "b", "x": 1}, {"prompt": "q", "environment": "a", "x": 2}]
    with pytest.raises(InputError, match="cannot render tool calls"):
        check_environments({"a": Records, "b": Records}, rows, type("T", (), {"chat_template": None})(), "m")
    assert seen == [{"prompt": "q", "x": 2}, {"prompt": "p", "x": 1}]


# --- disks and files: gdpo plot, gdpo eval, the model cache -----------------------------------------------------------


def failing_replace(number: int):
    def replace(src, dst):
        raise OSError(number, os.strerror(number))

    return replace


def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    history = [{"step": s, "reward": 0.1 * s, "rewards/a/mean": 0.1 * s} for s in (1, 2, 3)]
    (run / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    return run


def test_plot_table_naming_a_folder_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "tables").mkdir()
    argv = [str(run_dir(tmp_path)), "--table", str(tmp_path / "tables"), "--output_file", str(tmp_path / "r.png")]
    status, err = run_cli(plot_main, argv, capsys)
    assert status == 2
    assert_one_line_error(err, "gdpo plot", [f"{tmp_path / 'tables'} is a folder, not a file", "runs.md"])
    assert not (tmp_path / "r.png").exists()


@pytest.mark.parametrize(
    "number, words",
    [(errno.EROFS, "the file system is read-only"), (errno.ENOSPC, "the disk is full: free some space")],
)
def test_plot_on_a_read_only_or_full_disk_says_where_and_leaves_nothing(tmp_path, capsys, monkeypatch, number, words):
    run, out = run_dir(tmp_path), tmp_path / "plots"
    out.mkdir()
    monkeypatch.setattr(safe_write.os, "replace", failing_replace(number))
    status, err = run_cli(
        plot_main, [str(run), "--output_file", str(out / "r.png"), "--table", str(out / "t.md")], capsys
    )
    assert status == 2
    assert_one_line_error(err, "gdpo plot", [f"cannot write {out / 't.md'}", words])
    assert list(out.iterdir()) == []  # no .partial, no half file


@pytest.mark.parametrize("number, words", [(errno.EROFS, "read-only"), (errno.ENOSPC, "the disk is full")])
def test_eval_results_on_a_read_only_or_full_disk(tmp_path, monkeypatch, number, words):
    monkeypatch.setattr(safe_write.os, "replace", failing_replace(number))
    with pytest.raises(InputError) as refused:
        write_outputs(tmp_path / "eval", {"metrics": {}}, [{"a": 1}])
    assert str(refused.value) == f"gdpo eval: cannot write {tmp_path / 'eval' / 'summary.json'}: {REASON[number]}."
    assert words in str(refused.value)
    assert list((tmp_path / "eval").iterdir()) == []


def test_a_read_only_eval_output_dir_is_refused_before_the_evaluation(tmp_path, monkeypatch):
    from gdpo_trl.eval.report import plan_output_dir

    def read_only(**kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr("tempfile.TemporaryFile", read_only)
    with pytest.raises(InputError) as refused:
        plan_output_dir({"output_dir": str(tmp_path / "eval")}, overwrite=False)
    assert str(refused.value) == (
        f"gdpo eval --output_dir: cannot write {tmp_path / 'eval'}: the file system is read-only: write elsewhere."
    )


def test_a_model_cache_that_cannot_be_written_is_named(tmp_path, capsys, monkeypatch):
    (tmp_path / "cache").write_text("a file where the cache folder belongs")
    monkeypatch.setenv("GDPO_TRL_CACHE", str(tmp_path / "cache" / "models"))
    err = check_train_rejects(tmp_path, capsys, monkeypatch, {}, [], None, ["model cache (GDPO_TRL_CACHE)"])
    assert "a part of the path is a file, not a folder" in err or "file exists" in err.lower(), err
    assert not list(tmp_path.glob("**/*.partial")) and not list(tmp_path.glob("**/*.tmp*"))
