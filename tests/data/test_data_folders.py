"""Local dataset folders load (issue 40: "BuilderConfig 'main' not found. Available: ['default']" in train and eval):
a folder of .jsonl or .parquet files, with split names in the file names or folders or without, and a save_to_disk
folder; a missing split or an empty folder is one line."""

import json

import datasets
import pytest

from gdpo_trl.core.errors import InputError
from gdpo_trl.data.sources import load_source

ROWS = [{"question": f"What is {i} times 2?", "answer": f"{i} * 2 = {2 * i}\n#### {2 * i}"} for i in range(6)]


def write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        datasets.Dataset.from_list(rows).to_parquet(str(path))
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))


# (id, {file: rows}, split, the gold answers read)
LAYOUTS = [
    ("jsonl_no_split", {"part1.jsonl": ROWS[:2], "part2.jsonl": ROWS[2:3]}, "train", ["0", "2", "4"]),
    ("jsonl_no_split_test", {"data.jsonl": ROWS[:2]}, "test", ["0", "2"]),
    ("jsonl_split_names", {"train.jsonl": ROWS[:4], "test.jsonl": ROWS[4:]}, "test", ["8", "10"]),
    ("parquet_split_folders", {"train/a.parquet": ROWS[:3], "test/a.parquet": ROWS[3:4]}, "test", ["6"]),
    ("parquet_no_split", {"rows.parquet": ROWS[:1]}, "train", ["0"]),
]


@pytest.mark.parametrize(("files", "split", "golds"), [r[1:] for r in LAYOUTS], ids=[r[0] for r in LAYOUTS])
def test_a_local_folder_loads(tmp_path, files, split, golds):
    for name, rows in files.items():
        write(tmp_path / "data" / name, rows)
    rows = load_source(str(tmp_path / "data"), split=split)
    assert sorted(rows["answer"], key=int) == golds


def test_a_saved_dataset_dict_loads(tmp_path):
    datasets.DatasetDict({"train": datasets.Dataset.from_list(ROWS[:2]), "test": datasets.Dataset.from_list(ROWS[5:])}
                         ).save_to_disk(str(tmp_path / "saved"))  # fmt: skip
    assert load_source(str(tmp_path / "saved"), split="test")["answer"] == ["10"]


@pytest.mark.parametrize(
    ("files", "split", "words"),
    [({"train.jsonl": ROWS}, "validation", "has no split 'validation': it has ['train']"),
     ({"notes.txt": []}, "train", "holds no .json, .jsonl or .parquet file")],
    ids=["missing_split", "no_data_files"],
)  # fmt: skip
def test_a_folder_that_cannot_serve_is_one_line(tmp_path, files, split, words):
    for name, rows in files.items():
        write(tmp_path / "data" / name, rows)
    if "train.jsonl" in files:
        write(tmp_path / "data" / "test.jsonl", ROWS[:1])  # two split names: a third is missing, not the whole set
        words = "has no split 'validation': it has ['test', 'train']"
    with pytest.raises(InputError, match=words.replace("[", r"\[").replace("]", r"\]")):
        load_source(str(tmp_path / "data"), split=split)
