"""``gdpo train`` end to end on the CPU recipe: flag overrides, unknown keys, resuming and early errors (each CPU
recipe's own run, trained once: test_cpu_runs.py; two processes: test_gdpo_command.py)."""

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

from gdpo_trl.cli.train import main
from gdpo_trl.recipe.arguments import parse_args
from gdpo_trl.results.runs import format_ends, reward_ends

ROOT = Path(__file__).resolve().parents[2]
CPU_RECIPE = str(ROOT / "recipes" / "cpu" / "gdpo" / "config.yaml")
REWARD_NAMES = ("format_reward", "correctness_reward", "integer_reward")


@pytest.fixture(autouse=True, scope="module")
def _restore_threads():
    """The CPU recipe's `cpu_threads: 1` applies to the whole pytest process: restore torch's setting afterwards."""
    import torch

    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _train(output_dir, *flags):
    """Run the CPU recipe in-process for 2 steps (unless flags say otherwise) and return its trainer_state.json."""
    main(["--config", CPU_RECIPE, "--max_steps", "2", "--output_dir", str(output_dir), *flags])
    return json.loads((Path(output_dir) / "trainer_state.json").read_text())


def _steps(state):
    return [entry["step"] for entry in state["log_history"] if "loss" in entry]


def test_flags_override_yaml():
    script_args, training_args, _ = parse_args(
        ["--config", CPU_RECIPE, "--learning_rate", "0.25", "--reward_funcs", "format", "integer", "--max_steps", "1"]
    )
    assert training_args.learning_rate == 0.25  # the recipe says 1e-3
    assert training_args.max_steps == 1
    assert script_args.reward_funcs == ["format", "integer"]


def test_unknown_yaml_key_is_named(tmp_path):
    recipe = tmp_path / "bad.yaml"
    recipe.write_text(Path(CPU_RECIPE).read_text() + "max_prompt_length: 256\nnot_a_field: 1\n")
    with pytest.raises(ValueError, match="max_prompt_length") as error:
        parse_args(["--config", str(recipe)])
    assert "not_a_field" in str(error.value)
    assert "max_completion_length" in str(error.value)  # the nearest field is suggested

    recipe.write_text("model_name_or_path: builtin:tiny\nuse_cpu: true\nbf16: false\nuse_vlm: true\n")
    with pytest.raises(ValueError, match="'use_vlm' \\(did you mean use_vllm"):
        parse_args(["--config", str(recipe)])


def test_unknown_flag_is_named():
    with pytest.raises(ValueError, match="--not_a_flag"):
        parse_args(["--config", CPU_RECIPE, "--not_a_flag", "1"])
    # No prefix matching: a truncated flag is an error, not silently another field.
    with pytest.raises(ValueError, match="--max_step"):
        parse_args(["--config", CPU_RECIPE, "--max_step", "1"])


@pytest.mark.slow
def test_resume_continues_from_the_last_checkpoint(tiny_model_path, tmp_path):
    """A run interrupted after checkpoint-1 resumes there and ends as an uninterrupted run would."""
    run = tmp_path / "run"
    flags = ("--save_strategy", "steps", "--save_steps", "1")
    full = _train(run, *flags)
    assert (run / "checkpoint-1").is_dir() and (run / "checkpoint-2").is_dir()

    # Simulate a crash during step 2: only checkpoint-1 survives.
    shutil.rmtree(run / "checkpoint-2")
    (run / "trainer_state.json").unlink()

    resumed = _train(run, *flags, "--resume_from_checkpoint", "true")
    assert resumed["global_step"] == 2 and resumed["max_steps"] == 2
    assert _steps(resumed) == [1, 2]  # step 1 from the checkpoint, step 2 trained again: no gap, no duplicate
    # Same schedule as the uninterrupted run: resuming kept max_steps, so step 2's learning rate is the same.
    assert [entry["learning_rate"] for entry in resumed["log_history"] if "loss" in entry] == [
        entry["learning_rate"] for entry in full["log_history"] if "loss" in entry
    ]


def input_error(argv: list[str], capsys) -> str:
    """The one-line ``gdpo train: error: ...`` message of a run that must stop with exit status 2."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err  # may begin with progress bars (datasets)
    assert err.splitlines()[-1].startswith("gdpo train: error: ") and "Traceback" not in err
    return err.splitlines()[-1]


def test_dataset_without_answer_column_fails_early(tiny_model_path, tmp_path, capsys):
    data = tmp_path / "questions.jsonl"
    data.write_text(json.dumps({"question": "What is 2 + 2?"}) + "\n")
    err = input_error(
        [
            "--config",
            CPU_RECIPE,
            "--model_name_or_path",
            tiny_model_path,
            "--dataset_name",
            str(data),
            "--output_dir",
            str(tmp_path / "run"),
        ],
        capsys,
    )
    assert "'answer'" in err
    assert not (tmp_path / "run").exists()  # failed before the trainer was built


def test_unknown_reward_fails_early(tmp_path, capsys):
    argv = ["--config", CPU_RECIPE, "--reward_funcs", "format", "no_such_reward", "--output_dir", str(tmp_path)]
    assert "unknown reward 'no_such_reward'" in input_error(argv, capsys)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed")
def test_use_vllm_without_vllm_says_how_to_fix(tmp_path, capsys):
    err = input_error(["--config", CPU_RECIPE, "--use_vllm", "true", "--output_dir", str(tmp_path)], capsys)
    assert "gdpo-trl[vllm]" in err and "use_vllm: false" in err


def test_summary_table():
    log_history = [
        {"rewards/format_reward/mean": 0.0, "reward": 0.5, "step": 1},
        {"rewards/format_reward/mean": 0.25, "reward": 1.0, "step": 2},
        {"train_runtime": 1.0, "step": 2},
    ]
    rows, window = reward_ends(log_history, ["format_reward", "integer_reward"])
    assert window == 1
    assert rows == [("rewards/format_reward/mean", 0.0, 0.25), ("reward", 0.5, 1.0)]  # integer_reward never logged
    assert "rewards/format_reward/mean     0.000     0.250" in format_ends(rows, window)


def test_summary_shows_the_conflict_shares():
    """A multi-reward run's end-of-training summary: how often its rollouts' rewards disagreed, and what GD2PO's
    rule masked (or would mask), at the start and the end, as the rewards are."""
    from types import SimpleNamespace

    from gdpo_trl.cli.train import final_summary
    from gdpo_trl.results.runs import conflict_ends

    log_history = [
        {"rewards/f/mean": 0.0, "reward": 0.0, "conflict/share": 0.5, "conflict/masked_share": 0.25, "step": 1},
        {"rewards/f/mean": 1.0, "reward": 1.0, "conflict/share": 0.25, "conflict/masked_share": 0.0, "step": 2},
    ]
    assert conflict_ends(log_history, 1) == [("conflict/share", 0.5, 0.25), ("conflict/masked_share", 0.25, 0.0)]
    assert conflict_ends(log_history[:1], 2) == [] and conflict_ends([{"reward": 1.0, "step": 1}], 1) == []
    state = SimpleNamespace(log_history=log_history, global_step=2)
    trainer = SimpleNamespace(state=state, accelerator=SimpleNamespace(num_processes=1), reward_func_names=["f"])
    lines = final_summary(trainer, "out").splitlines()
    assert lines[2:6] == [
        "rewards/f/mean            0.000     1.000",
        "reward                    0.000     1.000",
        "conflict/share            0.500     0.250",
        "conflict/masked_share     0.250     0.000",
    ]


def test_summary_averages_the_ends_of_a_longer_run():
    log_history = [{"reward": float(step), "step": step} for step in range(1, 41)]
    rows, window = reward_ends(log_history, [])
    assert window == 5 and rows == [("reward", 3.0, 38.0)]  # mean of 1..5 and of 36..40
    assert "first 5    last 5" in format_ends(rows, window)


def test_dataset_sources():
    from gdpo_trl.data.sources import load_source
    from gdpo_trl.recipe.arguments import GDPOScriptArguments
    from gdpo_trl.data.sources import source_options

    def load_dataset_for(args):
        return load_source(args.dataset_name, **source_options(args))

    synthetic = load_dataset_for(GDPOScriptArguments(dataset_name="synthetic", synthetic_size=20, max_train_samples=5))
    assert len(synthetic) == 5 and {"prompt", "answer"} <= set(synthetic.column_names)
    sample = load_dataset_for(GDPOScriptArguments(dataset_name="sample", max_train_samples=3))
    assert len(sample) == 3 and sample[0]["prompt"][-1]["role"] == "user"


def test_missing_recipe_file_is_named(tmp_path, capsys):
    assert re.search("Recipe '.*nope.yaml' not found", input_error(["--config", str(tmp_path / "nope.yaml")], capsys))


def test_makefile_demo_names_a_recipe_that_exists():
    """The README's main-job command is `make demo`: its recipe path must exist."""
    import re

    demo = re.search(r"^demo:.*\n\t(.*)$", (ROOT / "Makefile").read_text(), re.MULTILINE).group(1)
    recipe = re.search(r"--config (\S+)", demo).group(1)
    assert (ROOT / recipe).is_file(), recipe


def test_uncached_hub_model_offline_is_refused_in_one_line(monkeypatch, tmp_path):
    from gdpo_trl.run.offline import check_model_available_offline

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # an empty Hugging Face cache
    with pytest.raises(ValueError, match=r"'no-org/no-model' is not in the local Hugging Face cache") as error:
        check_model_available_offline("no-org/no-model")
    assert "\n" not in str(error.value)
    check_model_available_offline(str(tmp_path))  # a local folder passes
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr("gdpo_trl.run.offline.hub_unreachable", lambda model: None)  # the Hub answers
    check_model_available_offline("no-org/no-model")  # the Hub is on: from_pretrained will fetch it
