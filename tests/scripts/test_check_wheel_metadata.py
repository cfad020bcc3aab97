"""scripts/check_wheel_metadata.py's refusal of study code: a wheel holding a module of studies/, at the top or back
in gdpo_trl/results/, is named; the library's own results modules are not."""

from __future__ import annotations

import zipfile

from tests.helpers.scripts import load_script

check = load_script("check_wheel_metadata")


def study_problems(tmp_path, names: list[str]) -> list[str]:
    wheel = tmp_path / "gdpo_trl-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name in names:
            archive.writestr(name, "")
        archive.writestr("gdpo_trl-0.1.0.dist-info/METADATA", "Name: gdpo-trl\n\n")
        archive.writestr("gdpo_trl-0.1.0.dist-info/entry_points.txt", "")
    return [problem for problem in check.problems(wheel) if "study" in problem]


def test_a_study_module_in_the_wheel_is_named(tmp_path):
    assert study_problems(tmp_path, ["studies/__init__.py", "gdpo_trl/results/qwen_study.py"]) == [
        "a study module is in the wheel: gdpo_trl/results/qwen_study.py",
        "a study module is in the wheel: studies/__init__.py",
    ]


def test_the_librarys_results_modules_pass(tmp_path):
    names = ["gdpo_trl/results/compare.py", "gdpo_trl/results/stats.py", "gdpo_trl/results/runs.py"]
    assert study_problems(tmp_path, names) == []
