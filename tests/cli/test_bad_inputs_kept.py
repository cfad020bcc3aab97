"""Nothing a user made is overwritten: every output path of gdpo plot, gdpo compare and gdpo eval refuses
an existing file unless --overwrite is given, and nothing but gdpo train writes in a run's folder.

Before: ``gdpo plot RUN --table RUN/trainer_state.json`` exited 0, "wrote table to .../trainer_state.json", and the
run's log history (with ``save_strategy: no`` its only copy) was a Markdown table. Each row runs the command's ``main``
in this process and asserts exit status 2, one ``<prog>: error:`` line naming the culprit and the flag, and that the
run's folder is byte for byte unchanged. Every row fails before any model or run is loaded.
"""

import json

import pytest

from gdpo_trl.cli.compare import main as compare_main
from gdpo_trl.cli.evaluate import main as eval_main
from gdpo_trl.cli.plot import main as plot_main
from tests.helpers.bad_inputs import assert_one_line_error, run_cli, snapshot

STATE = {"log_history": [{"step": 1, "reward": 0.5, "rewards/format_reward/mean": 0.5}], "global_step": 1}


@pytest.fixture
def run(tmp_path):
    """A finished run with save_strategy: no: trainer_state.json is its only log."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "trainer_state.json").write_text(json.dumps(STATE))
    return folder


# (id, command, argv with {run} and {tmp}, a file made first (or None), words of the one line)
ROWS = [
    ("plot_table_over_log", plot_main, ["{run}", "--output_file", "{tmp}/p.png", "--table", "{run}/trainer_state.json"],
     None, ["--table", "trainer_state.json", "only gdpo train writes"]),
    ("plot_table_over_log_overwrite", plot_main,
     ["{run}", "--output_file", "{tmp}/p.png", "--table", "{run}/trainer_state.json", "--overwrite"],
     None, ["--table", "only gdpo train writes"]),
    ("plot_png_in_run", plot_main, ["{run}", "--output_file", "{run}/rewards.png"], None,
     ["--output_file", "only gdpo train writes"]),
    ("plot_table_is_input", plot_main,
     ["{tmp}/state.json", "--output_file", "{tmp}/p.png", "--table", "{tmp}/state.json", "--overwrite"],
     "state.json", ["--table", "is an input of this command"]),
    ("plot_table_exists", plot_main, ["{run}", "--output_file", "{tmp}/p.png", "--table", "{tmp}/mine.md"], "mine.md",
     ["--table", "mine.md already exists", "--overwrite"]),
    ("plot_png_exists", plot_main, ["{run}", "--output_file", "{tmp}/mine"], "mine.png",
     ["--output_file", "mine.png already exists", "--overwrite"]),
    ("plot_same_file_twice", plot_main, ["{run}", "--output_file", "{tmp}/a.png", "--table", "{tmp}/a.png"], None,
     ["both name", "a.png"]),
    ("compare_table_exists", compare_main, ["--skip_training", "--output_dir", "{tmp}"], "comparison.md",
     ["--output_dir", "comparison.md already exists", "--overwrite"]),
    ("compare_into_run", compare_main, ["--skip_training", "--output_dir", "{run}", "--overwrite"], None,
     ["--output_dir", "only gdpo train writes"]),
    ("compare_methods_twice", compare_main, ["--methods", "gdpo", "gdpo", "--output_dir", "{tmp}/c"], None,
     ["--methods names gdpo twice"]),
    ("compare_seeds_twice", compare_main, ["--seeds", "1", "1", "--output_dir", "{tmp}/c"], None,
     ["--seeds names 1 twice"]),
    ("eval_into_run", eval_main, ["--model", "builtin:tiny", "--output_dir", "{run}"], None,
     ["--output_dir", "holds a training run", "only gdpo train writes"]),
]  # fmt: skip


@pytest.mark.parametrize(("main", "argv", "made", "words"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_an_output_path_never_replaces_what_a_user_made(tmp_path, run, capsys, main, argv, made, words):
    if made:
        (tmp_path / made).write_text(json.dumps(STATE))
    before, mine = snapshot(run), snapshot(tmp_path)
    code, err = run_cli(main, [a.replace("{run}", str(run)).replace("{tmp}", str(tmp_path)) for a in argv], capsys)
    assert code == 2
    prog = {plot_main: "gdpo plot", compare_main: "gdpo compare", eval_main: "gdpo eval"}[main]
    assert_one_line_error(err, prog, words)
    assert snapshot(run) == before and snapshot(tmp_path) == mine  # nothing written, nothing replaced


def test_overwrite_replaces_the_commands_own_file(tmp_path, run, capsys):
    (tmp_path / "mine.md").write_text("old")
    argv = [str(run), "--output_file", str(tmp_path / "p.png"), "--table", str(tmp_path / "mine.md"), "--overwrite"]
    assert plot_main(argv) == 0
    assert "| run | format_reward | 1-1 | 0.500 | 0.500 |" in (tmp_path / "mine.md").read_text()
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((run / "trainer_state.json").read_text()) == STATE
