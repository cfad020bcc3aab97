"""docs/real_model.md's claims about its 400 evaluated completions (200 GSM8K test problems, before and after the
GDPO run), recomputed completion by completion from the committed evaluations: format and clipping are one effect
(format is 1 exactly when the completion was not cut at the length limit), the completions no rule can read are the
ones cut at the limit, integer is 1 only with the layout, and correctness moved by one problem among different
problems. If a new evaluation breaks one of these, the page's wording must change with it."""

from tests.helpers.figure_real_sources import EVALS, completions, counts


def test_format_is_one_exactly_when_the_completion_was_not_cut():
    both = [c for name in EVALS for c in completions(name)]
    assert len(both) == 400
    split = [c for c in both if (c["rewards"]["format"] == 1.0) == c["truncated"]]
    assert not split, f"{len(split)} completions where format and clipping disagree: docs/real_model.md says none"
    assert [counts(name)["format_iff_not_cut"] for name in EVALS] == [200, 200]


def test_the_unreadable_completions_are_the_ones_cut_at_the_limit():
    for name in EVALS:
        done = completions(name)
        assert [c["truncated"] for c in done] == ["<answer>" not in c["text"] for c in done], name
    assert [counts(name)["no_answer_tag"] for name in EVALS] == [102, 49]


def test_integer_is_one_only_where_format_is():
    for name in EVALS:
        assert all(c["rewards"]["format"] == 1.0 for c in completions(name) if c["rewards"]["integer"] == 1.0), name


def test_correctness_moved_by_one_problem_among_different_problems():
    before, after = ({i for i, c in enumerate(completions(n)) if c["rewards"]["correctness"] == 1.0} for n in EVALS)
    assert (len(before), len(after)) == (3, 4)
    assert not before & after  # "not the same ones"
