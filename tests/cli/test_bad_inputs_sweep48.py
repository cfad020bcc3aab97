"""The silent and poor cases of the second new-user sweep, one row each through ``gdpo train`` and ``gdpo eval``: one line,
exit 2, the output folder untouched (:func:`tests.helpers.bad_inputs.check_train_rejects`)."""

import json
import os
import resource
from pathlib import Path

import datasets
import pytest

from gdpo_trl.cli.evaluate import main as eval_main
from tests.helpers.bad_inputs import GOOD_ROW, assert_one_line_error, check_train_rejects, run_cli, write_jsonl


def mixed_folder(tmp):
    """Before: trained on the .jsonl half only (10 of 20 rows), with or without --dataset_config."""
    (tmp / "mixed").mkdir()
    write_jsonl(tmp / "mixed" / "part1.jsonl", [GOOD_ROW] * 2)
    datasets.Dataset.from_list([GOOD_ROW] * 2).to_parquet(str(tmp / "mixed" / "part2.parquet"))
    return str(tmp / "mixed")


def sparse_5gb(tmp):
    """Before: grew gdpo train to 8.8 GB and was OOM-killed (exit 137). Sparse: os.truncate writes nothing."""
    path = tmp / "junk.jsonl"
    write_jsonl(path, [GOOD_ROW])
    os.truncate(path, 5 * 10**9)
    return str(path)


def no_newlines(tmp):
    """Before: MemoryError after 37-42 lines, or the OOM killer. 5 MB on one line."""
    path = tmp / "one_line.jsonl"
    path.write_text(json.dumps(GOOD_ROW) * 80_000)
    return str(path)


def long_prompt(tmp):
    """Before, in gdpo eval: killed at 7.6 GB with nothing printed (gdpo train already refused it)."""
    return write_jsonl(tmp / "long.jsonl", [GOOD_ROW, {**GOOD_ROW, "question": "x" * 100_000}])


# (id, what writes the data, words of the one line)
DATA_ROWS = [
    ("data_mixed_formats", mixed_folder, ["mixes formats", "1 json file (part1.jsonl)", "1 parquet file (part2.parquet)"]),
    ("data_5gb_sparse", sparse_5gb, ["junk.jsonl is 5,000 MB", "1000 MB", "GDPO_TRL_MAX_DATA_MB"]),
    ("data_no_newlines", no_newlines, ["one_line.jsonl:1: a line longer than 4 MB", "GDPO_TRL_MAX_LINE_MB"]),
]  # fmt: skip


@pytest.mark.parametrize(("make", "words"), [r[1:] for r in DATA_ROWS], ids=[r[0] for r in DATA_ROWS])
def test_gdpo_train_refuses_the_data_in_one_line(tmp_path, capsys, monkeypatch, make, words):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    check_train_rejects(tmp_path, capsys, monkeypatch, {"dataset_name": make(tmp_path)}, [], None, words)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before  # KB; imports take a few hundred MB
    assert make is not sparse_5gb or grown < 1_000_000  # the 5 GB were not read


@pytest.mark.parametrize(
    ("make", "words"),
    [r[1:] for r in DATA_ROWS]
    + [(long_prompt, ["1 of 2 prompts", "(row 1)", "100,156 characters", "--max_new_tokens=1024"])],
    ids=[r[0] for r in DATA_ROWS] + ["eval_prompt_100k_characters"],
)
def test_gdpo_eval_refuses_the_data_in_one_line(tmp_path, capsys, make, words):
    out = tmp_path / "out"
    argv = ["--model", "builtin:tiny", "--dataset", make(tmp_path), "--output_dir", str(out)]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code, err = run_cli(eval_main, argv, capsys)
    assert code == 2
    assert_one_line_error(err, "gdpo eval", words)
    assert not out.exists()
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert make is not sparse_5gb or grown < 1_000_000


# (id, reward_funcs, dataset_name, whether one warning line names them)
AGENT_ROWS = [
    ("text_rewards_on_agent", ["format", "correctness"], "agent", True),  # before: nothing said
    ("tool_reward_beside_agent_ones", ["agent_success", "tool_format"], "agent", True),
    ("agent_rewards", ["agent_success", "agent_format", "agent_cost"], "agent", False),
    ("text_rewards_on_text", ["format", "correctness"], "sample", False),
]


@pytest.mark.parametrize(("funcs", "dataset", "warned"), [r[1:] for r in AGENT_ROWS], ids=[r[0] for r in AGENT_ROWS])
def test_text_rewards_on_an_agent_source_are_warned_about_in_one_line(caplog, funcs, dataset, warned):
    from types import SimpleNamespace

    from gdpo_trl.data.sources import environment_factory
    from gdpo_trl.run.agent_checks import check_agent_recipe

    script_args = SimpleNamespace(reward_funcs=funcs, dataset_name=dataset)
    with caplog.at_level("WARNING", logger="gdpo_trl"):
        check_agent_recipe(script_args, SimpleNamespace(reward_conditions=None), environment_factory(dataset))
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == warned and all("\n" not in line for line in lines)
    if warned:
        text = [name for name in funcs if not name.startswith("agent_")]
        assert lines[0].startswith(f"reward_funcs {text} score a completion's text, but dataset_name 'agent' makes")
        assert "they read only the last message: the calls earn nothing" in lines[0]
        assert "agent_success, agent_format, agent_cost" in lines[0]


@pytest.fixture
def no_network(monkeypatch, tmp_path):
    """HF_HUB_OFFLINE unset, an empty Hugging Face cache, and a Hub that refuses every connection (a closed local
    port, so the row means the same on a machine with a network)."""
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # read at import, from the tests' HF_HUB_OFFLINE=1
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    endpoint = "http://127.0.0.1:9"
    monkeypatch.setattr(
        constants, "HUGGINGFACE_CO_URL_TEMPLATE", endpoint + "/{repo_id}/resolve/{revision}/{filename}"
    )
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)


def test_a_hub_model_without_a_network_is_one_line_naming_hf_hub_offline(tmp_path, capsys, monkeypatch, no_network):
    """Before: bounded in time, but a 90-line traceback from inside transformers."""
    words = ["model 'no-org/no-model' is not in the local Hugging Face cache and the Hub cannot be reached (",
             "set HF_HUB_OFFLINE=1", "a local model folder or a builtin: model", "hf download no-org/no-model"]  # fmt: skip
    check_train_rejects(tmp_path, capsys, monkeypatch, {"model_name_or_path": "no-org/no-model"}, [], None, words)


@pytest.mark.parametrize(
    ("number", "words"),
    [(13, "permission denied: fix the folder's permissions, or write elsewhere"),
     (30, "the file system is read-only: write elsewhere")],
    ids=["permission_denied", "read_only_file_system"],
)  # fmt: skip
def test_recipes_copy_into_a_read_only_folder_names_it_in_one_line(tmp_path, capsys, monkeypatch, number, words):
    """Before: a 22-line OSError traceback. Simulated (the tests run as root, who writes anywhere): the rename that
    ends the write raises the errno the kernel would (13 EACCES, 30 EROFS)."""
    import gdpo_trl.storage.safe_write as safe_write
    from gdpo_trl.cli.recipes import main as recipes_main

    def refused(source, target):
        raise OSError(number, os.strerror(number))

    monkeypatch.setattr(safe_write.os, "replace", refused)
    (tmp_path / "locked").mkdir()
    code, err = run_cli(recipes_main, ["copy", "cpu/gdpo", str(tmp_path / "locked")], capsys)
    assert code == 2
    assert_one_line_error(err, "gdpo recipes", [f"cannot write {tmp_path / 'locked' / 'config.yaml'}: {words}"])
    assert list((tmp_path / "locked").iterdir()) == []  # no half file, no .partial


ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"


def folder_without_test(tmp):
    (tmp / "gsm8k").mkdir()
    write_jsonl(tmp / "gsm8k" / "train.jsonl", [GOOD_ROW])
    return str(tmp / "gsm8k")


# (id, script (or a study's module, run with -m), its arguments ({tmp}: the test's folder), the one line it answers with)
SCRIPT_ROWS = [
    ("study_data_missing", "studies.smollm2_runner", ["run", "--data", "{tmp}/nope.jsonl"],
     "--data {tmp}/nope.jsonl: not a folder; give the GSM8K folder holding train.jsonl and test.jsonl"),
    ("study_no_test_jsonl", "studies.smollm2_runner", ["run", "--data", "{tmp}/gsm8k"],
     "--data {tmp}/gsm8k: no test.jsonl there (openai/grade-school-math's files: train.jsonl, test.jsonl)"),
    ("study_workers_0", "studies.smollm2_runner", ["run", "--data", "{tmp}/gsm8k", "--workers", "0"],
     "--workers 0: give 1 or more (jobs run at the same time)"),
    ("study_threads_0", "studies.smollm2_runner", ["status", "--threads", "0"],
     "--threads 0: give 1 or more, or leave it out (the CPU's cores / --workers)"),
    # Before: an empty-median traceback after 142 s; past 300 s to the same; accepted, silent; CalledProcessError.
    ("bench_rounds_0", "benchmark_cpu_path.py", ["--rounds", "0"],
     "--rounds 0: give 1 or more (runs of each path, alternating)"),
    ("bench_steps_1", "benchmark_cpu_path.py", ["--steps", "1"],
     "--steps 1: give 2 or more (the first step of each run is left out)"),
    ("bench_busy_negative", "benchmark_cpu_path.py", ["--busy", "-2"], "--busy -2: give 0 or more spinning processes"),
    ("bench_data_missing", "benchmark_cpu_path.py", ["--data", "{tmp}/gsm8k"],
     "--data {tmp}/gsm8k: no train.jsonl and test.jsonl there (openai/grade-school-math's files)"),
    ("bench_model_missing", "benchmark_cpu_path.py", ["--model", "{tmp}/nope-model"],
     "--model '{tmp}/nope-model' is not a folder: {tmp}/ has no 'nope-model'"),
]  # fmt: skip


@pytest.mark.parametrize(("script", "argv", "line"), [r[1:] for r in SCRIPT_ROWS], ids=[r[0] for r in SCRIPT_ROWS])
def test_a_script_checks_its_arguments_in_one_line_before_work(tmp_path, script, argv, line):
    """Before: the H8 study runner's run gave a RuntimeError after 41 s (a missing data file, a folder without
    test.jsonl) or a ZeroDivisionError (--workers 0); benchmark_cpu_path.py as its rows say."""
    import subprocess
    import sys
    import time

    folder_without_test(tmp_path)
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    out = tmp_path / "out"
    study = script.startswith("studies.")  # the repository's studies/, not installed: on the path from its root
    argv += ["--out" if study else "--output", str(out)]
    command = [sys.executable, "-m", script] if study else [sys.executable, str(SCRIPTS / script)]
    started = time.monotonic()
    done = subprocess.run([*command, *argv], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", **({"PYTHONPATH": str(ROOT)} if study else {})})  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(line.replace("{tmp}", str(tmp_path))) and done.stderr.count("\n") == 1
    assert not out.exists() and time.monotonic() - started < 60  # nothing started


LORA = {"use_peft": True, "lora_r": 4, "lora_target_modules": ["q_proj", "v_proj"], "merge_lora_for_generation": True}
# (id, launch flags, the one line's words)
ENGINE_ROWS = [
    ("merge_lora_zero2", ["--accelerate_config", "zero2"],
     ["merge_lora_for_generation=true is not checked under DeepSpeed ZeRO-2", "the weights stay whole",
      "only ZeRO-3 shards them", "drop merge_lora_for_generation"]),
    ("merge_lora_zero2_flag", ["--use_deepspeed", "--zero_stage", "1"], ["not checked under DeepSpeed ZeRO-1"]),
    ("merge_lora_zero3", ["--accelerate_config", "zero3"],
     ["needs each process to hold whole weights; under DeepSpeed ZeRO-3 they are sharded"]),
]  # fmt: skip


@pytest.mark.parametrize(("launch", "words"), [r[1:] for r in ENGINE_ROWS], ids=[r[0] for r in ENGINE_ROWS])
def test_merge_lora_under_deepspeed_is_refused_before_any_process_starts(tmp_path, capsys, monkeypatch, launch, words):
    """Before: refused by the trainer after the model loaded (91 s), with ZeRO-3's reason under ZeRO-2 too."""
    import gdpo_trl.cli.launch as launch_module

    monkeypatch.setattr(launch_module, "launch_training", lambda *args: pytest.fail("a process was started"))
    flags = [*launch, "--num_processes", "2", "--main_process_port", "29999"]
    check_train_rejects(tmp_path, capsys, monkeypatch, LORA, flags, None, words)


def test_the_trainer_gives_the_engine_s_own_reason(monkeypatch):
    """The same line from the trainer, for a run started some other way (accelerate launch -m gdpo_trl.cli.train)."""
    from gdpo_trl.core.errors import InputError
    from gdpo_trl.trainer import lora_generation

    for engine, stage, words in [("deepspeed", 2, "not checked under DeepSpeed ZeRO-2"),
                                 ("deepspeed", 3, "under DeepSpeed ZeRO-3 they are sharded"),
                                 ("fsdp", None, "under FSDP they are sharded")]:  # fmt: skip
        monkeypatch.setattr(lora_generation, "running_engine", lambda e=engine, s=stage: (e, s))
        with pytest.raises(InputError, match=words):
            lora_generation.check_merge_for_generation(None, sharded=True)
    assert lora_generation.engine_refusal(None) is None  # one process or DDP: merged
