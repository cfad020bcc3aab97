"""Damaged model folders are named before the model loads (they gave 36-68-line library tracebacks once
the model started loading).

Each row copies ``builtin:tiny``'s folder, damages one thing, and runs ``gdpo train`` on it
(:func:`tests.helpers.bad_inputs.check_train_rejects`): exit status 2, one ``gdpo train: error:`` line naming the
folder and what is wrong, no ``output_dir`` created.
"""

import shutil
import struct

import pytest
from safetensors.torch import load_file, save_file

from gdpo_trl.cli.evaluate import main as eval_main
from gdpo_trl.core.plugins import resolve_model
from tests.helpers.bad_inputs import assert_one_line_error, check_train_rejects, run_cli

NAN_TENSOR = "model.norm.weight"


def damage(folder, kind: str) -> None:
    weights = folder / "model.safetensors"
    data = weights.read_bytes()
    if kind == "truncated":
        weights.write_bytes(data[: len(data) // 2])
    elif kind == "zero_bytes":
        weights.write_bytes(b"")
    elif kind == "header_not_json":
        weights.write_bytes(data[:8] + b"#" * 16 + data[24:])
    elif kind == "header_too_long":
        weights.write_bytes(struct.pack("<Q", len(data) * 2) + data[8:])
    elif kind == "no_config":
        (folder / "config.json").unlink()
    elif kind == "config_not_json":
        (folder / "config.json").write_text('{"model_type": "qwen2",')
    elif kind == "no_chat_template":
        (folder / "chat_template.jinja").unlink()
    elif kind in ("nan_weights", "inf_weights"):  # a run that diverged: one value of one tensor
        tensors = load_file(weights)
        tensors[NAN_TENSOR] = tensors[NAN_TENSOR].clone()
        tensors[NAN_TENSOR].view(-1)[3] = float("nan" if kind == "nan_weights" else "inf")
        save_file(tensors, weights, metadata={"format": "pt"})
    else:
        raise AssertionError(kind)


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("truncated", ["model.safetensors is truncated", "damaged or cut short"]),
        ("zero_bytes", ["model.safetensors is unreadable", "damaged or cut short"]),
        ("header_not_json", ["model.safetensors is unreadable"]),
        ("header_too_long", ["model.safetensors is truncated"]),
        ("no_config", ["holds weights but no config.json"]),
        ("config_not_json", ["config.json is not valid JSON"]),
        ("no_chat_template", ["has no chat template", "prompts are conversations"]),
        ("nan_weights", [f"model.safetensors holds non-finite weights: tensor '{NAN_TENSOR}' has 1 NaN of"]),
        ("inf_weights", [f"tensor '{NAN_TENSOR}' has 1 inf of", "an earlier checkpoint"]),
    ],
)
def test_a_damaged_model_folder_is_named_before_it_loads(tmp_path, capsys, monkeypatch, kind, words):
    model = tmp_path / "model"
    shutil.copytree(resolve_model("builtin:tiny"), model)
    damage(model, kind)
    check_train_rejects(
        tmp_path, capsys, monkeypatch, {"model_name_or_path": str(model)}, [], None, [str(model), *words]
    )


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("truncated", ["model.safetensors is truncated", "damaged or cut short"]),
        ("zero_bytes", ["model.safetensors is unreadable"]),
        ("header_not_json", ["model.safetensors is unreadable"]),
        ("config_not_json", ["config.json is not valid JSON"]),
        ("no_chat_template", ["has no chat template", "chat_template.jinja"]),
        ("nan_weights", [f"model.safetensors holds non-finite weights: tensor '{NAN_TENSOR}' has 1 NaN of"]),
    ],
)
def test_gdpo_eval_names_a_damaged_model_folder_before_it_loads(tmp_path, capsys, kind, words):
    model = tmp_path / "model"
    shutil.copytree(resolve_model("builtin:tiny"), model)
    damage(model, kind)
    argv = ["--model", str(model), "--dataset", "sample", "--limit", "2", "--output_dir", str(tmp_path / "eval")]
    code, err = run_cli(eval_main, argv, capsys)
    assert code == 2
    assert_one_line_error(err, "gdpo eval", [f"{str(model)!r}", *words])
    assert not (tmp_path / "eval").exists()


def test_a_model_too_big_to_scan_is_checked_once_loaded(tmp_path, capsys, monkeypatch):
    """Above SCAN_LIMIT the files are not read before loading: gdpo eval checks the loaded parameters instead."""
    import gdpo_trl.storage.weight_files as weight_files

    monkeypatch.setattr(weight_files, "SCAN_LIMIT", 0)
    model = tmp_path / "model"
    shutil.copytree(resolve_model("builtin:tiny"), model)
    damage(model, "nan_weights")
    argv = ["--model", str(model), "--dataset", "sample", "--limit", "2", "--output_dir", str(tmp_path / "eval")]
    code, err = run_cli(eval_main, argv, capsys)
    assert code == 2
    assert_one_line_error(err, "gdpo eval", [f"tensor '{NAN_TENSOR}' has 1 NaN of", "an earlier checkpoint"])


def test_gdpo_train_checks_a_big_model_once_loaded(tmp_path, monkeypatch):
    import torch

    import gdpo_trl.storage.weight_files as weight_files
    from gdpo_trl.core.errors import InputError
    from gdpo_trl.run.checks import check_loaded_weights

    monkeypatch.setattr(weight_files, "SCAN_LIMIT", 0)
    save_file({"weight": torch.zeros(2, 2)}, tmp_path / "model.safetensors")
    layer = torch.nn.Linear(2, 2)
    with torch.no_grad():
        layer.bias[1] = float("inf")
    with pytest.raises(InputError, match=r"model.safetensors holds non-finite weights: tensor 'bias' has 1 inf of 2"):
        check_loaded_weights(layer, str(tmp_path))
