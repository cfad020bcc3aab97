"""What to load for an evaluation: a Hub id, ``builtin:`` model, checkpoint folder or LoRA adapter, resolved to base
weights, adapter and tokenizer (:func:`resolve_model_spec`), and loading them for ``transformers`` generation."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gdpo_trl.eval.settings import EvaluationInputError
from gdpo_trl.storage.local_paths import missing_folder_line
from gdpo_trl.storage.weight_files import model_folder_problem, nonfinite_parameter, nonfinite_weights, scannable

DTYPES = ("auto", "bfloat16", "float32")
ADAPTER_CONFIG = "adapter_config.json"


@dataclass(frozen=True)
class ModelSpec:
    """What to load: ``base`` weights (Hub id or folder), an optional LoRA ``adapter`` folder, the ``tokenizer``
    source, and ``name`` (the ``--model`` argument as given, for reports)."""

    name: str
    base: str
    adapter: str | None
    tokenizer: str
    local: bool  # whether the evaluated weights live in a user folder (decides the default output folder)


def looks_like_path(name: str) -> bool:
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
        problem = model_folder_problem(path)  # damaged weights or config: one line before loading fails inside
        if problem:
            raise EvaluationInputError(f"model {str(path)!r}: {problem}.")
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
    from gdpo_trl.core.plugins import resolve_model

    try:
        resolved = resolve_model(model)
    except ValueError as err:  # an unknown builtin: name
        raise EvaluationInputError(str(err)) from err
    builtin = resolved != model
    path = Path(resolved).expanduser()
    if not builtin and not path.exists() and looks_like_path(model):
        raise EvaluationInputError(missing_folder_line(model, "--model") or f"model path not found: {path}")

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


def nonfinite_refusal(name: str, found: str) -> str:
    return f"model {name!r}: {found} (a run that diverged, or damaged weights): evaluate an earlier checkpoint."


def check_finite_files(spec: ModelSpec) -> None:
    """NaN/inf in a local model or adapter small enough to scan before loading (they generate garbage or fail in
    sampling with a 75-line traceback); a bigger one is checked once loaded."""
    for folder in (spec.base, spec.adapter):
        if folder is not None and Path(folder).is_dir() and scannable(Path(folder)):
            if found := nonfinite_weights(Path(folder)):
                raise EvaluationInputError(nonfinite_refusal(spec.name, found))


def check_prompts_fit(spec: ModelSpec, problems, max_new_tokens: int) -> None:
    """Prompts that with ``max_new_tokens`` do not fit the model's positions, refused before the model loads, as
    ``gdpo train`` refuses them (:func:`gdpo_trl.data.prompt_fit.check_prompt_lengths`): one 100k-character prompt
    grew ``gdpo eval`` to 7.6 GB until it was killed, printing nothing. A tokenizer or config that cannot be read
    here is left to the loading, which names it."""
    from transformers import AutoTokenizer

    from gdpo_trl.core.errors import InputError
    from gdpo_trl.data.prompt_fit import check_prompt_lengths

    try:
        tokenizer = AutoTokenizer.from_pretrained(spec.tokenizer)
        check_prompt_lengths(problems, tokenizer, spec.base, max_new_tokens, "--max_new_tokens")
    except EvaluationInputError:
        raise
    except InputError as err:
        raise EvaluationInputError(f"model {spec.name!r}: {err}") from None
    except (OSError, ValueError):
        return


def load_transformers_model(spec: ModelSpec, dtype: str = "auto", device: str | None = None):
    """Load ``(model, tokenizer)`` for generation: the adapter merged into the base, eval mode, on ``device``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gdpo_trl.core.errors import no_chat_template

    device = device or _device()
    try:
        tokenizer = AutoTokenizer.from_pretrained(spec.tokenizer)
        if not getattr(tokenizer, "chat_template", None):  # every prompt is a conversation (as gdpo train says)
            raise EvaluationInputError(no_chat_template(spec.name))
        check_finite_files(spec)
        model = AutoModelForCausalLM.from_pretrained(spec.base, dtype=_torch_dtype(dtype, device))
        if spec.adapter is not None:
            from peft import PeftModel

            # Merging removes the per-layer LoRA detour, so generation runs at the base model's speed.
            model = PeftModel.from_pretrained(model, spec.adapter).merge_and_unload()
    except EvaluationInputError:
        raise
    except (OSError, ValueError) as err:  # a missing folder or file, an unreachable Hub, an unknown architecture
        raise EvaluationInputError(f"cannot load model {spec.name!r}: {err}") from err
    base = Path(spec.base)
    if base.is_dir() and not scannable(base) and (found := nonfinite_parameter(model, base)):
        raise EvaluationInputError(nonfinite_refusal(spec.name, found))
    # Left padding keeps every prompt's last token at the end of the row, where generation continues.
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model.to(device).eval(), tokenizer
