"""The last silent and poor cases of the first new-user sweep that stop before any model loads: one line each, exit 2, the
output folder untouched (:func:`tests.helpers.bad_inputs.check_train_rejects`)."""

from importlib.metadata import EntryPoint

import pytest
import torch

from gdpo_trl.core import plugins
from gdpo_trl.data import sources
from tests.helpers.bad_inputs import check_train_rejects

# (id, recipe overrides, extra flags, words of the one line)
ROWS = [
    # Before: passed validation, then Event.wait overflowed on every tool call: rewards 0, exit 0, nothing said.
    ("tool_timeout_beyond_wait", {}, ["--tool_timeout", "1e12"], ["tool_timeout=1e+12", "0 (or null) for no limit"]),
    ("reward_timeout_beyond_wait", {}, ["--reward_timeout", "1e11"], ["reward_timeout=1e+11", "no limit"]),
    # Before: a 36-line traceback after the model loaded.
    (
        "gd2po_process_rewards",
        {"reward_funcs": ["format", "equations"], "multi_objective_aggregation": "gd2po"},
        [],
        ["Process rewards ['equations_reward']", "multi_objective_aggregation='gd2po'", "'normalize_then_sum'"],
    ),
]


@pytest.mark.parametrize(("overrides", "flags", "words"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_refused_in_one_line_before_any_model_loads(tmp_path, capsys, monkeypatch, overrides, flags, words):
    check_train_rejects(tmp_path, capsys, monkeypatch, overrides, flags, None, words)


@pytest.mark.parametrize(
    ("group", "overrides"),
    [(plugins.MODELS, {"model_name_or_path": "builtin:broken"}), (plugins.SOURCES, {"dataset_name": "broken"})],
    ids=["model", "source"],
)
def test_a_plugin_that_fails_to_import_is_named_with_its_entry_point(tmp_path, capsys, monkeypatch, group, overrides):
    """Before: 55 lines of traceback from inside importlib."""
    found = dict(plugins.registered(group))
    found["broken"] = EntryPoint(name="broken", value="no_such_plugin_module:build", group=group)
    real = plugins.registered
    monkeypatch.setattr(plugins, "registered", lambda g: found if g == group else real(g))
    monkeypatch.setattr(sources, "registered", plugins.registered)
    words = [f"plugin 'broken' (entry point {group}: no_such_plugin_module:build)", "failed to import",
             "ModuleNotFoundError: No module named 'no_such_plugin_module'", "uninstall it"]  # fmt: skip
    check_train_rejects(tmp_path, capsys, monkeypatch, overrides, [], None, words)


def test_train_reads_a_local_dataset_folder(tmp_path, monkeypatch):
    """Before: "BuilderConfig 'main' not found. Available: ['default']". A folder with train.jsonl and test.jsonl."""
    import yaml

    from gdpo_trl.cli.train import main as train_main
    from tests.helpers.bad_inputs import BASE_RECIPE, GOOD_ROW, write_jsonl

    (tmp_path / "data").mkdir()
    write_jsonl(tmp_path / "data" / "train.jsonl", [GOOD_ROW] * 2)
    write_jsonl(tmp_path / "data" / "test.jsonl", [GOOD_ROW])
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump({**BASE_RECIPE, "dataset_name": str(tmp_path / "data")}))
    train_main(["--config", str(config), "--output_dir", str(tmp_path / "out")])
    state = (tmp_path / "out" / "trainer_state.json").read_text()
    assert '"global_step": 1' in state


def nan_checkpoint(out, step):
    from safetensors.torch import save_file

    from tests.helpers.checkpoints import make_checkpoint

    path = make_checkpoint(out, step)
    save_file({"w": torch.full((64,), float("nan"))}, str(path / "model.safetensors"))
    return path


def test_a_nan_checkpoint_is_skipped_for_the_newest_complete_one(tmp_path):
    """Before: resumed, then 75 lines ending in "probability tensor contains either inf, nan"."""
    from gdpo_trl.run.checkpoints import newest_complete_checkpoint
    from tests.helpers.checkpoints import make_checkpoint

    good = make_checkpoint(tmp_path, 2)
    nan_checkpoint(tmp_path, 4)
    found, skipped = newest_complete_checkpoint(tmp_path)
    assert found == good
    assert skipped == [
        (tmp_path / "checkpoint-4", ["model.safetensors holds non-finite weights: tensor 'w' has 64 NaN of 64 values"])
    ]


def test_resuming_a_nan_checkpoint_by_path_is_one_line(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    nan_checkpoint(out, 4)
    words = ["resume_from_checkpoint", "checkpoint-4", "non-finite weights: tensor 'w' has 64 NaN"]
    check_train_rejects(
        tmp_path, capsys, monkeypatch, {}, ["--resume_from_checkpoint", "{out}/checkpoint-4"], None, words
    )


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ("outputs/cpu-gpdo", ["'outputs/cpu-gpdo' is not a folder", "did you mean 'outputs/cpu-gdpo'?"]),
        ("./outputs/cpu-gpdo/checkpoint-2", ["outputs/ has no 'cpu-gpdo'", "did you mean 'outputs/cpu-gdpo'?"]),
        ("outputs/nothing-like-it", ["outputs/ has no 'nothing-like-it'", "it holds cpu-gdpo."]),
    ],
    ids=["existing_parent", "dot_slash", "no_close_name"],
)
def test_a_mistyped_local_model_path_is_a_missing_folder(tmp_path, capsys, monkeypatch, given, words):
    """Before: read as a Hub id; 23 s later the line suggested `hf download outputs/cpu-gpdo`."""
    (tmp_path / "outputs" / "cpu-gdpo").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    check_train_rejects(tmp_path, capsys, monkeypatch, {"model_name_or_path": given}, [], None, words)
