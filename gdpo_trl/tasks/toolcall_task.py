"""An offline tool-calling task for the CPU: generated requests for a few small tools, and a warm-start policy.

The task mirrors the paper's tool-calling experiment at toy scale: the same output format and the same two rewards
(:func:`gdpo_trl.rewards.toolcall.tool_format` in {0, 1} and :func:`~gdpo_trl.rewards.toolcall.tool_correctness` in
[-3, 3]), so the correctness reward's range is six times the format reward's, which is where GDPO's per-reward
normalization matters. Requests are short and templated (``weather in Oslo in C``, ``add 12 and 7``, ``time in Rome
and Lima``, ``thanks``) so that a character-level model can copy the values; the gold answer of each is computed here
(and recomputed independently in the tests).

The warm start is the ``mini`` model of :mod:`gdpo_trl.models.tiny` trained with TRL's ``SFTTrainer`` (the settings of
:mod:`gdpo_trl.tasks.warmstart`) on traces with imperfections drawn on purpose: a broken layout half of the time, a wrong
call half of the time (a wrong value, a missing parameter, a wrong tool, unreadable JSON, a call too few or too
many), so that sampled at temperature 1 it starts mid-range on both rewards.
``python -m gdpo_trl.tasks.toolcall_task PATH [--seed N]`` builds it; ``resolve_model("builtin:toolcall_warmstart")``
(:mod:`gdpo_trl.models.tiny`) builds it once and caches it next to the other built-in models.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gdpo_trl.rewards.toolcall import tool_correctness, tool_format
from gdpo_trl.tasks.splits import draw_split

if TYPE_CHECKING:
    import datasets

TOOL_TAGS = ["<tool_call>", "</tool_call>", "<response>", "</response>"]
CITIES = ("Oslo", "Rome", "Lima", "Kyiv", "Bern", "Doha", "Rio", "Nice")
TOOLS = ("weather(city,unit)", "time(city)", "add(a,b)", "alarm(h)", "news()")
# The tools only: the character-level model reads every character of the prompt at every step (this one is a third
# of a prompt that also spelled out the format), and the warm start's SFT teaches the format.
SYSTEM_PROMPT = "tools: " + " ".join(TOOLS)
CHAT_REPLY = "ok"
# Request kinds and how often each is drawn.
KINDS = {"weather": 3, "time": 2, "add": 3, "alarm": 2, "news": 1, "two_times": 2, "chat": 1}


def make_request(kind: str, rng: random.Random) -> tuple[str, list[tuple[str, dict]]]:
    """One request of ``kind`` and its gold calls ``[(tool, parameters)]`` (empty for a chat request)."""
    if kind == "weather":
        city, unit = rng.choice(CITIES), rng.choice("CF")
        return f"weather in {city} in {unit}", [("weather", {"city": city, "unit": unit})]
    if kind == "time":
        city = rng.choice(CITIES)
        return f"time in {city}", [("time", {"city": city})]
    if kind == "add":
        a, b = rng.randint(1, 99), rng.randint(1, 99)
        return f"add {a} and {b}", [("add", {"a": a, "b": b})]
    if kind == "alarm":
        h = rng.randint(1, 12)
        return f"alarm at {h}", [("alarm", {"h": h})]
    if kind == "news":
        return rng.choice(("news please", "any news?")), [("news", {})]
    if kind == "two_times":
        first, second = rng.sample(CITIES, 2)
        return f"time in {first} and {second}", [("time", {"city": first}), ("time", {"city": second})]
    if kind == "chat":
        return rng.choice(("thanks", "hello", "bye")), []
    raise ValueError(f"unknown request kind {kind!r}; choose from {list(KINDS)}")


def render(calls: list[tuple[str, dict]], *, think: str | None = None) -> str:
    """The well-formed completion for ``calls``: a short ``<think>``, then the tool_call block or the reply."""
    think = think if think is not None else ",".join(name for name, _ in calls) or "chat"
    if not calls:
        return f"<think>{think}</think>\n<response>{CHAT_REPLY}</response>"
    lines = "\n".join(json.dumps({"name": name, "parameters": params}) for name, params in calls)
    return f"<think>{think}</think>\n<tool_call>\n{lines}\n</tool_call>"


def make_prompt(request: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": request}]


def generate_requests(n: int, seed: int = 0, split: str = "train") -> list[dict]:
    """``n`` rows ``{"request", "kind", "calls"}`` from the ``"train"`` or ``"eval"`` split (disjoint by content)."""
    kinds, weights = zip(*KINDS.items(), strict=True)

    def draw(rng: random.Random) -> dict:
        kind = rng.choices(kinds, weights)[0]
        request, calls = make_request(kind, rng)
        return {"request": request, "kind": kind, "calls": calls}

    return draw_split("toolcall", n, seed, split, draw, key=lambda row: row["request"])


def load_toolcall_task(n: int, seed: int = 0, split: str = "eval") -> datasets.Dataset:
    """``n`` requests as a ``datasets.Dataset`` with ``prompt`` and ``answer`` (the gold completion), for RL.

    The ``"eval"`` split (the default) holds requests the warm start's SFT never saw.
    """
    import datasets

    rows = generate_requests(n, seed, split)
    return datasets.Dataset.from_dict(
        {"prompt": [make_prompt(r["request"]) for r in rows], "answer": [render(r["calls"]) for r in rows]}
    )


# --- the warm start's flawed traces ----------------------------------------------------------------------------

FORMAT_BREAKS = ("no_think_tags", "no_newline", "text_after", "inline_block")
CALL_ERRORS = ("wrong_value", "missing_param", "wrong_name", "bad_json", "call_count")


@dataclass(frozen=True)
class ToolcallRecipe:
    """Everything besides the seed that determines the tool-call warm start's weights."""

    architecture: str = "mini"
    steps: int = 400
    batch_size: int = 16
    learning_rate: float = 3e-3
    lr_scheduler_type: str = "cosine"
    warmup_steps: int = 20  # a twentieth of the steps, the schedule these settings were tuned with
    broken_format: float = 0.5
    call_error: float = 0.5


def _wrong_value(value, rng: random.Random):
    if isinstance(value, int):
        return value + rng.choice((1, 2, 3))
    if value in ("C", "F"):
        return "F" if value == "C" else "C"
    return rng.choice([c for c in CITIES if c != value])


def _break_calls(calls: list[tuple[str, dict]], error: str, rng: random.Random) -> list[tuple[str, dict]]:
    calls = [(name, dict(params)) for name, params in calls]
    name, params = calls[0]
    if error == "wrong_value" and params:
        key = rng.choice(sorted(params))
        params[key] = _wrong_value(params[key], rng)
    elif error in ("wrong_value", "missing_param") and not params:
        params["x"] = 1  # a parameter the tool does not have
    elif error == "missing_param":
        del params[rng.choice(sorted(params))]
    elif error == "wrong_name":
        calls[0] = (rng.choice([t.split("(")[0] for t in TOOLS if not t.startswith(name + "(")]), params)
    elif error == "call_count":
        calls = calls[:-1] if len(calls) > 1 else calls * 2
    return calls


def make_trace(row: dict, rng: random.Random, recipe: ToolcallRecipe | None = None) -> tuple[str, dict]:
    """A completion for ``row`` with a layout break and a call error drawn from ``recipe``, and which were drawn."""
    recipe = recipe or ToolcallRecipe()
    layout = rng.choice(FORMAT_BREAKS) if rng.random() < recipe.broken_format else None
    error = rng.choice(CALL_ERRORS) if row["calls"] and rng.random() < recipe.call_error else None
    calls = _break_calls(row["calls"], error, rng) if error else row["calls"]
    text = render(calls)
    if error == "bad_json":
        text = text.replace('"', "'")
    if layout == "no_think_tags":
        text = text.replace("<think>", "").replace("</think>", "")
    elif layout == "no_newline":
        text = text.replace("</think>\n", "</think>", 1)
    elif layout == "inline_block" and calls:
        text = text.replace("<tool_call>\n", "<tool_call>").replace("\n</tool_call>", "</tool_call>")
    elif layout is not None:
        text += "\ndone"
    return text, {"layout": layout, "error": error}


def sft_dataset(n: int, seed: int = 0, recipe: ToolcallRecipe | None = None) -> datasets.Dataset:
    """``n`` prompt/completion pairs (the RL prompt, one flawed trace) from the train split, for ``SFTTrainer``."""
    import datasets

    rows = generate_requests(n, seed, "train")
    rng = random.Random(seed)
    traces = [make_trace(row, rng, recipe)[0] for row in rows]
    return datasets.Dataset.from_dict(
        {
            "prompt": [make_prompt(row["request"]) for row in rows],
            "completion": [[{"role": "assistant", "content": trace}] for trace in traces],
        }
    )


def build_toolcall_warmstart(path: str | Path, seed: int = 0, recipe: ToolcallRecipe | None = None) -> Path:
    """SFT the ``mini`` model (with the four tool tags as single tokens) on flawed traces; save it to ``path``."""
    import torch
    from trl import SFTTrainer

    from gdpo_trl.models.tiny import build_model, build_tokenizer
    from gdpo_trl.tasks.sft import sft_config

    start = time.perf_counter()
    recipe = recipe or ToolcallRecipe()
    torch.manual_seed(seed)
    tokenizer = build_tokenizer()
    tokenizer.add_tokens(TOOL_TAGS)  # like the <think>/<answer> tags: ordinary tokens, kept when decoding
    model = build_model(tokenizer, recipe.architecture, seed)
    dataset = sft_dataset(recipe.steps * recipe.batch_size, seed, recipe)
    with tempfile.TemporaryDirectory() as scratch:
        args = sft_config(scratch, seed, recipe)
        SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer).train()
    path = Path(path)
    for part in (model, tokenizer, model.generation_config):
        part.save_pretrained(path)
    record = {"seed": seed, "recipe": asdict(recipe), "build_seconds": round(time.perf_counter() - start, 1)}
    (path / "warmstart.json").write_text(json.dumps(record, indent=2) + "\n")
    return path


def measure_rewards(model_path: str, num_prompts: int = 64, num_samples: int = 4, seed: int = 0) -> dict:
    """Mean ``tool_format`` and ``tool_correctness`` of samples at temperature 1 on held-out requests."""
    from gdpo_trl.eval import GenerationSettings, load_transformers_model, resolve_model_spec
    from gdpo_trl.eval.backends import generate_transformers

    data = load_toolcall_task(num_prompts, seed, "eval")
    settings = GenerationSettings(n=num_samples, temperature=1.0, max_new_tokens=160, batch_size=32, seed=seed)
    model, tokenizer = load_transformers_model(resolve_model_spec(model_path), device="cpu")
    groups = generate_transformers(model, tokenizer, data["prompt"], settings, progress=False)
    texts = [c.text for group in groups for c in group]
    golds = [gold for gold in data["answer"] for _ in range(num_samples)]
    n = len(texts)
    return {
        "tool_format": sum(tool_format(texts, answer=golds)) / n,
        "tool_correctness": sum(tool_correctness(texts, answer=golds)) / n,
        "clipped": sum(c.truncated for group in groups for c in group) / n,
    }


def main(argv: list[str] | None = None) -> None:
    from gdpo_trl.models.build_cli import build_parser, start_build

    parser = build_parser("Build the tool-call warm start into PATH.")
    parser.add_argument("--measure", action="store_true", help="print the starting rewards after building")
    args = parser.parse_args(argv)
    start_build(args, "tool-call warm start: loading TRL (about 10 s), then SFT with a progress bar")
    steps = {} if args.steps is None else {"steps": args.steps, "warmup_steps": max(1, args.steps // 20)}
    recipe = ToolcallRecipe(**steps)
    build_toolcall_warmstart(args.path, args.seed, recipe)
    if args.measure:
        print(json.dumps(measure_rewards(str(args.path), seed=args.seed)))


if __name__ == "__main__":
    main()
