"""Score a model on BFCL's AST categories with the tool-calling task's prompt format and BFCL's own checker.

Each BFCL entry (functions + a user request) is rendered exactly like a training prompt of the tool-calling task
(:func:`gdpo_trl.data.toolrl.make_prompt`: the functions and the format in the system message), the model's first
``<tool_call>`` block is parsed as in training (:func:`gdpo_trl.rewards.toolcall.parse_tool_calls`), and the calls
are judged by ``bfcl_eval``'s ``ast_checker`` against BFCL's possible answers. Nothing of the checker is
re-implemented here. :mod:`gdpo_trl.eval.bfcl_render` writes right answers from the possible answers (every entry of
the four categories has one the checker accepts; ``tests/eval/test_eval_bfcl_all.py``).

Reported per category: ``accuracy`` (share of entries the checker accepts) and ``format_rate`` (share of completions
in the exact training layout for a tool-call answer, :func:`gdpo_trl.rewards.toolcall.tool_format`). A completion
whose block cannot be parsed into ``{"name": str, "parameters": dict}`` calls is wrong (BFCL's "decoder failed").

``bfcl-eval`` pins numpy 1.26 and some thirty vendor SDKs that its AST checker never uses, so install it without
them, and in a folder of its own so that pip never sees its unmet pins (``pip check`` and every later ``pip install``
stay clean): ``pip install --no-deps --target <venv>/bfcl-eval "bfcl-eval==2026.3.23"`` (``make install`` does). That
folder (or ``$GDPO_TRL_BFCL_PATH``) goes on ``sys.path`` only here, when BFCL is used; a bfcl-eval installed into
site-packages works as well. Its checker module imports BFCL's model registry only to ask
whether a model's API renames dotted function names; when that registry cannot be imported (the SDKs are missing),
a stand-in that answers "no" for our model is registered first. Nothing else of bfcl-eval is replaced.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import types
from collections.abc import Callable, Sequence
from pathlib import Path

from gdpo_trl.core.errors import InputError
from gdpo_trl.data.toolrl import make_prompt
from gdpo_trl.rewards.toolcall import parse_tool_calls, tool_format

__all__ = [
    "CATEGORIES",
    "BFCLNotInstalledError",
    "evaluate_bfcl",
    "format_report",
    "load_category",
    "render_prompt",
    "score_completion",
]

# Our category names -> BFCL's test-category names (BFCL calls the Python "simple" category simple_python).
CATEGORIES = {
    "simple": "simple_python",
    "multiple": "multiple",
    "parallel": "parallel",
    "parallel_multiple": "parallel_multiple",
}
BFCL_VERSION = "2026.3.23"


def bfcl_dir() -> Path:
    """The folder bfcl-eval is installed into apart from site-packages: ``$GDPO_TRL_BFCL_PATH``, else
    ``<this Python's environment>/bfcl-eval`` (``.venv/bfcl-eval`` for ``make install``)."""
    return Path(os.environ.get("GDPO_TRL_BFCL_PATH") or Path(sys.prefix) / "bfcl-eval")


INSTALL_HINT = f'pip install --no-deps --target {bfcl_dir()} "bfcl-eval=={BFCL_VERSION}"'


def use_bfcl_path() -> bool:
    """Whether ``bfcl_eval`` can be imported, after putting :func:`bfcl_dir` at the end of ``sys.path`` if it is not
    importable from the environment itself."""
    if importlib.util.find_spec("bfcl_eval") is not None:
        return True
    folder = bfcl_dir()
    if not (folder / "bfcl_eval").is_dir():
        return False
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
    importlib.invalidate_caches()
    return importlib.util.find_spec("bfcl_eval") is not None


MODEL_NAME = "gdpo-trl"  # what the checker is told the model is called; no underscore (BFCL maps "_" to "/")
_TOOL_CALL_GOLD = "<tool_call>"  # any gold holding a tool call selects tool_format's tool-call-only layout

GenerateFn = Callable[[list[list[dict]]], list[str]]


class BFCLNotInstalledError(InputError, ImportError):
    """bfcl-eval cannot be imported: the user's to fix (the message says how), reported without a traceback."""


def _bfcl():
    """``(ast_checker, Language, prompt folder, possible-answer folder)`` from bfcl-eval, importing it lazily."""
    use_bfcl_path()
    try:
        from bfcl_eval.constants.eval_config import POSSIBLE_ANSWER_PATH, PROMPT_PATH
    except ImportError as err:
        raise BFCLNotInstalledError(f"BFCL evaluation needs bfcl-eval: {INSTALL_HINT} ({err})") from None
    registry = "bfcl_eval.constants.model_config"
    if registry not in sys.modules:
        try:
            __import__(registry)
        except ImportError:  # a vendor SDK is missing: the checker only needs the underscore_to_dot answer
            sys.modules[registry] = types.ModuleType(registry)
            sys.modules[registry].MODEL_CONFIG_MAPPING = {}
    sys.modules[registry].MODEL_CONFIG_MAPPING.setdefault(MODEL_NAME, types.SimpleNamespace(underscore_to_dot=False))
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    return ast_checker, Language, Path(PROMPT_PATH), Path(POSSIBLE_ANSWER_PATH)


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_category(category: str, limit: int | None = None) -> list[dict]:
    """The first ``limit`` entries of one of :data:`CATEGORIES`, each with its ``possible_answer`` attached."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown BFCL category {category!r}; choose from {list(CATEGORIES)}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1 or None, got {limit}")
    _, _, prompts, answers = _bfcl()
    from bfcl_eval.constants.category_mapping import VERSION_PREFIX  # "BFCL_v4" in the tested release

    name = f"{VERSION_PREFIX}_{CATEGORIES[category]}.json"
    entries = _read_jsonl(prompts / name)[:limit]
    possible = {row["id"]: row["ground_truth"] for row in _read_jsonl(answers / name)}
    missing = [entry["id"] for entry in entries if entry["id"] not in possible]
    if missing:
        raise ValueError(f"bfcl-eval's possible answers for {category} lack ids {missing[:5]}; reinstall bfcl-eval")
    return [{**entry, "possible_answer": possible[entry["id"]]} for entry in entries]


def render_prompt(entry: dict) -> list[dict]:
    """The training-format prompt for a single-turn BFCL entry: our system message with its functions, its turn."""
    (turn,) = entry["question"]  # the AST categories are single-turn
    *earlier, last = turn
    if earlier or last["role"] != "user":
        raise ValueError(f"BFCL entry {entry['id']}: expected one user message, got roles {[m['role'] for m in turn]}")
    return make_prompt(entry["function"], last["content"])


def _as_bfcl_calls(text: str) -> list[dict] | None:
    """The completion's calls as BFCL's ``[{name: {param: value}}]``, or ``None`` if they cannot be read."""
    calls = parse_tool_calls(text)
    if calls is None or not all(
        isinstance(c, dict) and isinstance(c.get("name"), str) and isinstance(c.get("parameters"), dict) for c in calls
    ):
        return None
    return [{call["name"]: call["parameters"]} for call in calls]


def score_completion(entry: dict, category: str, text: str) -> dict:
    """``{"id", "format", "valid", "error"}`` for one completion: training layout, and BFCL's verdict."""
    ast_checker, language, _, _ = _bfcl()
    formatted = tool_format([text], answer=[_TOOL_CALL_GOLD])[0] == 1.0
    calls = _as_bfcl_calls(text)
    if calls is None:
        return {"id": entry["id"], "format": formatted, "valid": False, "error": "no readable <tool_call> block"}
    verdict = ast_checker(
        entry["function"], calls, entry["possible_answer"], language.PYTHON, CATEGORIES[category], MODEL_NAME
    )
    error = None if verdict["valid"] else "; ".join(map(str, verdict.get("error", []))) or verdict.get("error_type")
    return {"id": entry["id"], "format": formatted, "valid": bool(verdict["valid"]), "error": error}


def _summary(rows: Sequence[dict]) -> dict:
    n = len(rows)
    return {
        "n": n,
        "accuracy": sum(r["valid"] for r in rows) / n if n else float("nan"),
        "format_rate": sum(r["format"] for r in rows) / n if n else float("nan"),
    }


def default_generate_fn(
    model: str,
    *,
    adapter: str | None = None,
    max_new_tokens: int = 512,
    batch_size: int = 16,
    dtype: str = "auto",
) -> GenerateFn:
    """Greedy generation with gdpo eval's transformers backend (the model is loaded once, on first use)."""
    from gdpo_trl.eval.backends import generate_transformers
    from gdpo_trl.eval.loading import load_transformers_model, resolve_model_spec
    from gdpo_trl.eval.settings import GenerationSettings

    settings = GenerationSettings(max_new_tokens=max_new_tokens, batch_size=batch_size)
    spec = resolve_model_spec(model, adapter)  # now: a bad model or adapter fails before BFCL's data is read
    loaded = []

    def generate(prompts: list[list[dict]]) -> list[str]:
        if not loaded:
            loaded.extend(load_transformers_model(spec, dtype))
        groups = generate_transformers(*loaded, prompts, settings, progress=False)
        return [group[0].text for group in groups]

    return generate


def evaluate_bfcl(
    model: str | None = None,
    categories: Sequence[str] = tuple(CATEGORIES),
    limit: int | None = None,
    generate_fn: GenerateFn | None = None,
    *,
    adapter: str | None = None,
    max_new_tokens: int = 512,
    batch_size: int = 16,
    dtype: str = "auto",
    output_dir: str | Path | None = None,
) -> dict:
    """Generate one greedy completion per entry of each category and score it with BFCL's AST checker.

    Args:
        model: what :func:`gdpo_trl.eval.resolve_model_spec` accepts (Hub id, folder, adapter, ``builtin:tiny``),
            with ``adapter`` on top if given; unused when ``generate_fn`` is given.
        categories: any of :data:`CATEGORIES`.
        limit: first ``limit`` entries per category.
        generate_fn: maps a list of chat prompts to one completion text each (tests pass canned completions).
        output_dir: if given, ``bfcl_summary.json`` and ``bfcl_completions.jsonl`` (every completion, its verdict)
            are written there.

    Returns ``{"categories": {name: {"n", "accuracy", "format_rate"}}, "overall": {...}}``; ``overall`` pools entries.
    """
    unknown = [c for c in categories if c not in CATEGORIES]
    if unknown or not categories:
        raise ValueError(f"unknown or no BFCL categories {unknown}; choose from {list(CATEGORIES)}")
    if generate_fn is None:
        if model is None:
            raise ValueError("evaluate_bfcl needs a model or a generate_fn")
        generate_fn = default_generate_fn(
            model, adapter=adapter, max_new_tokens=max_new_tokens, batch_size=batch_size, dtype=dtype
        )
    entries = {category: load_category(category, limit) for category in categories}  # all data before generating
    rows: dict[str, list[dict]] = {}
    for category, items in entries.items():
        texts = generate_fn([render_prompt(entry) for entry in items])
        if len(texts) != len(items):
            raise ValueError(f"generate_fn returned {len(texts)} completions for {len(items)} prompts")
        rows[category] = [
            {**score_completion(entry, category, text), "category": category, "completion": text}
            for entry, text in zip(items, texts, strict=True)
        ]
    summary = {
        "categories": {category: _summary(category_rows) for category, category_rows in rows.items()},
        "overall": _summary([row for category_rows in rows.values() for row in category_rows]),
        "model": model,
        "adapter": adapter,
        "limit": limit,
    }
    if output_dir is not None:
        out = Path(output_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "bfcl_summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        with (out / "bfcl_completions.jsonl").open("w", encoding="utf-8") as f:
            for category_rows in rows.values():
                f.writelines(json.dumps(row) + "\n" for row in category_rows)
    return summary


def format_report(summary: dict) -> str:
    """A small table: category, entries, accuracy, format rate."""
    lines = [f"{'category':<20}{'n':>6}{'accuracy':>10}{'format':>9}"]
    for name, stats in [*summary["categories"].items(), ("overall", summary["overall"])]:
        lines.append(f"{name:<20}{stats['n']:>6}{stats['accuracy']:>10.3f}{stats['format_rate']:>9.3f}")
    return "\n".join(lines)
