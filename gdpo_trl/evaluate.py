"""Evaluate a model, checkpoint or LoRA adapter on GSM8K-shaped data with the same prompt and rewards as training.

One call, :func:`evaluate`, resolves what to load (:func:`resolve_model_spec`), loads the problems
(:func:`load_problems`), generates ``n`` completions per problem with vLLM or ``transformers``, scores each with the
training rewards (:func:`score_problem`), reduces the per-problem rows to metrics (:func:`summarize`, a pure
function) and writes ``summary.json`` and ``completions.jsonl``.

Metrics: ``pass@1`` is the mean correctness over a problem's ``n`` samples, averaged over problems (with ``n=1`` and
greedy decoding, plain accuracy). Format and integer rates are the same average of the other two rewards. Lengths
count completion tokens up to and including the first end-of-sequence token; a completion that reached
``max_new_tokens`` without one is *truncated*.

Only the sampling settings given here are applied (temperature, top-p, ``n``): the sampling defaults a checkpoint
ships in ``generation_config.json`` (``top_k``, ``repetition_penalty``) are overridden, so both backends sample from
the same distribution and results are comparable across models.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from gdpo_trl.rewards.gsm8k import correctness_reward, format_reward, integer_reward

BACKENDS = ("auto", "transformers", "vllm")
DTYPES = ("auto", "bfloat16", "float32")
# Reward name in reports -> the training reward function that computes it.
REWARDS: dict[str, Callable] = {"format": format_reward, "correctness": correctness_reward, "integer": integer_reward}
SYNTHETIC = "synthetic"
# Seed of the synthetic problem generator unless given as ``synthetic@SEED``: fixed, so every evaluation sees the
# same problems, and unlike 0 or 42 (the usual training seeds), so they are not the problems a model was trained on.
SYNTHETIC_EVAL_SEED = 1234
SYNTHETIC_DEFAULT_SIZE = 200
ADAPTER_CONFIG = "adapter_config.json"
# vLLM allocates LoRA buffers for a maximum rank taken from this list (its LoRAConfig rejects other values).
VLLM_LORA_RANKS = (8, 16, 32, 64, 128, 256, 320, 512)


class EvaluationInputError(ValueError):
    """A bad model, adapter, dataset or generation setting: the user's to fix, reported without a traceback."""


@dataclass(frozen=True)
class GenerationSettings:
    """How completions are sampled. ``temperature == 0`` means greedy decoding, which allows only ``n == 1``."""

    n: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    max_new_tokens: int = 1024
    batch_size: int = 16
    seed: int = 0

    def __post_init__(self):
        if self.n < 1:
            raise EvaluationInputError(f"n must be >= 1, got {self.n}")
        if self.temperature < 0:
            raise EvaluationInputError(f"temperature must be >= 0, got {self.temperature}")
        if self.greedy and self.n > 1:
            # Greedy decoding returns the same completion n times: n > 1 would only cost time.
            raise EvaluationInputError(
                f"n={self.n} with greedy decoding (temperature 0) would repeat one completion; "
                "set a temperature > 0 (the paper uses 0.6 with top_p 0.95) or use n=1"
            )
        if not 0 < self.top_p <= 1:
            raise EvaluationInputError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_new_tokens < 1:
            raise EvaluationInputError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.batch_size < 1:
            raise EvaluationInputError(f"batch_size must be >= 1, got {self.batch_size}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass(frozen=True)
class ModelSpec:
    """What to load: ``base`` weights (Hub id or folder), an optional LoRA ``adapter`` folder, the ``tokenizer``
    source, and ``name`` (the ``--model`` argument as given, for reports)."""

    name: str
    base: str
    adapter: str | None
    tokenizer: str
    local: bool  # whether the evaluated weights live in a user folder (decides the default output folder)


@dataclass(frozen=True)
class Completion:
    """One generated completion: its text, its length in tokens (up to and including EOS) and whether it was cut
    off at ``max_new_tokens``."""

    text: str
    num_tokens: int
    truncated: bool


# --- what to load ----------------------------------------------------------------------------------------------


def _looks_like_path(name: str) -> bool:
    """Whether ``name`` is meant as a local path: Hub ids are ``name`` or ``org/name``, never more or ``./``.

    ``outputs/run`` has a Hub id's shape, but when a local ``outputs`` folder exists it is surely a mistyped path.
    """
    if name.startswith((".", "/", "~")) or name.count("/") > 1 or "\\" in name:
        return True
    parent = Path(name).parent
    return parent != Path(".") and parent.is_dir()


def _has_tokenizer(folder: Path) -> bool:
    return (folder / "tokenizer_config.json").is_file()


def _adapter_base(adapter: Path) -> str:
    """The base model an adapter was trained on, from its ``adapter_config.json``."""
    try:
        config = json.loads((adapter / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise EvaluationInputError(f"cannot read {adapter / ADAPTER_CONFIG}: {err}") from err
    base = config.get("base_model_name_or_path")
    if not base:
        raise EvaluationInputError(f"{adapter / ADAPTER_CONFIG} has no base_model_name_or_path; cannot find its base")
    return base


def _check_adapter(adapter: str) -> Path:
    path = Path(adapter).expanduser()
    if not path.is_dir():
        raise EvaluationInputError(f"adapter folder not found: {path}")
    if not (path / ADAPTER_CONFIG).is_file():
        raise EvaluationInputError(f"{path} is not a LoRA adapter: it has no {ADAPTER_CONFIG}")
    return path


def _check_checkpoint(path: Path) -> None:
    """Fail with a hint when ``path`` is a folder but not a loadable checkpoint (e.g. an unfinished output_dir)."""
    if (path / "config.json").is_file():
        return
    # By step number: as text, checkpoint-10 would sort before checkpoint-9.
    steps = {int(step): p for p in path.glob("checkpoint-*") if (step := p.name.partition("-")[2]).isdigit()}
    checkpoints = [steps[step] for step in sorted(steps)]
    hint = f"; its latest checkpoint is {checkpoints[-1]}" if checkpoints else ""
    raise EvaluationInputError(
        f"{path} is neither a model checkpoint (no config.json) nor a LoRA adapter (no {ADAPTER_CONFIG}){hint}"
    )


def resolve_model_spec(model: str, adapter: str | None = None) -> ModelSpec:
    """Work out which weights, adapter and tokenizer to load for ``--model`` (and ``--adapter``).

    ``model`` is a Hub id, ``builtin:tiny``, a checkpoint folder, or a LoRA adapter folder (one holding
    ``adapter_config.json``, whose ``base_model_name_or_path`` is then loaded as the base). The tokenizer comes from
    the adapter or checkpoint folder when it has one (training may have changed its chat template), else from the base.
    """
    from gdpo_trl.demo.tiny import resolve_model

    try:
        resolved = resolve_model(model)
    except ValueError as err:  # an unknown builtin: name
        raise EvaluationInputError(str(err)) from err
    builtin = resolved != model
    path = Path(resolved).expanduser()
    if not builtin and not path.exists() and _looks_like_path(model):
        raise EvaluationInputError(f"model path not found: {path}")

    if path.is_dir() and (path / ADAPTER_CONFIG).is_file():
        if adapter is not None:
            raise EvaluationInputError(f"--model {model} is itself a LoRA adapter; do not also pass --adapter")
        adapter = model
        base = resolve_model(_adapter_base(path))
    else:
        if path.is_dir():
            _check_checkpoint(path)
        base = str(path) if path.is_dir() else resolved

    adapter_path = _check_adapter(adapter) if adapter is not None else None
    tokenizer = str(adapter_path) if adapter_path is not None and _has_tokenizer(adapter_path) else base
    local = adapter_path is not None or (path.is_dir() and not builtin)
    return ModelSpec(model, base, str(adapter_path) if adapter_path else None, tokenizer, local)


# --- data ------------------------------------------------------------------------------------------------------


def _synthetic_seed(dataset: str) -> int | None:
    """The generator seed for ``synthetic`` / ``synthetic@SEED``, or None for any other dataset."""
    name, _, seed = dataset.partition("@")
    if name != SYNTHETIC:
        return None
    if not seed:
        return SYNTHETIC_EVAL_SEED
    try:
        return int(seed)
    except ValueError:
        raise EvaluationInputError(
            f"bad synthetic seed in {dataset!r}: use 'synthetic' or 'synthetic@<int>'"
        ) from None


def load_problems(dataset: str, split: str, limit: int | None = None):
    """Load problems as a ``datasets.Dataset`` with ``prompt`` (chat messages) and ``answer`` (gold) columns.

    ``dataset`` is a Hub id, a local ``.json``/``.jsonl``/``.parquet`` file or dataset folder, ``"sample"`` (the
    shipped sample) or ``"synthetic"``/``"synthetic@SEED"`` (``limit`` problems, default
    :data:`SYNTHETIC_DEFAULT_SIZE`). Loader errors (missing file or column, unreachable Hub) become
    :class:`EvaluationInputError`.
    """
    from gdpo_trl.data import load_gsm8k
    from gdpo_trl.demo.synthetic import load_synthetic

    if limit is not None and limit < 1:
        raise EvaluationInputError(f"limit must be >= 1, got {limit}")
    seed = _synthetic_seed(dataset)
    try:
        if seed is not None:
            return load_synthetic(limit or SYNTHETIC_DEFAULT_SIZE, seed)
        return load_gsm8k(dataset, split, limit=limit)
    except (OSError, ValueError) as err:  # OSError covers FileNotFoundError and an unreachable Hub
        raise EvaluationInputError(f"cannot load dataset {dataset!r}: {err}") from err


# --- generation ------------------------------------------------------------------------------------------------


def vllm_available() -> bool:
    """Whether vLLM is installed, checked without importing it (the import takes seconds and grabs the GPU)."""
    return importlib.util.find_spec("vllm") is not None


def choose_backend(backend: str) -> str:
    """Resolve ``auto`` to ``vllm`` when vLLM is installed and a GPU is present, else ``transformers``."""
    import torch

    if backend not in BACKENDS:
        raise EvaluationInputError(f"unknown backend {backend!r}; choose one of {list(BACKENDS)}")
    if backend == "vllm" and not vllm_available():
        raise EvaluationInputError("--backend vllm needs vLLM: pip install 'gdpo-trl[vllm]'")
    if backend == "auto":
        return "vllm" if vllm_available() and torch.cuda.is_available() else "transformers"
    return backend


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _torch_dtype(dtype: str, device: str):
    """``auto`` keeps the checkpoint's dtype on GPU but uses float32 on CPU, where bfloat16 matmuls are slow."""
    import torch

    if dtype not in DTYPES:
        raise EvaluationInputError(f"unknown dtype {dtype!r}; choose one of {list(DTYPES)}")
    if dtype == "auto":
        return "auto" if device == "cuda" else torch.float32
    return getattr(torch, dtype)


def load_transformers_model(spec: ModelSpec, dtype: str = "auto", device: str | None = None):
    """Load ``(model, tokenizer)`` for generation: the adapter merged into the base, eval mode, on ``device``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = device or _device()
    try:
        tokenizer = AutoTokenizer.from_pretrained(spec.tokenizer)
        model = AutoModelForCausalLM.from_pretrained(spec.base, dtype=_torch_dtype(dtype, device))
        if spec.adapter is not None:
            from peft import PeftModel

            # Merging removes the per-layer LoRA detour, so generation runs at the base model's speed.
            model = PeftModel.from_pretrained(model, spec.adapter).merge_and_unload()
    except (OSError, ValueError) as err:  # a missing folder or file, an unreachable Hub, an unknown architecture
        raise EvaluationInputError(f"cannot load model {spec.name!r}: {err}") from err
    # Left padding keeps every prompt's last token at the end of the row, where generation continues.
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model.to(device).eval(), tokenizer


def _eos_ids(model, tokenizer) -> set[int]:
    """Every token id that ends generation: the model's generation config may list several (Qwen2.5 lists two)."""
    ids = model.generation_config.eos_token_id
    ids = set(ids if isinstance(ids, list) else [] if ids is None else [ids])
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return ids


def _generation_config(settings: GenerationSettings, tokenizer, eos_ids: set[int]):
    from transformers import GenerationConfig

    # top_k explicitly off when sampling: otherwise a checkpoint's generation_config.json (or transformers' top_k=50
    # default) would add a filter that the vLLM backend and the paper's protocol do not apply.
    sampling = {} if settings.greedy else {"temperature": settings.temperature, "top_p": settings.top_p, "top_k": 0}
    return GenerationConfig(
        do_sample=not settings.greedy,
        max_new_tokens=settings.max_new_tokens,
        num_return_sequences=settings.n,
        repetition_penalty=1.0,  # likewise: Qwen2.5's generation_config.json sets 1.05
        eos_token_id=sorted(eos_ids),
        pad_token_id=tokenizer.pad_token_id,
        **sampling,
    )


def completion_length(token_ids: Sequence[int], eos_ids: set[int]) -> tuple[int, bool]:
    """``(length, truncated)``: tokens up to and including the first EOS; truncated when there is no EOS."""
    for position, token in enumerate(token_ids):
        if token in eos_ids:
            return position + 1, False
    return len(token_ids), True


def _batches(items: Sequence, size: int) -> list[Sequence]:
    return [items[start : start + size] for start in range(0, len(items), size)]


def generate_transformers(
    model, tokenizer, prompts: Sequence[list[dict]], settings: GenerationSettings, progress: bool = True
) -> list[list[Completion]]:
    """Generate ``settings.n`` completions per chat prompt with ``model.generate``, in batches of prompts."""
    import torch
    from tqdm.auto import tqdm
    from transformers import set_seed

    eos_ids = _eos_ids(model, tokenizer)
    config = _generation_config(settings, tokenizer, eos_ids)
    set_seed(settings.seed)  # once, so a run is reproducible for a given batch size
    results: list[list[Completion]] = []
    for batch in tqdm(_batches(prompts, settings.batch_size), desc="generating", unit="batch", disable=not progress):
        texts = [tokenizer.apply_chat_template(p, add_generation_prompt=True, tokenize=False) for p in batch]
        # The chat template already holds any BOS token; the tokenizer must not add a second one.
        inputs = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
        with torch.inference_mode():
            output = model.generate(**inputs, generation_config=config)
        new_tokens = output[:, inputs["input_ids"].shape[1] :].tolist()
        completions = [_decode(tokenizer, tokens, eos_ids) for tokens in new_tokens]
        # generate returns each prompt's n sequences next to each other.
        results.extend(_batches(completions, settings.n))
    return [list(group) for group in results]


def _decode(tokenizer, tokens: list[int], eos_ids: set[int]) -> Completion:
    # Decode only up to the first EOS: what follows is padding, which need not be a special token.
    length, truncated = completion_length(tokens, eos_ids)
    return Completion(tokenizer.decode(tokens[:length], skip_special_tokens=True), length, truncated)


def _vllm_max_lora_rank(adapter: str) -> int:
    rank = json.loads((Path(adapter) / ADAPTER_CONFIG).read_text(encoding="utf-8")).get("r", 8)
    fitting = [r for r in VLLM_LORA_RANKS if r >= rank]
    if not fitting:
        raise EvaluationInputError(f"LoRA rank {rank} exceeds vLLM's maximum {VLLM_LORA_RANKS[-1]}")
    return fitting[0]


def generate_vllm(
    spec: ModelSpec, prompts: Sequence[list[dict]], settings: GenerationSettings, dtype: str = "auto"
) -> list[list[Completion]]:
    """Generate with vLLM's offline ``LLM.chat``, serving a LoRA adapter through a ``LoRARequest``.

    Untested in this package's CI (no GPU, vLLM not installed there): written against vLLM's documented API
    (``LLM(model=, tokenizer=, dtype=, seed=, enable_lora=, max_lora_rank=)``, ``SamplingParams(n=, temperature=,
    top_p=, max_tokens=, seed=)``, ``LLM.chat(conversations, sampling_params, lora_request=)`` returning one
    ``RequestOutput`` per conversation whose ``outputs`` hold ``text``, ``token_ids`` and ``finish_reason``).
    vLLM batches by itself, so ``batch_size`` is not used. vLLM's LoRA support does not cover every PEFT option
    (e.g. ``modules_to_save``); merge such adapters, or use ``--backend transformers``.
    """
    from vllm import LLM, SamplingParams
    from vllm.lora.request import LoRARequest

    engine_args = {"model": spec.base, "tokenizer": spec.tokenizer, "dtype": dtype, "seed": settings.seed}
    if spec.adapter is not None:
        engine_args.update(enable_lora=True, max_lora_rank=_vllm_max_lora_rank(spec.adapter))
    llm = LLM(**engine_args)
    params = SamplingParams(
        n=settings.n,
        temperature=settings.temperature,
        top_p=settings.top_p,
        max_tokens=settings.max_new_tokens,
        seed=settings.seed,
    )
    lora = LoRARequest("adapter", 1, spec.adapter) if spec.adapter is not None else None
    outputs = llm.chat(list(prompts), params, lora_request=lora, use_tqdm=True)
    # token_ids include the EOS token that stopped a sequence; finish_reason "length" means max_tokens was hit.
    return [
        [Completion(o.text, len(o.token_ids), o.finish_reason == "length") for o in request.outputs]
        for request in outputs
    ]


# --- scoring ---------------------------------------------------------------------------------------------------


def score_problem(index: int, prompt: list[dict], answer: str, completions: Sequence[Completion]) -> dict:
    """One ``completions.jsonl`` row: the problem, its completions and each completion's rewards and length."""
    texts = [c.text for c in completions]
    by_reward = {name: func(texts, answer=[answer] * len(texts)) for name, func in REWARDS.items()}
    return {
        "index": index,
        "question": prompt[-1]["content"],
        "answer": answer,
        "completions": texts,
        "rewards": [{name: by_reward[name][i] for name in REWARDS} for i in range(len(texts))],
        "num_tokens": [c.num_tokens for c in completions],
        "truncated": [c.truncated for c in completions],
    }


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


def _per_problem_mean(rows: Sequence[dict], value: Callable[[dict, int], float]) -> float:
    """Mean over problems of the mean over each problem's samples, so every problem weighs the same."""
    return _mean(_mean(value(row, i) for i in range(len(row["completions"]))) for row in rows)


def summarize(rows: Sequence[dict]) -> dict:
    """Reduce ``completions.jsonl`` rows (from :func:`score_problem`) to the reported metrics.

    Every metric is averaged within a problem first, then over problems; when all problems have the same number of
    samples this equals the plain mean over samples. Raises ``ValueError`` for no rows or a row without samples.
    """
    if not rows:
        raise ValueError("no problems to summarize")
    if any(not row["completions"] for row in rows):
        raise ValueError("every problem needs at least one completion")
    return {
        "pass@1": _per_problem_mean(rows, lambda row, i: row["rewards"][i]["correctness"]),
        "format_rate": _per_problem_mean(rows, lambda row, i: row["rewards"][i]["format"]),
        "integer_rate": _per_problem_mean(rows, lambda row, i: row["rewards"][i]["integer"]),
        "mean_completion_tokens": _per_problem_mean(rows, lambda row, i: row["num_tokens"][i]),
        "truncated_fraction": _per_problem_mean(rows, lambda row, i: float(row["truncated"][i])),
        "num_problems": len(rows),
        "num_samples": sum(len(row["completions"]) for row in rows),
    }


# --- output ----------------------------------------------------------------------------------------------------


def _slug(text: str) -> str:
    """A folder-name-safe version of a model or dataset name (Hub ``org/name`` becomes ``org--name``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text.replace("/", "--")).strip("-.") or "model"


def _dataset_tag(dataset: str) -> str:
    if dataset == "sample" or dataset.startswith(SYNTHETIC):
        return _slug(dataset)
    if _looks_like_path(dataset) or Path(dataset).suffix:
        return _slug(Path(dataset).stem)  # a local file: its name without the folders
    return _slug(dataset.rpartition("/")[2])  # a Hub id: "openai/gsm8k" -> "gsm8k"


def default_output_dir(spec: ModelSpec, dataset: str, split: str, settings: GenerationSettings, limit=None) -> Path:
    """``<model or adapter folder>/eval-<dataset>-<split>`` for local weights, else ``eval-outputs/<model>-...``.

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
    return Path("eval-outputs") / f"{_slug(spec.name)}-{tag.removeprefix('eval-')}"


def write_outputs(output_dir: Path, summary: dict, rows: Sequence[dict]) -> None:
    """Write ``summary.json`` and ``completions.jsonl`` (one row per problem) into ``output_dir``."""
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    with open(output_dir / "completions.jsonl", "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def format_summary(summary: dict) -> str:
    """A short human-readable report of a summary from :func:`evaluate`."""
    metrics, gen, model = summary["metrics"], summary["generation"], summary["model"]
    decoding = "greedy" if gen["temperature"] == 0 else f"temperature {gen['temperature']:g}, top_p {gen['top_p']:g}"
    lines = [
        f"model:      {model['model']}" + (f" + adapter {model['adapter']}" if model["adapter"] else ""),
        f"data:       {summary['data']['dataset']} ({summary['data']['split']}), {metrics['num_problems']} problems"
        f" x {gen['n']} samples, {decoding}, max_new_tokens {gen['max_new_tokens']}, backend {gen['backend']}",
        f"pass@1:     {metrics['pass@1']:.4f}",
        f"format:     {metrics['format_rate']:.4f}",
        f"integer:    {metrics['integer_rate']:.4f}",
        f"length:     {metrics['mean_completion_tokens']:.1f} tokens (truncated {metrics['truncated_fraction']:.1%})",
        f"time:       {summary['wall_time_s']:.1f} s (generation {summary['generation_time_s']:.1f} s)",
        f"written to: {summary['output_dir']}",
    ]
    return "\n".join(lines)


# --- the whole evaluation --------------------------------------------------------------------------------------


def _generate(spec, prompts, settings, backend: str, dtype: str, progress: bool) -> tuple[list, str]:
    """Run the chosen backend; return the completions per prompt and the device used."""
    if backend == "vllm":
        return generate_vllm(spec, prompts, settings, dtype), "cuda"
    model, tokenizer = load_transformers_model(spec, dtype)
    return generate_transformers(model, tokenizer, prompts, settings, progress), str(model.device)


def evaluate(
    model: str,
    *,
    adapter: str | None = None,
    dataset: str = "openai/gsm8k",
    split: str = "test",
    limit: int | None = None,
    n: int = 1,
    temperature: float = 0.0,
    top_p: float = 1.0,
    max_new_tokens: int = 1024,
    batch_size: int = 16,
    backend: str = "auto",
    seed: int = 0,
    output_dir: str | os.PathLike | None = None,
    dtype: str = "auto",
    progress: bool = True,
) -> dict:
    """Evaluate ``model`` (and ``adapter``) on ``dataset`` and return the summary that is written to
    ``output_dir/summary.json``; ``completions.jsonl`` beside it holds every completion with its rewards.

    Arguments mirror ``gdpo-eval`` (see :mod:`gdpo_trl.cli.evaluate`). Raises :class:`EvaluationInputError` for a
    bad setting, model, adapter or dataset, before any generation starts.
    """
    start = time.perf_counter()
    settings = GenerationSettings(n, temperature, top_p, max_new_tokens, batch_size, seed)
    if dtype not in DTYPES:
        raise EvaluationInputError(f"unknown dtype {dtype!r}; choose one of {list(DTYPES)}")
    backend = choose_backend(backend)
    spec = resolve_model_spec(model, adapter)
    problems = load_problems(dataset, split, limit)  # before the model: a bad dataset fails in a second

    generation_start = time.perf_counter()
    completions, device = _generate(spec, problems["prompt"], settings, backend, dtype, progress)
    generation_time = time.perf_counter() - generation_start

    rows = [
        score_problem(i, prompt, answer, group)
        for i, (prompt, answer, group) in enumerate(
            zip(problems["prompt"], problems["answer"], completions, strict=True)
        )
    ]
    out = Path(output_dir) if output_dir is not None else default_output_dir(spec, dataset, split, settings, limit)
    summary = {
        "metrics": summarize(rows),
        "generation": {**asdict(settings), "backend": backend, "dtype": dtype, "device": device},
        "model": {"model": spec.name, "base_model": spec.base, "adapter": spec.adapter, "tokenizer": spec.tokenizer},
        "data": {"dataset": dataset, "split": split, "limit": limit},
        "wall_time_s": time.perf_counter() - start,
        "generation_time_s": generation_time,
        "output_dir": str(out),
    }
    write_outputs(out, summary, rows)
    return summary
