"""The model card of a real tiny run: it names GDPO and its paper (GRPO and its paper when GRPO's rule trains), and
says what the run was. ``push_to_hub: true`` pushes the folder with that card: checked up to the network call."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from gdpo_trl.cli.train import main
from gdpo_trl.results.runs import reward_ends

ROOT = Path(__file__).resolve().parents[2]
GDPO_LINE = (
    "This model was trained with GDPO, a method introduced in [GDPO: Group reward-Decoupled Normalization Policy "
    "Optimization for Multi-reward RL Optimization](https://huggingface.co/papers/2601.05242)."
)


@pytest.fixture(autouse=True, scope="module")
def _restore_threads():
    """The CPU recipe's `cpu_threads: 1` applies to the whole pytest process: restore torch's setting afterwards."""
    import torch

    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


class FakeHub:
    """Stands in for transformers' ``hf_api()``: records the calls, and what the card said at upload time."""

    def __init__(self):
        self.calls = []

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id))
        return SimpleNamespace(repo_id=repo_id)

    def upload_folder(self, repo_id, folder_path, **kwargs):
        card = (Path(folder_path) / "README.md").read_text()
        files = sorted(p.name for p in Path(folder_path).iterdir())
        self.calls.append(("upload_folder", repo_id, folder_path, card, files))


def test_gdpo_run_card_names_gdpo_its_paper_and_the_run_and_is_pushed(tmp_path, monkeypatch, capsys):
    import transformers.trainer

    hub = FakeHub()
    monkeypatch.setattr(transformers.trainer, "hf_api", lambda: hub)
    out = tmp_path / "run"
    argv = ["--config", "cpu/gdpo", "--max_steps", "2", "--output_dir", str(out)]
    main([*argv, "--push_to_hub", "true", "--hub_model_id", "someone/tiny-gdpo"])

    # Pushed once, at the end, with the model, the tokenizer and this card (no checkpoint was saved: no other push).
    assert [call[:3] for call in hub.calls] == [
        ("create_repo", "someone/tiny-gdpo"),
        ("upload_folder", "someone/tiny-gdpo", str(out)),
    ]
    card, files = hub.calls[1][3], hub.calls[1][4]
    assert {"README.md", "model.safetensors", "config.json", "tokenizer.json"} <= set(files)
    assert card == (out / "README.md").read_text()

    assert GDPO_LINE in card and "grpo" not in card.split("---")[1]  # the metadata block: tags
    assert re.search(r"^tags:\n(- \S+\n)*- gdpo\n", card, re.M)
    assert "@article{liu2026gdpo," in card and "@software{vonwerra2020trl," in card  # the paper's and TRL's
    assert "Cite GDPO as:" in card and "DeepSeekMath" not in card
    assert "fine-tuned version of `builtin:warmstart`" in card and "huggingface.co/None" not in card
    assert "# fine-tuned from builtin:warmstart\n" in card and 'model="None"' not in card
    procedure = card.split("## Training procedure\n\n")[1].split("### Framework versions")[0]
    assert procedure.startswith("- **Method:** GDPO: each reward normalized within its group")
    assert (
        "- **Batch:** 32 completions per device x 1 process x 1 accumulation step = 32 completions per " in procedure
    )
    assert (
        "generation batch 32 completions (4 prompts x 8)" in procedure
        and "- **Hardware:** CPU, 1 process." in procedure
    )
    # The process is this pytest process: past a minute (a long session) its time reads "2 min 5 s (125 s)".
    assert re.search(r"- \*\*Time:\*\* \d+ s in the training loop \(generation, rewards and updates\); "
                     r"(\d+ min \d+ s \(\d+ s\)|\d+ s) since the process started \(imports, model and data loading "
                     r"included\)\.", procedure)  # fmt: skip
    assert "| `format_reward` | 1 |" in procedure
    assert "- **Data:** `warmstart`, split `train`" in card
    assert "- **Method:** GDPO: each reward normalized within its group" in card
    assert "`multi_objective_aggregation: normalize_then_sum`, `gdpo_batch_norm: true`" in card
    assert "- **Training:** 2 optimizer steps on 1 process, 8 completions per prompt" in card

    state = json.loads((out / "trainer_state.json").read_text())
    rows, window = reward_ends(state["log_history"], ["format_reward", "correctness_reward", "integer_reward"])
    assert window == 1 and len(rows) == 4
    for metric, first, last in rows:  # the table's numbers are the run's logged means
        name = metric.split("/")[1] if "/" in metric else None
        label = f"`{name}` | 1" if name else "total (weighted sum) | "
        assert f"| {label} | {first:.3f} | {last:.3f} |" in card
    assert f"`gdpo train {' '.join(argv)} --push_to_hub true --hub_model_id someone/tiny-gdpo`" in card
    assert (ROOT / "recipes/cpu/gdpo/config.yaml").read_text().strip() in card  # the recipe, as shipped


def test_grpo_run_card_says_grpo(tmp_path):
    out = tmp_path / "grpo"
    main(["--config", "cpu/grpo", "--max_steps", "1", "--output_dir", str(out)])
    card = (out / "README.md").read_text()
    assert f'model="{out}"' in card  # not pushed: the quick start loads this folder
    assert "This model was trained with GRPO, a method introduced in [DeepSeekMath" in card
    assert "- grpo\n" in card and "- gdpo\n" not in card and "liu2026gdpo" not in card
    assert "- **Method:** GRPO: the weighted sum of rewards normalized within each group" in card
    assert "`multi_objective_aggregation: sum_then_normalize`, `scale_rewards: group`" in card


def test_the_card_names_the_command_with_its_launch_flags(monkeypatch):
    """Processes started by `gdpo train` see only the recipe's flags: the launcher hands them its whole command."""
    from gdpo_trl.cli.model_card import COMMAND_ENV, run_command

    monkeypatch.setenv(COMMAND_ENV, "gdpo train --config cpu/gdpo --accelerate_config zero2 --num_processes 2")
    assert run_command(["--config", "cpu/gdpo"], 2).endswith("--accelerate_config zero2 --num_processes 2")
    monkeypatch.delenv(COMMAND_ENV)
    assert run_command(["--config", "cpu/gdpo"], 1) == "gdpo train --config cpu/gdpo"
    assert run_command(["--config", "cpu/gdpo"], 2) == (
        "accelerate launch --num_processes 2 -m gdpo_trl.cli.train --config cpu/gdpo"
    )


def test_the_card_says_what_its_time_covers():
    """A tiny run trains in a second of a 40-second process: the card names both, and what each covers."""
    from gdpo_trl.cli.model_card import run_time

    log = [{"step": 1, "reward": 1.0}, {"train_runtime": 0.8}]
    assert run_time(log, since_start=43.2) == (
        "1 s in the training loop (generation, rewards and updates); 43 s since the process started (imports, "
        "model and data loading included)"
    )
    assert run_time(log[:1], since_start=75).startswith("training in progress; 1 min 15 s (75 s) since the process")


def test_the_cards_quick_start_runs_this_model_on_its_own_prompt(tmp_path, capsys):
    """No licence placeholder, and the card's usage example is this model's: run as written, it loads the folder and
    answers the first training prompt (the demo's system prompt and question), as training sampled."""
    import torch

    out = tmp_path / "run"
    main(["--config", "cpu/gdpo", "--max_steps", "1", "--output_dir", str(out)])
    card = (out / "README.md").read_text()
    assert "licence" not in card.split("---")[1] and "time machine" not in card  # TRL's placeholder and question
    assert "- **Training:** 1 optimizer step on 1 process" in card
    code = card.split("## Quick start")[1].split("```python\n")[1].split("```")[0]
    assert f'model="{out}"' in code and "Ben buys 2 hats" in code and "<answer>42</answer>" in code
    assert "max_new_tokens=48, do_sample=True, temperature=1," in code  # the recipe's sampling
    capsys.readouterr()
    torch.manual_seed(0)
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out.startswith("<think>")  # the warm start's layout: it loaded and answered
