"""The way in, as docs/layout.md draws it (scripts/way_in.py): ``gdpo train``'s walk from ``main`` to TRL's
``GRPOTrainer.__init__``, one module off the spine, and a launched process's; each at most 22 modules entered and 15
returns, the recipe's file read and its YAML parsed once per process (the launcher's included)."""

from __future__ import annotations

import re

import pytest

from tests.helpers.scripts import load_script
from tests.helpers.studies import ROOT

way_in = load_script("way_in")
LAYOUT = (ROOT / "docs" / "layout.md").read_text()


@pytest.fixture(scope="module")
def walks(tmp_path_factory):
    """``{"main": (steps, counts), "child": (steps, counts)}`` for a one-process run and a launched process."""
    found = {}
    for name, child in (("main", False), ("child", True)):
        out = tmp_path_factory.mktemp(name) / "run"
        walked, counts = way_in.walk([*way_in.RECIPE, "--output_dir", str(out)], child=child)
        calls = [event[3:] for event in walked.events if event[0] == "call"]  # (module, function) of every call
        found[name] = (walked.steps(), counts, calls)
    return found


def test_the_layout_draws_the_walk_as_it_is(walks):
    drawn = re.search(r"^```\n(cli/errors .*?)\n```", LAYOUT, re.S | re.M)
    assert drawn, "docs/layout.md draws no walk (a block opening with cli/errors)"
    assert drawn.group(1) == way_in.drawing(walks["main"][0]), "docs/layout.md's walk: python scripts/way_in.py"


def test_the_walks_figures_are_the_layouts_and_within_bounds(walks):
    main, child = (way_in.figures(walks[name][0]) for name in ("main", "child"))
    said = re.search(
        r"enters (\d+) modules and comes back (\d+) times.*?enters (\d+) and comes back (\d+) times", LAYOUT, re.S
    )
    assert said and [int(n) for n in said.groups()] == [
        main["modules"], main["returns"], child["modules"], child["returns"]
    ]  # fmt: skip
    for found in (main, child):
        assert found["modules"] <= 22 and found["returns"] <= 15, found


def test_the_recipe_is_read_and_parsed_once_per_process(walks, tmp_path, monkeypatch):
    assert walks["main"][1] == walks["child"][1] == {"read": 1, "parsed": 1}
    import gdpo_trl.cli.launch as launch
    from gdpo_trl.cli import train

    class Launched(BaseException):
        pass

    def launched(*args, **kwargs):
        raise Launched

    monkeypatch.setattr(launch, "launch_training", launched)
    argv = [*way_in.RECIPE, "--output_dir", str(tmp_path / "run"), "--num_processes", "2"]
    with way_in.counted_reads() as counts, pytest.raises(Launched):
        train.main(argv)  # the launcher: read, checked as 2 processes will parse it, then the processes start
    assert counts == {"read": 1, "parsed": 1}


def test_the_walk_counts_a_return_each_time_it_comes_back():
    steps = [("a", True, "f"), ("b", False, "g"), ("a", True, "f"), ("c", True, "h"), ("b", False, "k")]
    assert way_in.figures(steps) == {"modules": 3, "returns": 2}
    assert way_in.drawing(steps) == "a  f -> b\nc  h -> b"


def test_the_rewards_are_prepared_and_their_rows_checked_once(walks):
    """One call site: gdpo train's build prepares the rewards (the trainer takes them as they are) and checks the
    rows' columns against them once, in the launched process as in the single one."""
    for _, _, calls in walks.values():
        assert calls.count(("gdpo_trl.trainer.reward_pipeline", "prepare_rewards")) == 1
        assert calls.count(("gdpo_trl.data.prompt_rows", "check_train_rows")) == 1
        assert calls.count(("gdpo_trl.data.prompt_rows", "check_reward_columns")) == 1
