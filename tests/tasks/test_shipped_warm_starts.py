"""The shipped warm starts: builtin:NAME loads committed weights whose SHA-256 the manifest records, the manifest
matches the current recipes (a recipe change without re-shipping fails here), and a damaged copy is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gdpo_trl.core.plugins import resolve_model
from gdpo_trl.models import shipped
from gdpo_trl.tasks import rebuild
from gdpo_trl.tasks.warm_starts import WARM_STARTS, warm_start_build_id

NAMES = ["agent_warmstart", "toolcall_warmstart", "warmstart"]


def test_every_warm_start_ships_for_its_current_recipe():
    entries = shipped.manifest()
    assert sorted(entries) == NAMES == sorted(WARM_STARTS)
    for name, entry in entries.items():
        assert entry["seed"] == 0
        assert entry["build_id"] == warm_start_build_id(name, 0), (
            f"{name}'s recipe changed since it was shipped: python -m gdpo_trl.tasks.rebuild --ship {name}"
        )
        record = json.loads((shipped.SHIPPED_DIR / entry["folder"] / "warmstart.json").read_text())
        assert record["seed"] == 0 and record["build_seconds"] > 0
        assert entry["built_on"].count("torch") == 1


@pytest.mark.parametrize("name", NAMES)
def test_builtin_resolves_to_the_shipped_weights(name, tmp_path, monkeypatch):
    monkeypatch.setenv("GDPO_TRL_CACHE", str(tmp_path))  # an empty cache: nothing may be built
    path = Path(resolve_model(f"builtin:{name}"))
    entry = shipped.manifest()[name]
    assert path == shipped.SHIPPED_DIR / entry["folder"]
    assert shipped.weights_sha256(path) == entry["weights_sha256"]
    assert shipped.file_sha256(path / "model.safetensors") == entry["file_sha256"]
    assert list(tmp_path.iterdir()) == []


def test_verify_passes_on_the_shipped_files(capsys):
    assert shipped.verify() == 0
    assert capsys.readouterr().out.count("ok  builtin:") == 3


def test_a_damaged_copy_is_refused_in_one_line(tmp_path, monkeypatch):
    entry = shipped.manifest()["warmstart"]
    copy = tmp_path / "shipped"
    shutil.copytree(shipped.SHIPPED_DIR, copy)
    weights = copy / entry["folder"] / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # one bit of one weight
    weights.write_bytes(bytes(data))
    monkeypatch.setattr(shipped, "SHIPPED_DIR", copy)
    monkeypatch.setattr(shipped, "MANIFEST", copy / "manifest.json")
    with pytest.raises(RuntimeError, match=r"^The shipped builtin:warmstart at .* is missing or damaged .*reinstall"):
        shipped.shipped_warm_start("warmstart", 0, entry["build_id"])
    assert shipped.verify() == 1


def test_another_seed_or_recipe_is_not_the_shipped_one():
    build_id = warm_start_build_id("warmstart", 0)
    assert shipped.shipped_warm_start("warmstart", 0, build_id) is not None
    assert shipped.shipped_warm_start("warmstart", 3, warm_start_build_id("warmstart", 3)) is None
    assert shipped.shipped_warm_start("warmstart", 0, "0000000000") is None


def test_weights_hash_ignores_the_file_header(tmp_path):
    """Equal tensors hash equal even when the safetensors header differs (another library version's metadata)."""
    import torch
    from safetensors.torch import save_file

    tensors = {"b": torch.arange(6.0).reshape(2, 3), "a": torch.ones(4)}
    for name, metadata in (("x", {"format": "pt"}), ("y", {"format": "pt", "note": "other"})):
        (tmp_path / name).mkdir()
        save_file(tensors, str(tmp_path / name / "model.safetensors"), metadata=metadata)
    assert shipped.file_sha256(tmp_path / "x/model.safetensors") != shipped.file_sha256(tmp_path / "y/model.safetensors")
    assert shipped.weights_sha256(tmp_path / "x") == shipped.weights_sha256(tmp_path / "y")
    tensors["a"][0] = 2.0
    save_file(tensors, str(tmp_path / "x" / "model.safetensors"))
    assert shipped.weights_sha256(tmp_path / "x") != shipped.weights_sha256(tmp_path / "y")


def test_rebuild_says_whether_the_build_equals_the_shipped_weights(capsys):
    rebuild._say_comparison("warmstart", "abc", "abc")
    rebuild._say_comparison("warmstart", "abc", "def")
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "weights SHA-256 abc: equal to the shipped builtin:warmstart."
    assert out[1].startswith("weights SHA-256 abc: differs from the shipped builtin:warmstart (def).")
    assert "still loads the shipped weights" in out[1]
