"""Local dataset folders load ("BuilderConfig 'main' not found. Available: ['default']" in train and eval):
a folder of .jsonl or .parquet files, with split names in the file names or folders or without, and a save_to_disk
folder; a missing split or an empty folder is one line."""

import json
import os

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


@pytest.mark.parametrize("config", [None, "main"])
def test_a_folder_mixing_formats_is_one_line_naming_them(tmp_path, config):
    """.jsonl beside .parquet trained on the .jsonl half only (10 of 20 rows), with or without a config."""
    write(tmp_path / "data" / "part1.jsonl", ROWS[:3])
    write(tmp_path / "data" / "part2.parquet", ROWS[3:])
    with pytest.raises(InputError) as caught:
        load_source(str(tmp_path / "data"), split="train", config=config or "main")
    assert str(caught.value) == (
        f"data folder {tmp_path / 'data'} mixes formats: 1 json file (part1.jsonl), 1 parquet file (part2.parquet); "
        "datasets would read one format and drop the rest. Keep one format per folder (convert the others, or move "
        "them out)."
    )


def test_json_and_jsonl_files_are_one_format(tmp_path):
    write(tmp_path / "data" / "a.jsonl", ROWS[:2])
    (tmp_path / "data" / "b.json").write_text(json.dumps(ROWS[2:3]))
    assert sorted(load_source(str(tmp_path / "data"))["answer"], key=int) == ["0", "2", "4"]


def test_a_huge_file_is_refused_by_its_size_before_it_is_read(tmp_path, monkeypatch):
    """A 5 GB file (sparse: os.truncate writes nothing) is refused from its size, for .jsonl and .parquet alike."""
    import resource

    for name in ("big.jsonl", "big.parquet"):
        path = tmp_path / name
        write(path, ROWS[:1])
        os.truncate(path, 5 * 10**9)
        with pytest.raises(InputError, match=rf"{name} is 5,000 MB, more than the 1000 MB read at most: .* set "
                                             r"GDPO_TRL_MAX_DATA_MB higher"):  # fmt: skip
            load_source(str(path))
    monkeypatch.setenv("GDPO_TRL_MAX_DATA_MB", "6000")  # raised: the zeros after row 1 are one line too long
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(InputError, match=r"big.jsonl:2: a line longer than 4 MB .* set GDPO_TRL_MAX_LINE_MB higher"):
        load_source(str(tmp_path / "big.jsonl"))
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # KB: memory did not grow


def test_a_line_over_the_limit_is_refused_and_the_limit_can_be_raised(tmp_path, monkeypatch):
    path = tmp_path / "long.jsonl"
    write(path, [ROWS[0], {**ROWS[1], "question": "x" * 5_000_000}])  # no newline in 5 MB
    with pytest.raises(InputError, match=r"long.jsonl:2: a line longer than 4 MB"):
        load_source(str(path))
    monkeypatch.setenv("GDPO_TRL_MAX_LINE_MB", "6")
    assert len(load_source(str(path))) == 2
    monkeypatch.setenv("GDPO_TRL_MAX_LINE_MB", "lots")
    with pytest.raises(InputError, match=r"GDPO_TRL_MAX_LINE_MB='lots' is not a positive number of MB"):
        load_source(str(path))


def test_a_hub_clone_s_metadata_beside_parquet_is_not_a_second_format(tmp_path):
    """dataset_infos.json and hidden files are not data (datasets skips them): no mixed-formats refusal."""
    write(tmp_path / "data" / "train" / "a.parquet", ROWS[:2])
    (tmp_path / "data" / "dataset_infos.json").write_text("{}")
    (tmp_path / "data" / ".cache").mkdir()
    (tmp_path / "data" / ".cache" / "x.jsonl").write_text("not json\n")
    assert sorted(load_source(str(tmp_path / "data"))["answer"], key=int) == ["0", "2"]


def test_a_folder_over_the_size_limit_together_is_refused(tmp_path):
    for name in ("a.jsonl", "b.jsonl"):  # 600 MB each, sparse: under the limit alone, over it together
        write(tmp_path / "data" / name, ROWS[:1])
        os.truncate(tmp_path / "data" / name, 600 * 10**6)
    with pytest.raises(InputError, match=r"data folder .*data holds 2 data files of 1,200 MB, more than the 1000 MB"):
        load_source(str(tmp_path / "data"))


def test_a_csv_line_over_the_limit_is_refused(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("question,answer\n" + "x" * 5_000_000 + ",#### 1\n")
    with pytest.raises(InputError, match=r"rows.csv:2: a line longer than 4 MB"):
        load_source(str(path))
