"""Evaluation outputs: the default output folder, ``summary.json`` and ``completions.jsonl``, and a short report."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from gdpo_trl.data.sources import find_source, has_splits
from gdpo_trl.eval.loading import ModelSpec, looks_like_path
from gdpo_trl.eval.scoring import METRIC_NAMES, default_rewards
from gdpo_trl.eval.settings import EvaluationInputError, GenerationSettings


def _slug(text: str) -> str:
    """A folder-name-safe version of a model or dataset name (Hub ``org/name`` becomes ``org--name``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text.replace("/", "--")).strip("-.") or "model"


def _dataset_tag(dataset: str) -> str:
    if find_source(dataset) is not None:
        return _slug(dataset)
    if looks_like_path(dataset) or Path(dataset).suffix:
        return _slug(Path(dataset).stem)  # a local file: its name without the folders
    return _slug(dataset.rpartition("/")[2])  # a Hub id: "openai/gsm8k" -> "gsm8k"


def default_output_dir(
    spec: ModelSpec,
    dataset: str,
    split: str,
    settings: GenerationSettings,
    limit=None,
    *,
    rewards: Sequence[str] | None = None,
    dataset_path: str | None = None,
    dataset_seed: int | None = None,
    system_prompt: str | None = None,
    backend: str | None = None,
    dtype: str | None = None,
) -> Path:
    """``<model or adapter folder>/eval-<dataset>-<split>`` for local weights, else ``outputs/eval/<model>-...``; a
    single data file has no splits, so its name stands alone (``eval-test`` for ``DATA/test.jsonl``).

    Every setting that changes the result and is not its default is added to the name (sampling, the sampling seed,
    ``max_new_tokens``, a limit, the rewards, the rows read, their seed, the system prompt, an explicit backend or
    dtype), so that two different evaluations never share a folder. An evaluation with every default keeps the short
    name.
    """
    tag = f"eval-{_dataset_tag(dataset)}"
    if find_source(dataset) is not None or has_splits(dataset, None, None):
        tag += f"-{_slug(split)}"  # a single file has no splits: DATA/test.jsonl is eval-test, not eval-test-test
    if dataset_path is not None:
        tag += f"-{_slug(Path(dataset_path).stem or dataset_path)}"
    if dataset_seed is not None:
        tag += f"-data{dataset_seed}"
    if system_prompt is not None:
        tag += f"-sys{_digest(system_prompt)}"
    if not settings.greedy:
        tag += f"-t{settings.temperature:g}-p{settings.top_p:g}-n{settings.n}"
        tag += f"-seed{settings.seed}" if settings.seed != GenerationSettings.seed else ""
    if settings.max_new_tokens != GenerationSettings.max_new_tokens:
        tag += f"-tok{settings.max_new_tokens}"
    if limit is not None:
        tag += f"-first{limit}"
    if rewards is not None and tuple(rewards) != tuple(default_rewards(dataset)):
        names = "+".join(_slug(name.rpartition(".")[2]) for name in rewards)
        tag += f"-r-{names}" if len(names) <= 48 else f"-r{_digest(' '.join(rewards))}"
    tag += "".join(f"-{value}" for value in (backend, dtype) if value not in (None, "auto"))
    if spec.local:
        return Path(spec.adapter or spec.base) / tag
    return Path("outputs", "eval") / f"{_slug(spec.name)}-{tag.removeprefix('eval-')}"


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:8]


# What an evaluation writes; a folder holding any of them holds an earlier result.
RESULT_FILES = ("summary.json", "completions.jsonl")
BFCL_RESULT_FILES = ("bfcl_summary.json", "bfcl_completions.jsonl")
_REPLACING: contextvars.ContextVar[bool] = contextvars.ContextVar("gdpo_eval_replacing", default=False)


@contextlib.contextmanager
def replacing_results(allowed: bool = True) -> Iterator[None]:
    """Within the block, :func:`write_outputs` may replace an earlier result (``gdpo eval --overwrite``)."""
    token = _REPLACING.set(allowed)
    try:
        yield
    finally:
        _REPLACING.reset(token)


def refuse_earlier_result(
    output_dir: str | Path, overwrite: bool = False, files: Sequence[str] = RESULT_FILES
) -> None:
    """Raise :class:`EvaluationInputError` when ``output_dir`` holds an earlier evaluation and ``overwrite`` is off,
    or is (or lies under) a file, which would be found only when writing, after the generation."""
    folder = Path(output_dir).absolute()
    blocking = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        where = "is a file" if blocking == folder else f"cannot be created: {str(blocking)!r} is a file"
        raise EvaluationInputError(
            f"output_dir {str(output_dir)!r} {where}, not a folder: choose another --output_dir."
        )
    found = [name for name in files if (Path(output_dir) / name).exists()]
    if found and not overwrite:
        raise EvaluationInputError(
            f"output_dir {str(output_dir)!r} already holds an evaluation ({', '.join(found)}), and an evaluation never "
            "replaces an earlier result: choose another --output_dir, or pass --overwrite to replace it (Python: "
            "inside gdpo_trl.eval.report.replacing_results())."
        )


def plan_output_dir(options: dict, overwrite: bool = False) -> Path:
    """Where ``evaluate(**options)`` should write: ``options["output_dir"]``, else :func:`default_output_dir` with
    every setting in ``options``; refused at once (before any model loads) when it holds an earlier result."""
    from gdpo_trl.eval.loading import resolve_model_spec

    keys = ("n", "temperature", "top_p", "max_new_tokens", "batch_size", "seed")
    settings = GenerationSettings(**{key: options[key] for key in keys if key in options})
    out = options.get("output_dir")
    if out is None:
        spec = resolve_model_spec(options["model"], options.get("adapter"))
        dataset = options.get("dataset", "openai/gsm8k")
        out = default_output_dir(
            spec, dataset, options.get("split", "test"), settings, options.get("limit"),
            rewards=options.get("rewards"), dataset_path=options.get("dataset_path"),
            dataset_seed=options.get("dataset_seed"), system_prompt=options.get("system_prompt"),
            backend=options.get("backend"), dtype=options.get("dtype"),
        )  # fmt: skip
    refuse_earlier_result(out, overwrite)
    from gdpo_trl.storage.safe_write import check_writable_folder

    check_writable_folder(out, "gdpo eval --output_dir")  # now, not after the evaluation's minutes
    return Path(out)


def results_replaceable() -> bool:
    """Whether an earlier result may be replaced here (inside :func:`replacing_results`, as ``--overwrite`` sets)."""
    return _REPLACING.get()


def write_outputs(output_dir: Path, summary: dict, rows: Sequence[dict], overwrite: bool | None = None) -> None:
    """Write ``summary.json`` and ``completions.jsonl`` (one row per problem) into ``output_dir``.

    An earlier result there is refused unless ``overwrite`` (default: inside :func:`replacing_results`). Each file is
    written beside its final name and renamed into place, so an interrupted write never leaves half a result.
    """
    from gdpo_trl.storage.safe_write import write_text_whole

    refuse_earlier_result(output_dir, _REPLACING.get() if overwrite is None else overwrite)
    texts = {
        "summary.json": json.dumps(summary, indent=2) + "\n",
        "completions.jsonl": "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
    }
    for name, text in texts.items():  # a read-only folder, a full disk: one line naming the file, no .partial left
        write_text_whole(output_dir / name, text, "gdpo eval")


def format_summary(summary: dict) -> str:
    """A short human-readable report of a summary from :func:`gdpo_trl.eval.evaluate`: one line per metric."""
    metrics, gen, model = summary["metrics"], summary["generation"], summary["model"]
    decoding = "greedy" if gen["temperature"] == 0 else f"temperature {gen['temperature']:g}, top_p {gen['top_p']:g}"
    data = summary["data"]
    rewards = [name for name in metrics if name in METRIC_NAMES.values() or name.endswith("_mean")]
    rewards = [name for name in rewards if metrics[name] is not None]  # None: a reward that applied to no row
    rewards += [name for name in ("success_rate", "mean_turns", "mean_calls") if name in metrics]  # agent sources
    width = max(len("written to:"), *(len(name) + 1 for name in rewards)) + 1
    lines = [
        f"{'model:':<{width}}{model['model']}" + (f" + adapter {model['adapter']}" if model["adapter"] else ""),
        f"{'data:':<{width}}{data['dataset']} ({data['split']}), {metrics['num_problems']} problems"
        f" x {gen['n']} samples, {decoding}, max_new_tokens {gen['max_new_tokens']}, backend {gen['backend']}",
        *(f"{name + ':':<{width}}{metrics[name]:.4f}" for name in rewards),
        f"{'length:':<{width}}{metrics['mean_completion_tokens']:.1f} tokens"
        f" (truncated {metrics['truncated_fraction']:.1%})",
        f"{'time:':<{width}}{summary['wall_time_s']:.1f} s (generation {summary['generation_time_s']:.1f} s)",
        f"{'written to:':<{width}}{summary['output_dir']}",
    ]
    return "\n".join(lines)
