"""Damaged model folders are named before the model loads (issue 26: they gave 36-68-line library tracebacks once
the model started loading).

Each row copies ``builtin:tiny``'s folder, damages one thing, and runs ``gdpo train`` on it
(:func:`tests.helpers.bad_inputs.check_train_rejects`): exit status 2, one ``gdpo train: error:`` line naming the
folder and what is wrong, no ``output_dir`` created.
"""

import shutil
import struct

import pytest

from gdpo_trl.cli.evaluate import main as eval_main
from gdpo_trl.core.plugins import resolve_model
from tests.helpers.bad_inputs import assert_one_line_error, check_train_rejects, run_cli


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
    ],
)
def test_gdpo_eval_names_a_damaged_model_folder_before_it_loads(tmp_path, capsys, kind, words):
    model = tmp_path / "model"
    shutil.copytree(resolve_model("builtin:tiny"), model)
    damage(model, kind)
    argv = ["--model", str(model), "--dataset", "sample", "--limit", "2", "--output_dir", str(tmp_path / "eval")]
    code, err = run_cli(eval_main, argv, capsys)
    assert code == 2
    assert_one_line_error(err, "gdpo eval", [f"model {str(model)!r}:", *words])
    assert not (tmp_path / "eval").exists()
