"""Evaluation outputs: the default output folder, ``summary.json`` and ``completions.jsonl``, and a short report."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from gdpo_trl.data.sources import find_source
from gdpo_trl.eval.loading import ModelSpec, _looks_like_path
from gdpo_trl.eval.scoring import METRIC_NAMES
from gdpo_trl.eval.settings import GenerationSettings


def _slug(text: str) -> str:
    """A folder-name-safe version of a model or dataset name (Hub ``org/name`` becomes ``org--name``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text.replace("/", "--")).strip("-.") or "model"


def _dataset_tag(dataset: str) -> str:
    if find_source(dataset) is not None:
        return _slug(dataset)
    if _looks_like_path(dataset) or Path(dataset).suffix:
        return _slug(Path(dataset).stem)  # a local file: its name without the folders
    return _slug(dataset.rpartition("/")[2])  # a Hub id: "openai/gsm8k" -> "gsm8k"


def default_output_dir(spec: ModelSpec, dataset: str, split: str, settings: GenerationSettings, limit=None) -> Path:
    """``<model or adapter folder>/eval-<dataset>-<split>`` for local weights, else ``outputs/eval/<model>-...``.

    Non-default settings (sampling, a limit) are added to the name so that such a run never overwrites the full
    greedy evaluation.
    """
    tag = f"eval-{_dataset_tag(dataset)}-{_slug(split)}"
    if not settings.greedy:
        tag += f"-t{settings.temperature:g}-p{settings.top_p:g}-n{settings.n}"
    if limit is not None:
        tag += f"-first{limit}"
    if spec.local:
        return Path(spec.adapter or spec.base) / tag
    return Path("outputs", "eval") / f"{_slug(spec.name)}-{tag.removeprefix('eval-')}"


def write_outputs(output_dir: Path, summary: dict, rows: Sequence[dict]) -> None:
    """Write ``summary.json`` and ``completions.jsonl`` (one row per problem) into ``output_dir``."""
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    with open(output_dir / "completions.jsonl", "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def format_summary(summary: dict) -> str:
    """A short human-readable report of a summary from :func:`gdpo_trl.eval.evaluate`: one line per metric."""
    metrics, gen, model = summary["metrics"], summary["generation"], summary["model"]
    decoding = "greedy" if gen["temperature"] == 0 else f"temperature {gen['temperature']:g}, top_p {gen['top_p']:g}"
    data = summary["data"]
    rewards = [name for name in metrics if name in METRIC_NAMES.values() or name.endswith("_mean")]
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
