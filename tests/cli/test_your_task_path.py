"""docs/your_task.md's path, end to end, from a fresh folder: the page's JSONL and rewards file (the example task's,
checked to be the page's own text), its `gdpo recipes copy`, `gdpo train` and `gdpo compare` commands as written, and
its Python block, each with a tiny model and two steps (builtin:tiny for the page's SmolLM2) so it runs in seconds.
The commands run in this process, as `gdpo` would (imports paid once)."""

import json
import re
import shlex
import shutil
import sys

import pytest
import torch

from gdpo_trl.cli.main import main as gdpo
from tests.helpers.doc_blocks import ROOT

PAGE = ROOT / "docs" / "your_task.md"
EXAMPLE = ROOT / "examples" / "your_task"
# The page's model and length, and what this test runs instead (the rest of every command as written).
TINY = {
    "train": ["--model_name_or_path", "builtin:tiny", "--max_steps", "2", "--max_completion_length", "8"],
    "compare": ["--model", "builtin:tiny", "--steps", "2", "--seeds", "0", "1", "--max_completion_length", "8"],
}


def section(title: str) -> str:
    text = PAGE.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def fences(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)\n```", text, re.S)


def test_the_page_shows_the_example_tasks_files():
    assert fences(section("The rewards"), "python")[0] + "\n" == (EXAMPLE / "rewards.py").read_text()
    shown = fences(section("The prompts"), "json")[0].splitlines()
    assert shown == (EXAMPLE / "prompts.jsonl").read_text().splitlines()[: len(shown)]


@pytest.fixture
def fresh_folder(tmp_path, monkeypatch):
    """A folder of the reader's own holding the two files, as the page's first block makes it; torch's threads, the
    environment and the imported rewards module restored afterwards (the recipe sets cpu_threads 1 and env:)."""
    for name in ("prompts.jsonl", "rewards.py"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    for variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(variable, "1")
    monkeypatch.syspath_prepend(str(tmp_path))
    threads = torch.get_num_threads()
    yield tmp_path
    torch.set_num_threads(threads)
    sys.modules.pop("rewards", None)


def run(command: str) -> None:
    words = shlex.split(command.split("#")[0])
    assert words[0] == "gdpo", command
    extra = TINY.get(words[1], [])
    try:
        code = gdpo([*words[1:], *extra])
    except SystemExit as stop:
        code = stop.code
    assert code in (0, None), f"{command}: exit {code}"


def test_the_pages_commands_train_and_compare(fresh_folder, capsys):
    commands = [
        line.strip()
        for title in ("Train once", "GDPO against GRPO, over seeds")
        for block in fences(section(title), "bash")
        for line in block.splitlines()
        if line.strip().startswith("gdpo ")
    ]
    assert [shlex.split(c)[1] for c in commands] == ["recipes", "train", "compare"], commands
    for command in commands:
        run(command)
    out = capsys.readouterr().out
    assert (
        "data: prompts.jsonl: 40 rows with a 'prompt' column (chat messages), used as they are; the rewards also "
        "receive color" in out
    )
    trained = fresh_folder / "outputs" / "your-task-gdpo"
    assert (trained / "adapter_config.json").is_file()  # the recipe's LoRA adapter
    log = json.loads((trained / "trainer_state.json").read_text())["log_history"]
    steps = [entry for entry in log if "rewards/says_color/mean" in entry]
    assert len(steps) == 2 and all("rewards/brevity/mean" in entry for entry in steps)
    table = (fresh_folder / "outputs" / "compare-your-task" / "comparison.md").read_text()
    rows = [line.split("|")[1:3] for line in table.splitlines() if line.startswith("| GR") or line.startswith("| GD")]
    names = [(method.strip(), reward.strip()) for method, reward in rows][:6]
    assert names == [
        (method, reward) for method in ("GRPO", "GDPO") for reward in ("says_color", "brevity", "reward")
    ]  # the recipe's order, not the log's alphabetical one
    assert (fresh_folder / "outputs" / "compare-your-task" / "comparison.png").is_file()


def test_the_pages_defaults_are_gdpoconfigs(capsys):
    code = next(block for block in fences(section("From Python"), "python") if "defaults = " in block)
    exec(compile(code, str(PAGE), "exec"), {})
    printed = [line.removeprefix("# ") for line in code.splitlines() if line.startswith("# ")]
    assert capsys.readouterr().out.splitlines() == printed


def test_the_pages_python_block_trains(fresh_folder):
    code = next(block for block in fences(section("From Python"), "python") if "GDPOTrainer(" in block)
    for page, tiny in (('"builtin:smollm2-135m-instruct"', '"builtin:tiny"'), ("max_steps=10", "max_steps=2")):
        assert page in code
        code = code.replace(page, tiny)
    namespace = {}
    exec(compile(code, str(PAGE), "exec"), namespace)
    trainer = namespace["trainer"]
    assert trainer.state.global_step == 2
    assert trainer.reward_func_names == ["says_color", "brevity"]
    assert torch.get_num_threads() == 1  # cpu_threads=1, applied by GDPOTrainer
