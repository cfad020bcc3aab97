"""Per-problem paired tests between a comparison's runs, where every run was evaluated on one shared set of problems
(``gdpo eval`` of each run into ``<output_dir>/eval-<method>-seed<N>/``, the layout studies H8 and H9 used): each
problem is scored by both runs of a seed pair, so their difference is read problem by problem.

0/1 rewards get McNemar's exact test (:func:`gdpo_trl.results.stats.mcnemar`), others the paired t-test
(:func:`gdpo_trl.results.stats.paired_t`), per seed pair and pooled over the seeds. These test whether the trained
models differ *on these problems*; whether a method does better than another over training seeds is the Welch
reading of the seeds (:mod:`gdpo_trl.results.seed_power`): more problems do not replace seeds.
"""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path

from gdpo_trl.results.stats import McNemar, format_p, mcnemar, mcnemar_exact_p, paired_t

COMPLETIONS = ("completions.jsonl", "completions.jsonl.gz")  # as gdpo eval writes it, or gzipped as committed


def evaluation_dir(out_dir: Path, method: str, seed: int) -> Path:
    """Where a run's evaluation is read from: ``eval-<method>-seed<N>`` beside the run's folder."""
    return Path(out_dir) / f"eval-{method}-seed{seed}"


def read_scores(folder: Path) -> dict[int, tuple[str, dict[str, float | None]]]:
    """An evaluation's per-problem scores: problem index -> (its question, reward -> the mean over its samples, None
    where a reward did not apply to every sample)."""
    for name in COMPLETIONS:
        path = Path(folder) / name
        if path.is_file():
            text = gzip.decompress(path.read_bytes()).decode() if name.endswith(".gz") else path.read_text()
            break
    else:
        raise FileNotFoundError(f"no {' or '.join(COMPLETIONS)} in {folder}")
    scores = {}
    for line in text.splitlines():
        row = json.loads(line)
        samples = row["rewards"]
        names = list(dict.fromkeys(name for sample in samples for name in sample))
        per_reward = {}
        for name in names:
            values = [sample.get(name) for sample in samples]
            per_reward[name] = None if any(v is None for v in values) else statistics.fmean(values)
        scores[row["index"]] = (row.get("question", ""), per_reward)
    return scores


def shared_evaluations(out_dir: Path, methods: list[str], seeds: list[int]) -> tuple[dict, str]:
    """Every run's evaluation scores, ``{(method, seed): scores}``, and ``""``; or ``{}`` and why no paired test is
    possible (some run has no evaluation: ``""`` when none has one; the runs saw different problems)."""
    folders = {(m, s): evaluation_dir(out_dir, m, s) for m in methods for s in seeds}
    found = {run: folder for run, folder in folders.items() if any((folder / n).is_file() for n in COMPLETIONS)}
    if not found:
        return {}, ""
    if len(found) < len(folders):
        missing = ", ".join(f"{m} seed {s}" for (m, s) in folders if (m, s) not in found)
        return {}, f"No per-problem paired tests: {missing} has no evaluation ({COMPLETIONS[0]}) beside the others."
    scores = {run: read_scores(folder) for run, folder in found.items()}
    problems = {run: {i: q for i, (q, _) in s.items()} for run, s in scores.items()}
    first = next(iter(problems.values()))
    if any(p != first for p in problems.values()):
        return {}, "No per-problem paired tests: the runs' evaluations are not on one shared set of problems."
    return scores, ""


def _pairs(scores: dict, first: tuple, second: tuple, reward: str) -> tuple[list[float], list[float]]:
    """The two runs' scores on ``reward``, problem by problem, where both have one."""
    x, y = [], []
    for index, (_, found) in sorted(scores[first].items()):
        a, b = found.get(reward), scores[second][index][1].get(reward)
        if a is not None and b is not None:
            x.append(a)
            y.append(b)
    return x, y


def _cell(test) -> str:
    if isinstance(test, McNemar):
        return f"{test.diff:+.3f} ({test.first_only}:{test.second_only}), p {format_p(test.p)}"
    return f"{test.diff:+.3f} [{test.low:+.3f}, {test.high:+.3f}], p {format_p(test.p)}"


def paired_table(scores: dict, methods: list[str], seeds: list[int], labels: dict[str, str]) -> str:
    """Markdown: per method against the first (the reference) and per evaluation reward, each seed pair's paired
    test and the pooled one. McNemar for a reward scored 0/1 on every problem by every run (the cell: the difference
    of rates, the discordant problems won by each side, p; pooled: the discordant counts summed over the seed
    pairs), else the paired t-test (the difference of means, its 95% interval, p; pooled: on each problem's mean
    over the seeds)."""
    reference, others = methods[0], methods[1:]
    rewards = list(dict.fromkeys(r for s in scores.values() for _, found in s.values() for r in found))
    problems = len(next(iter(scores.values())))
    seed_heads = "".join(f" seed {s} |" for s in seeds)
    lines = [
        f"| reward | method − reference | test |{seed_heads} pooled |",
        "|---|---|---|" + "---:|" * (len(seeds) + 1),
    ]
    for method in others:
        pair = f"{labels.get(method, method)} − {labels.get(reference, reference)}"
        for reward in rewards:
            per_seed = [_pairs(scores, (method, s), (reference, s), reward) for s in seeds]
            if any(len(x) < 2 for x, _ in per_seed):
                continue
            binary = all(v in (0.0, 1.0) for x, y in per_seed for v in (*x, *y))
            if binary:
                tests = [mcnemar(x, y) for x, y in per_seed]
                first, second = sum(t.first_only for t in tests), sum(t.second_only for t in tests)
                total = sum(t.problems for t in tests)
                pooled = McNemar(first, second, total, mcnemar_exact_p(first, second))
            else:
                tests = [paired_t(x, y) for x, y in per_seed]
                pooled = paired_t(*_seed_means(scores, method, reference, seeds, reward))
            name = "McNemar (exact)" if binary else "paired t"
            lines.append(f"| {reward} | {pair} | {name} | " + " | ".join(map(_cell, [*tests, pooled])) + " |")
    note = (
        f"Per problem, on the {problems} problems every run was evaluated on: each seed's {labels.get(reference, reference)} "
        "run against the same seed's other run. These say whether the trained models differ on these problems; "
        "a difference between the methods over training seeds is the Welch reading above (the pooled column counts "
        "each problem once per seed, so it is not a test over seeds)."
    )
    return "\n".join(lines) + "\n\n" + note


def _seed_means(scores, method, reference, seeds, reward) -> tuple[list[float], list[float]]:
    """Each problem's mean score over the seeds under each method, on the problems every run scored."""
    common = set.intersection(
        *({i for i, (_, f) in scores[(m, s)].items() if f.get(reward) is not None} for m in (method, reference)
          for s in seeds)
    )  # fmt: skip
    order = sorted(common)
    mean = {
        m: [statistics.fmean(scores[(m, s)][i][1][reward] for s in seeds) for i in order] for m in (method, reference)
    }
    return mean[method], mean[reference]
